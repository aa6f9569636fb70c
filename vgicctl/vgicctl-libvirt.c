/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-libvirt.c - `vgicctl enable|disable DOMAIN`: a domain's own choice
 * for vgicd, in its metadata, edited through the libvirt API (never the XML
 * files).  A patched QEMU uses the host's vgicd without any argument, so
 * the metadata is all there is to edit; the command-line argument earlier
 * versions added is removed on the way.  The qemu hook hands the choice to
 * vgicd at each start and incoming migration.
 */
#include <stdio.h>
#include <string.h>

#include "vgicctl.h"

/* Their own options, in vgicctl's GOptionContext (vgicctl.c); built
 * without libvirt too, so that the usage and the docs stay the same. */
static gboolean opt_required, opt_allow_tcg;
static char *opt_connect;

#define CONNECT_ENTRY \
  { "connect", 'c', 0, G_OPTION_ARG_STRING, &opt_connect, \
    "A libvirt URI (default: libvirt's default, qemu:///system for root)", "URI" }

const GOptionEntry vgicctl_enable_options[] = {
  { "required", 0, 0, G_OPTION_ARG_NONE, &opt_required,
    "The domain does not start or migrate in where vgicd is down", NULL },
  { "allow-tcg", 0, 0, G_OPTION_ARG_NONE, &opt_allow_tcg,
    "Accept aarch64 domains of type qemu too (for tests)", NULL },
  CONNECT_ENTRY,
  { NULL }
};

const GOptionEntry vgicctl_disable_options[] = {
  CONNECT_ENTRY,
  { NULL }
};

#ifdef VGICCTL_LIBVIRT

#include "vgicctl-json.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "vgicctl-libvirt-dl.h"
#include "vgicd-domxml.h"
#include "vgicd-emulator.h"

/* What the command line asked for. */
typedef struct {
  const char *cmd;	/* "enable" or "disable" */
  const char *uri;	/* --connect, or NULL for libvirt's default */
  const char *domain;
  VgicdVmChoice want;
  gboolean allow_tcg;
  char *what;		/* "enable DOMAIN", the prefix of every message */
  VgicctlJson json;	/* --json: what was done, as an object */
  gboolean quiet;	/* -q: warnings and errors only */
} Request;

/* What libvirt holds of the domain. */
typedef struct {
  virConnectPtr conn;
  virDomainPtr dom;
  xmlDoc *doc;		/* its persistent definition */
  VgicdVmChoice was;
} Domain;

static void
domain_clear (Domain *d)
{
  g_clear_pointer (&d->doc, xmlFreeDoc);
  g_clear_pointer (&d->dom, virDomainFree);
  g_clear_pointer (&d->conn, virConnectClose);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Domain, domain_clear)

/* libvirt prints every error on stderr by default; vgicctl words its own. */
static void
quiet_libvirt (void *data, virErrorPtr err)
{
}

static int
libvirt_failure (const char *what, const char *fallback)
{
  virErrorPtr err = virGetLastError ();
  const char *msg = err && err->message ? err->message : fallback;
  int code = err ? err->code : VIR_ERR_INTERNAL_ERROR;

  switch (code)
    {
    case VIR_ERR_NO_DOMAIN:
    case VIR_ERR_XML_ERROR:
    case VIR_ERR_XML_DETAIL:
    case VIR_ERR_INVALID_ARG:
    case VIR_ERR_CONFIG_UNSUPPORTED:
    case VIR_ERR_NO_SUPPORT:
    case VIR_ERR_INVALID_DOMAIN:
    case VIR_ERR_NO_DOMAIN_METADATA:
      fprintf (stderr, "vgicctl: %s: %s\n", what, msg);
      return EXIT_INPUT;
    case VIR_ERR_AUTH_FAILED:
    case VIR_ERR_AUTH_CANCELLED:
    case VIR_ERR_AUTH_UNAVAILABLE:
    case VIR_ERR_OPERATION_DENIED:
    case VIR_ERR_ACCESS_DENIED:
      fprintf (stderr, "vgicctl: %s: permission denied: %s\n"
               "Run it as root (for example with sudo).\n", what, msg);
      return EXIT_DENIED;
    default:
      fprintf (stderr, "vgicctl: %s: %s\n", what, msg);
      return EXIT_DBUS;
    }
}

/* The command line, parsed by vgicctl.c: DOMAIN and the options. */
static int
parse_request (const VgicctlCall *call, gboolean enable, Request *r)
{
  r->cmd = call->name;
  if (!call->args[0])
    return usage_error ("which domain? Give its libvirt name");
  r->uri = opt_connect;
  r->domain = call->args[0];
  r->allow_tcg = opt_allow_tcg;
  r->want = !enable ? VGICD_VM_OFF : opt_required ? VGICD_VM_REQUIRED : VGICD_VM_WANTED;
  r->what = g_strdup_printf ("%s %s", r->cmd, r->domain);
  r->json = call->json;
  r->quiet = call->quiet;
  return EXIT_OK;
}

