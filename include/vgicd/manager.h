/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * manager.h - where the operator API, org.vgicd.Manager1, is on the system
 * bus: its bus name, object path and interface.  vgicd serves it there
 * (daemon/vgicd-manager.c) and vgicctl calls it there, so both build
 * against these names and cannot disagree; data/org.vgicd.Manager1.xml
 * defines the interface itself, docs/operations.md documents it.
 */
#pragma once

#define VGICD_MANAGER_NAME "org.vgicd.Manager1"
#define VGICD_MANAGER_PATH "/org/vgicd/Manager1"
#define VGICD_MANAGER_INTERFACE "org.vgicd.Manager1"
