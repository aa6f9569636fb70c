/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-error.h - the errors of the vGIC core: the VGICD_ERROR domain and
 * its codes.  Every file of vgic/ that fails with a GError uses it, and
 * vgicd passes its codes on (an impossible shape at Attach, a host limit).
 */
#pragma once

#include <glib.h>

#define VGICD_ERROR (vgicd_error_quark ())
GQuark vgicd_error_quark (void);

/* Error codes in the VGICD_ERROR domain. */
typedef enum {
  VGICD_ERROR_INVALID_SHAPE,	/* the VM shape is impossible */
  VGICD_ERROR_SHAPE_MISMATCH,	/* record and VM differ in shape */
  VGICD_ERROR_BAD_RECORD,	/* malformed state record */
  VGICD_ERROR_UNSUPPORTED,	/* record version / flags unknown */
  VGICD_ERROR_REGISTER_SET,	/* missing / duplicate / unexpected register */
  VGICD_ERROR_KERNEL,		/* the kernel's answers do not fit */
  VGICD_ERROR_FAILED,		/* anything else */
  VGICD_ERROR_LIMIT,		/* over a limit of the host's configuration */
} VgicdError;