/* Connect, find the domain, parse its persistent definition. */
static int
open_domain (const Request *r, Domain *d)
{
  g_autoptr (GError) error = NULL;
  char *xml;

  /* Loaded here, not linked (vgicctl-libvirt-dl.h): only these two
   * commands need libvirt, and a usage error does not. */
  if (!vgicctl_libvirt_load (&error))
    {
      fprintf (stderr, "vgicctl: %s: %s\n", r->what, error->message);
      return EXIT_DBUS;
    }
  virSetErrorFunc (NULL, quiet_libvirt);
  d->conn = virConnectOpen (r->uri);
  if (!d->conn)
    {
      virErrorPtr err = virGetLastError ();

      if (err && (err->code == VIR_ERR_AUTH_FAILED ||
                  err->code == VIR_ERR_AUTH_UNAVAILABLE ||
                  err->code == VIR_ERR_OPERATION_DENIED))
        return libvirt_failure (r->what, "permission denied");
      fprintf (stderr, "vgicctl: %s: cannot connect to libvirt%s%s: %s; is "
               "libvirtd running? systemctl status libvirtd\n", r->what,
               r->uri ? " at " : "", r->uri ? r->uri : "",
               err && err->message ? err->message : "unknown error");
      return EXIT_DBUS;
    }
  if (!(d->dom = virDomainLookupByName (d->conn, r->domain)))
    return libvirt_failure (r->what, "no such domain");
  /* SECURE: the definition goes back whole, passwords included. */
  if (!(xml = virDomainGetXMLDesc (d->dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE)))
    return libvirt_failure (r->what, "cannot read the definition");
  d->doc = vgicd_domxml_parse (xml, strlen (xml), &error);
  free (xml);
  if (!d->doc)
    {
      fprintf (stderr, "vgicctl: %s: libvirt's definition: %s\n", r->what, error->message);
      return EXIT_DBUS;
    }
  if (!vgicd_domxml_choice (d->doc, &d->was, &error))
    {
      /* A hand-edited bad value: enable/disable rewrite it anyway. */
      fprintf (stderr, "vgicctl: %s: warning: %s (replaced)\n", r->what, error->message);
      d->was = VGICD_VM_WANTED;
    }
  return EXIT_OK;
}

/* enable only: vgicd moves the arm64 KVM GICv3, nothing else. */
static int
check_target (const Request *r, const Domain *d)
{
  g_autofree char *type = vgicd_domxml_attr (d->doc, "", "type");
  g_autofree char *arch = vgicd_domxml_attr (d->doc, "os/type", "arch");

  if (g_strcmp0 (arch, "aarch64") != 0)
    {
      fprintf (stderr, "vgicctl: %s: the domain's architecture is %s, not "
               "aarch64: vgicd moves the arm64 KVM GICv3 only\n", r->what,
               arch ? arch : "unknown (no <os><type arch=...>)");
      return EXIT_INPUT;
    }
  if (g_strcmp0 (type, "kvm") != 0 && !(r->allow_tcg && g_strcmp0 (type, "qemu") == 0))
    {
      fprintf (stderr, "vgicctl: %s: the domain's type is %s, not kvm: "
               "vgicd moves the in-kernel (KVM) GICv3 only%s\n", r->what,
               type ? type : "unknown",
               g_strcmp0 (type, "qemu") == 0 ?
               " (--allow-tcg enables it anyway, for tests)" : "");
      return EXIT_INPUT;
    }
  return EXIT_OK;
}

/* The edit, and libvirt's new persistent definition.  *@arg_removed says
 * whether the argument of earlier versions went. */
static int
define_edited (const Request *r, Domain *d, gboolean *arg_removed)
{
  g_autofree char *xml = NULL;
  virDomainPtr defined;

  vgicd_domxml_set_choice (d->doc, r->want);
  *arg_removed = vgicd_domxml_remove_arg (d->doc) > 0;
  xml = vgicd_domxml_format (d->doc, NULL);
  if (!(defined = virDomainDefineXML (d->conn, xml)))
    return libvirt_failure (r->what, "cannot define the edited definition");
  virDomainFree (defined);
  return EXIT_OK;
}

/* Is @uri this host's libvirt? */
static gboolean
uri_is_local (const char *uri)
{
  return !uri || !strstr (uri, "://") || strstr (uri, ":///");
}

/* A running domain migrates with its live definition: give it the
 * metadata too, so the destination's hook sees the choice; and on this
 * host, hand the choice to vgicd now (it applies it when the VM's QEMU next
 * attaches, or when vgicd is reloaded).  *@active says whether it runs. */
