/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-domxml.h - the few edits vgicd makes to a libvirt domain definition,
 * shared by the qemu.d hook (50-vgicd) and `vgicctl enable|disable`.
 *
 * A patched QEMU uses the host's vgicd without any argument.  A domain
 * states a choice of its own with one element in vgicd's namespace:
 *
 *   <metadata>
 *     <vgicd:vgicd xmlns:vgicd="https://vgicd.example/xmlns/1" required="yes"/>
 *   </metadata>
 *
 * required="yes": not started, nor migrated in, where vgicd is down;
 * required="no" (or nothing): vgicd where the host has it; mode="off": never.
 *
 * Earlier versions pointed QEMU at vgicd with a command-line argument,
 *
 *   <qemu:commandline>
 *     <qemu:arg value="-global"/>
 *     <qemu:arg value="kvm-arm-gicv3.vgicd=unix:path=/run/vgicd/vgicd.sock"/>
 *   </qemu:commandline>
 *
 * which a QEMU without vgicd's patches refuses; the hook and vgicctl remove
 * it where it must go.  See libvirt-hooks/README.md.
 */
#pragma once

#include <glib.h>
#include <libxml/tree.h>

/* vgicd's metadata namespace.  An identifier only: nothing is ever fetched
 * from it (".example" is reserved, RFC 2606). */
#define VGICD_XMLNS "https://vgicd.example/xmlns/1"
#define VGICD_XMLNS_PREFIX "vgicd"
#define VGICD_XML_ELEMENT "vgicd"
#define QEMU_XMLNS "http://libvirt.org/schemas/domain/qemu/1.0"
/* The QEMU property the qemu-patch series adds to the GIC. */
#define VGICD_QEMU_PROPERTY "kvm-arm-gicv3.vgicd"

#include "vgicd-vms.h"	/* VgicdVmChoice */

/* vgicd_domxml_parse() - parse a domain definition without touching the
 * network or expanding entities; NULL and @error on failure */
xmlDoc *vgicd_domxml_parse (const char *data, gsize len, GError **error);

/* vgicd_domxml_choice() - the domain's choice (VGICD_VM_DEFAULT without
 * vgicd metadata); a bad required= or mode= value is an error that names it */
gboolean vgicd_domxml_choice (xmlDoc *doc, VgicdVmChoice *choice, GError **error);

/* vgicd_domxml_set_choice() - add, update or (DEFAULT) remove the metadata */
void vgicd_domxml_set_choice (xmlDoc *doc, VgicdVmChoice choice);

/* vgicd_domxml_uuid(), vgicd_domxml_name() - the domain's <uuid>, <name> */
char *vgicd_domxml_uuid (xmlDoc *doc);
char *vgicd_domxml_name (xmlDoc *doc);

/* vgicd_domxml_arg() - the value of the first vgicd argument, or NULL */
char *vgicd_domxml_arg (xmlDoc *doc);

/* vgicd_domxml_remove_arg() - remove every "-global kvm-arm-gicv3.vgicd=..."
 * pair (and a <qemu:commandline> left empty); returns how many */
guint vgicd_domxml_remove_arg (xmlDoc *doc);


/* vgicd_domxml_attr() - an attribute of the element at an absolute path of
 * element names below <domain> ("os/type", "arch"), or NULL */
char *vgicd_domxml_attr (xmlDoc *doc, const char *path, const char *attr);

/* vgicd_domxml_text() - the text of the element at such a path, or NULL */
char *vgicd_domxml_text (xmlDoc *doc, const char *path);

/* vgicd_domxml_format() - the document, without an XML declaration */
char *vgicd_domxml_format (xmlDoc *doc, gsize *len);

/* vgicd_host_config() - this host's vgicd.conf ($VGICD_CONFIG, default
 * /etc/vgicd/vgicd.conf, and its drop-ins) as far as it reads: a key that
 * does not load keeps its default, and *warning says so (a broken file must
 * not stop a domain) */
VgicdConfig *vgicd_host_config (char **warning);

/* vgicd_socket_path() - where this host's vgicd listens: $VGICD_SOCKET, else
 * @config's Socket= */
char *vgicd_socket_path (const VgicdConfig *config);

/* vgicd_socket_reachable() - does something accept connections on @path?
 * On FALSE, *why says what connect(2) said. */
gboolean vgicd_socket_reachable (const char *path, char **why);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (xmlDoc, xmlFreeDoc)
