/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-manager.h - org.vgicd.Manager1, the operator API on the system bus
 * (data/org.vgicd.Manager1.xml; vgicctl is its client).
 */
#pragma once

#include <gio/gio.h>

#include "vgicd-daemon.h"
#include "vgicd/manager.h"	/* its bus name, object path, interface */

typedef struct _VgicdManager VgicdManager;

/**
 * vgicd_manager_new() - export /org/vgicd/Manager1 and own org.vgicd.Manager1
 * @daemon: the state shown; it must outlive the manager.  Its changed hook is
 *	set so that changes of the properties emit PropertiesChanged.
 * @system_bus: the connection to export on
 * @error: set when the object cannot be exported or the name cannot be owned
 *	(already owned, or the bus policy forbids it: the message says which)
 *
 * The name is requested synchronously, so on return vgicd either owns it or
 * knows why not.
 *
 * Return: the manager, or NULL with @error set.
 */
VgicdManager *vgicd_manager_new (VgicdDaemon *daemon, GDBusConnection *system_bus,
                                 GError **error);

/**
 * vgicd_manager_free() - unexport, release the name and unhook from the
 * daemon; calls in flight are answered with an error
 */
void vgicd_manager_free (VgicdManager *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdManager, vgicd_manager_free)