static int
update_live (const Request *r, Domain *d, gboolean *active)
{
  g_autofree char *meta = NULL;
  g_autofree char *uuid = vgicd_domxml_uuid (d->doc);
  g_autoptr (GError) error = NULL;

  *active = virDomainIsActive (d->dom) == 1;
  if (!*active)
    return EXIT_OK;
  meta = r->want == VGICD_VM_OFF ? g_strdup ("<" VGICD_XML_ELEMENT " mode=\"off\"/>")
       : g_strdup_printf ("<" VGICD_XML_ELEMENT " required=\"%s\"/>",
                          r->want == VGICD_VM_REQUIRED ? "yes" : "no");
  if (virDomainSetMetadata (d->dom, VIR_DOMAIN_METADATA_ELEMENT, meta,
                            VGICD_XMLNS_PREFIX, VGICD_XMLNS, VIR_DOMAIN_AFFECT_LIVE) < 0)
    return libvirt_failure (r->what, "cannot update the running domain's metadata");
  if (uri_is_local (r->uri) && uuid &&
      !vgicd_vms_write (VGICD_DEFAULT_VMS_DIR, uuid, r->domain, r->want, &error))
    fprintf (stderr, "vgicctl: %s: warning: cannot hand the choice to this host's "
             "vgicd now (%s); it applies from the domain's next start\n", r->what,
             error->message);
  return EXIT_OK;
}

/* What changed, and (enable, on this host) whether this host's QEMU can
 * use vgicd at all. */
/* report_json() - what was done, for scripts: the same facts as the
 * sentences (vgicctl(1) lists the keys) */
static void
report_json (const Request *r, const Domain *d, gboolean active, gboolean arg_removed)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "domain");
  json_builder_add_string_value (b, r->domain);
  json_builder_set_member_name (b, "command");
  json_builder_add_string_value (b, r->cmd);
  json_builder_set_member_name (b, "choice");
  json_builder_add_string_value (b, vgicd_vm_choice_to_string (r->want));
  json_builder_set_member_name (b, "previous");
  json_builder_add_string_value (b, vgicd_vm_choice_to_string (d->was));
  json_builder_set_member_name (b, "changed");
  json_builder_add_boolean_value (b, d->was != r->want);
  json_builder_set_member_name (b, "active");
  json_builder_add_boolean_value (b, active);
  json_builder_set_member_name (b, "argument-removed");
  json_builder_add_boolean_value (b, arg_removed);
  json_builder_end_object (b);
  vgicctl_json_print_builder (b, r->json);
}

static void
report (const Request *r, const Domain *d, gboolean active, gboolean arg_removed)
{
  g_autofree char *emulator = NULL;
  g_autofree char *why = NULL;

  if (r->json)
    report_json (r, d, active, arg_removed);
  else if (r->quiet)
    ;
  else if (r->want == VGICD_VM_OFF)
    printf ("Domain %s: vgicd %s, from its next start%s.\n", r->domain,
            d->was == VGICD_VM_OFF ? "was already off" : "off",
            active ? " or migration (or once vgicd is reloaded)" : "");
  else
    printf ("Domain %s: vgicd %s (%s), from its next start%s.\n", r->domain,
            d->was == r->want ? "settings kept" : "on",
            r->want == VGICD_VM_REQUIRED ?
            "required: it does not start or migrate where vgicd is down" :
            "optional: it runs without vgicd where vgicd is down",
            active ? " or migration (or once vgicd is reloaded)" : "");
  if (arg_removed && !r->json && !r->quiet)
    printf ("Domain %s: removed the argument -global %s=... that earlier versions "
            "added; a patched QEMU reaches vgicd without it.\n", r->domain,
            VGICD_QEMU_PROPERTY);
  if (r->want == VGICD_VM_OFF || !uri_is_local (r->uri))
    return;
  emulator = vgicd_domxml_text (d->doc, "devices/emulator");
  if (!vgicd_emulator_has_vgicd (emulator ? emulator : "/usr/bin/qemu-system-aarch64",
                                 NULL, NULL, &why))
    fprintf (stderr, "vgicctl: %s: warning: this host's QEMU cannot use "
             "vgicd: %s; the domain runs without vgicd here until QEMU "
             "is updated\n", r->what, why);
}

static int
enable_disable (const VgicctlCall *call, gboolean enable)
{
  Request r = { 0 };
  g_auto (Domain) d = { 0 };
  gboolean active = FALSE, arg_removed = FALSE;
  int status;

  if ((status = parse_request (call, enable, &r)) ||
      (status = open_domain (&r, &d)) ||
      (enable && (status = check_target (&r, &d))) ||
      (status = define_edited (&r, &d, &arg_removed)) ||
      (status = update_live (&r, &d, &active)))
    {
      g_free (r.what);
      return status;
    }
  report (&r, &d, active, arg_removed);
  g_free (r.what);
  return EXIT_OK;
}

#else

static int
enable_disable (const VgicctlCall *call, gboolean enable)
{
  fprintf (stderr, "vgicctl: %s: this vgicctl was built without libvirt; "
           "edit the domain with virsh edit (see the vgicd hook's README)\n",
           enable ? "enable" : "disable");
  return EXIT_USAGE;
}

#endif

int
vgicctl_enable (const VgicctlCall *call)
{
  return enable_disable (call, TRUE);
}

int
vgicctl_disable (const VgicctlCall *call)
{
  return enable_disable (call, FALSE);
}
