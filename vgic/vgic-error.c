/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-error.c - the VGICD_ERROR domain (vgic-error.h).
 */
#include "vgic-error.h"

G_DEFINE_QUARK (vgicd-error-quark, vgicd_error)
