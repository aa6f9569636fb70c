/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-call.h - the Session1 methods libvgicd calls, and the one
 * function that calls them.  Each transport maps a VgicdCall to its own
 * terms beside its own code: the step channel to a packet's method
 * (vgicd-client-channel.c), D-Bus to a method name.
 */
#pragma once

#include <glib.h>

#include "libvgicd.h"

/* Session1's methods (data/org.vgicd.Helper1.xml), as libvgicd calls them. */
typedef enum {
  VGICD_CALL_SAVE,		/* "()" */
  VGICD_CALL_LOAD,		/* "(ay)": the record in the message */
  VGICD_CALL_LOAD_WINDOW,	/* "(u)": the record's size, in the window */
  VGICD_CALL_SAVE_FIELDS,	/* "()" */
  VGICD_CALL_LOAD_LIST,		/* "(u)": QEMU's writes, in the window */
  VGICD_CALL_NEXT,		/* "(a{sv})": the report of a step */
} VgicdCall;

/**
 * vgicd_client_call() - one Session1 call, through the step channel when
 * there is one and it carries @method, else by D-Bus; its wait for vgicd
 * comes out of the client's wait budget, which save and load set
 * @args: floating, or NULL for "()"; consumed either way
 * Return: the step, or NULL with @error set.
 */
GVariant *vgicd_client_call (VgicdClient *c, VgicdCall method, GVariant *args,
                             GError **error);
