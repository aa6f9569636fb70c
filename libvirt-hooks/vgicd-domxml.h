/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-domxml.h - the few edits vgicd makes to a libvirt domain definition,
 * shared by the qemu.d hook (50-vgicd) and `vgicctl enable|disable`.
 *
 * A domain opts in with one element in vgicd's own namespace:
 *
 *   <metadata>
 *     <vgicd:vgicd xmlns:vgicd="https://vgicd.example/xmlns/1" required="no"/>
 *   </metadata>
 *
 * and QEMU reaches vgicd through one pair of command-line arguments:
 *
 *   <qemu:commandline>
 *     <qemu:arg value="-global"/>
 *     <qemu:arg value="kvm-arm-gicv3.vgicd=unix:path=/run/vgicd/vgicd.sock"/>
 *   </qemu:commandline>
 *
 * See libvirt-hooks/README.md.
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

typedef enum {
  VGICD_OPTIN_NONE,		/* no vgicd metadata: leave the domain alone */
  VGICD_OPTIN_WANTED,		/* required="no" (or absent) */
  VGICD_OPTIN_REQUIRED,		/* required="yes" */
} VgicdOptIn;

/* vgicd_domxml_parse() - parse a domain definition without touching the
 * network or expanding entities; NULL and @error on failure */
xmlDoc *vgicd_domxml_parse (const char *data, gsize len, GError **error);

/* vgicd_domxml_opt_in() - the domain's choice; a bad required= value is an
 * error that names it */
gboolean vgicd_domxml_opt_in (xmlDoc *doc, VgicdOptIn *opt_in, GError **error);

/* vgicd_domxml_set_opt_in() - add, update or (NONE) remove the metadata */
void vgicd_domxml_set_opt_in (xmlDoc *doc, VgicdOptIn opt_in);

/* vgicd_domxml_arg() - the value of the first vgicd argument, or NULL */
char *vgicd_domxml_arg (xmlDoc *doc);

/* vgicd_domxml_remove_arg() - remove every "-global kvm-arm-gicv3.vgicd=..."
 * pair (and a <qemu:commandline> left empty); returns how many */
guint vgicd_domxml_remove_arg (xmlDoc *doc);

/* vgicd_domxml_add_arg() - make "-global kvm-arm-gicv3.vgicd=unix:path=
 * @socket_path" the domain's only vgicd argument */
void vgicd_domxml_add_arg (xmlDoc *doc, const char *socket_path);

/* vgicd_domxml_attr() - an attribute of the element at an absolute path of
 * element names below <domain> ("os/type", "arch"), or NULL */
char *vgicd_domxml_attr (xmlDoc *doc, const char *path, const char *attr);

/* vgicd_domxml_text() - the text of the element at such a path, or NULL */
char *vgicd_domxml_text (xmlDoc *doc, const char *path);

/* vgicd_domxml_format() - the document, without an XML declaration */
char *vgicd_domxml_format (xmlDoc *doc, gsize *len);

/* vgicd_socket_path() - where this host's vgicd listens: $VGICD_SOCKET, else
 * Socket= in $VGICD_CONFIG (default /etc/vgicd/vgicd.conf), else the
 * default.  A broken configuration file gives a warning in *warning. */
char *vgicd_socket_path (char **warning);

/* vgicd_socket_reachable() - does something accept connections on @path?
 * On FALSE, *why says what connect(2) said. */
gboolean vgicd_socket_reachable (const char *path, char **why);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (xmlDoc, xmlFreeDoc)
