/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-error.c - libvgicd's error domain, VGICD_CLIENT_ERROR
 * (libvgicd.h says what each code asks of the caller).  Every part of the
 * library sets it, so it sits below them all.
 */
#include "libvgicd.h"

G_DEFINE_QUARK (vgicd-client-error-quark, vgicd_client_error)
