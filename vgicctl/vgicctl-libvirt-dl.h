/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-libvirt-dl.h - libvirt's client library, loaded when `vgicctl
 * enable|disable` runs instead of linked, so that the vgicd package does
 * not depend on libvirt0 on hosts without libvirt (a vgicd host driven by
 * another QEMU manager, or a build host).
 *
 * Theory of operation: the ten libvirt functions vgicctl-libvirt.c calls
 * are pointers in one table, filled by dlopen(3)/dlsym(3) of libvirt's
 * stable soname; the macros below give each pointer its libvirt name, so
 * that the calls read as libvirt's API and the compiler checks them
 * against libvirt's own prototypes (each pointer is __typeof__ the
 * function).  Include this after <libvirt/libvirt.h>, in that one file.
 */
#pragma once

#include <glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/* libvirt's client library: its soname has been libvirt.so.0 since 0.x. */
#define VGICCTL_LIBVIRT_SONAME "libvirt.so.0"

typedef struct {
  __typeof__ (virConnectOpen) *ConnectOpen;
  __typeof__ (virConnectClose) *ConnectClose;
  __typeof__ (virDomainLookupByName) *DomainLookupByName;
  __typeof__ (virDomainGetXMLDesc) *DomainGetXMLDesc;
  __typeof__ (virDomainDefineXML) *DomainDefineXML;
  __typeof__ (virDomainIsActive) *DomainIsActive;
  __typeof__ (virDomainSetMetadata) *DomainSetMetadata;
  __typeof__ (virDomainFree) *DomainFree;
  __typeof__ (virGetLastError) *GetLastError;
  __typeof__ (virSetErrorFunc) *SetErrorFunc;
} VgicctlLibvirt;

extern VgicctlLibvirt vgicctl_libvirt;

/**
 * vgicctl_libvirt_load() - load libvirt's client library and fill
 * vgicctl_libvirt, once; a later call returns the first one's answer
 *
 * Returns: FALSE, with @error saying what is missing and which Debian
 * package brings it, when the library or one of its functions is not
 * there.
 */
gboolean vgicctl_libvirt_load (GError **error);

#ifndef VGICCTL_LIBVIRT_DL_TABLE
#define virConnectOpen (*vgicctl_libvirt.ConnectOpen)
#define virConnectClose (*vgicctl_libvirt.ConnectClose)
#define virDomainLookupByName (*vgicctl_libvirt.DomainLookupByName)
#define virDomainGetXMLDesc (*vgicctl_libvirt.DomainGetXMLDesc)
#define virDomainDefineXML (*vgicctl_libvirt.DomainDefineXML)
#define virDomainIsActive (*vgicctl_libvirt.DomainIsActive)
#define virDomainSetMetadata (*vgicctl_libvirt.DomainSetMetadata)
#define virDomainFree (*vgicctl_libvirt.DomainFree)
#define virGetLastError (*vgicctl_libvirt.GetLastError)
#define virSetErrorFunc (*vgicctl_libvirt.SetErrorFunc)
#endif
