/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* PLACEHOLDER: replaced by the record work. */
#include "vgic-record.h"
void vgic_record_free (VgicRecord *r) { if (r) { vgic_shape_free (r->shape); vgic_values_free (r->values); g_free (r); } }
GBytes *vgic_record_encode (const VgicShape *s, const struct kvm_vgic_batch_entry *e, gsize n, GError **error)
{ (void) s; (void) e; (void) n; g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "not implemented"); return NULL; }
VgicRecord *vgic_record_decode (const guint8 *d, gsize l, GError **error)
{ (void) d; (void) l; g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "not implemented"); return NULL; }
VgicRecord *vgic_record_load (const guint8 *d, gsize l, const VgicShape *vm, GError **error)
{ (void) vm; return vgic_record_decode (d, l, error); }
