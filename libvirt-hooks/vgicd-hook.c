/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-hook.c - libvirt's qemu hook for vgicd, installed as
 * /usr/sbin/vgicd-qemu-hook and linked from /etc/libvirt/hooks/qemu.d/50-vgicd
 * (libvirtd's AppArmor profile lets it run programs in /usr/sbin, under
 * their own profile: the hook has one).
 *
 * libvirtd runs it as `50-vgicd DOMAIN OPERATION SUB-OPERATION EXTRA` with
 * the domain's XML on standard input.  A patched QEMU uses the host's vgicd
 * without any argument, so the hook changes nothing in a domain unless it
 * must; it acts on three calls:
 *
 *   prepare begin   (every start, and an incoming migration's) the domain's
 *                   own choice (<vgicd:vgicd> in its metadata) is written
 *                   where vgicd reads it when the VM's QEMU attaches; a
 *                   domain that requires vgicd does not start where vgicd is
 *                   unreachable (exit 1, libvirt shows the message)
 *   migrate begin   (destination) a domain that requires vgicd is refused
 *                   where vgicd is unreachable; a domain that still carries
 *                   the command-line argument earlier versions added loses
 *                   it when this host's QEMU cannot take it.  Otherwise the
 *                   hook writes nothing, and libvirt keeps the XML it sent:
 *                   no re-parse, no hook-script taint.
 *   release end     the domain's choice is forgotten
 *
 * Everything else exits 0 at once.  The hook never calls back into libvirt
 * (that would deadlock libvirtd).
 *
 * "vgicd is reachable" means something accepts a connection on vgicd's
 * socket (vgicd itself, or systemd's vgicd.socket); vgicd takes a
 * connection closed before its first byte for the probe it is, and logs
 * nothing.  The socket is $VGICD_SOCKET, else Socket= in $VGICD_CONFIG or
 * /etc/vgicd/vgicd.conf, else /run/vgicd/vgicd.sock.  LibvirtHook=false
 * there switches the hook off: it exits 0 and does nothing.  $VGICD_VMS_DIR and
 * $VGICD_EMULATOR_CACHE move the choices' folder and the QEMU answers'
 * cache (for tests).
 *
 * Exit status: 0 go on, 1 refuse (the message is on standard error).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "vgicd-domxml.h"
#include "vgicd-emulator.h"
#include "vgicd-vms.h"

#define REMEDY "start it with \"systemctl start vgicd.socket\""

static int
refuse (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

static int
refuse (const char *fmt, ...)
{
  g_autofree char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "vgicd: %s\n", msg);
  return 1;
}

static GBytes *
read_stdin (GError **error)
{
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  guint8 chunk[65536];

  for (;;)
    {
      ssize_t n = read (STDIN_FILENO, chunk, sizeof chunk);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                       "%s", g_strerror (errno));
          return NULL;
        }
      if (n == 0)
        break;
      g_byte_array_append (buf, chunk, n);
    }
  return g_byte_array_free_to_bytes (g_steal_pointer (&buf));
}

static gboolean
write_all (const void *data, gsize len)
{
  const char *p = data;

  while (len > 0)
    {
      ssize_t n = write (STDOUT_FILENO, p, len);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      p += n;
      len -= n;
    }
  return TRUE;
}

static char *
host_name (void)
{
  char buf[256] = "";

  if (gethostname (buf, sizeof buf - 1) < 0 || !buf[0])
    return g_strdup ("this host");
  return g_strdup (buf);
}

/* The host's vgicd: its socket path, and whether it answers. */
typedef struct {
  char *socket_path;
  gboolean up;
  char *why;		/* connect(2)'s complaint when !up */
} HostVgicd;

static void
host_vgicd (const VgicdConfig *config, HostVgicd *h)
{
  h->socket_path = vgicd_socket_path (config);
  h->up = vgicd_socket_reachable (h->socket_path, &h->why);
}

static const char *
env_or (const char *name, const char *fallback)
{
  const char *v = g_getenv (name);

  return v && *v ? v : fallback;
}

/* Does the domain carry the argument of earlier versions, which this host's
 * QEMU refuses?  Then *why says why it cannot take it. */
static gboolean
arg_unwelcome (xmlDoc *doc, char **why)
{
  g_autofree char *arg = vgicd_domxml_arg (doc);
  g_autofree char *emulator = NULL;

  if (!arg)
    return FALSE;
  emulator = vgicd_domxml_text (doc, "devices/emulator");
  if (!emulator || !*emulator)
    {
      *why = g_strdup ("the domain names no <emulator>");
      return TRUE;
    }
  return !vgicd_emulator_has_vgicd (emulator, g_getenv ("VGICD_EMULATOR_CACHE"),
                                    g_getenv ("VGICD_QEMU_CONF"), why);
}

static int
on_prepare (const VgicdConfig *config, const char *dom, xmlDoc *doc, VgicdVmChoice choice)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *uuid = vgicd_domxml_uuid (doc);
  g_autofree char *name = vgicd_domxml_name (doc);
  g_autofree char *host = host_name ();
  g_autofree char *why = NULL;
  HostVgicd h = { NULL };
  int status = 0;

  /* The choice goes where vgicd looks when the VM's QEMU attaches. */
  if (uuid && !vgicd_vms_write (env_or ("VGICD_VMS_DIR", VGICD_DEFAULT_VMS_DIR), uuid,
                                name ? name : dom, choice, &error))
    fprintf (stderr, "vgicd: warning: domain '%s': cannot record its choice \"%s\" for "
             "vgicd (%s); vgicd applies the host's mode to it\n", dom,
             vgicd_vm_choice_to_string (choice), error->message);
  if (arg_unwelcome (doc, &why))
    fprintf (stderr, "vgicd: warning: domain '%s' carries the argument -global %s=..., "
             "which this host's QEMU refuses (%s); remove it with \"vgicctl enable %s\" "
             "(a patched QEMU needs no argument)\n", dom, VGICD_QEMU_PROPERTY, why, dom);
  if (choice == VGICD_VM_OFF)
    return 0;
  host_vgicd (config, &h);
  if (!h.up && choice == VGICD_VM_REQUIRED)
    status = refuse ("domain '%s' requires vgicd, but vgicd is not reachable "
                     "on host %s (%s: %s); " REMEDY ", or make vgicd optional "
                     "for the domain with \"vgicctl enable %s\"",
                     dom, host, h.socket_path, h.why, dom);
  g_free (h.socket_path);
  g_free (h.why);
  return status;
}

static int
on_migrate (const VgicdConfig *config, const char *dom, xmlDoc *doc, VgicdVmChoice choice)
{
  g_autofree char *host = host_name ();
  g_autofree char *out = NULL;
  g_autofree char *why = NULL;
  HostVgicd h = { NULL };
  gsize len;

  if (choice == VGICD_VM_REQUIRED)
    {
      int status = 0;

      host_vgicd (config, &h);
      if (!h.up)
        status = refuse ("refusing incoming migration of domain '%s': it "
                         "requires vgicd, but vgicd is not reachable on host "
                         "%s (%s: %s); " REMEDY " on %s and migrate again",
                         dom, host, h.socket_path, h.why, host);
      g_free (h.socket_path);
      g_free (h.why);
      if (status)
        return status;
    }
  if (!arg_unwelcome (doc, &why))
    return 0;	/* nothing written: libvirt keeps its own XML */

  fprintf (stderr, "vgicd: domain '%s': removing -global %s=... from the incoming "
           "definition: %s\n", dom, VGICD_QEMU_PROPERTY, why);
  vgicd_domxml_remove_arg (doc);
  out = vgicd_domxml_format (doc, &len);
  if (!write_all (out, len))
    return refuse ("domain '%s': cannot write the filtered XML: %s", dom,
                   g_strerror (errno));
  return 0;
}

static int
on_release (xmlDoc *doc)
{
  g_autofree char *uuid = vgicd_domxml_uuid (doc);

  if (uuid)
    vgicd_vms_write (env_or ("VGICD_VMS_DIR", VGICD_DEFAULT_VMS_DIR), uuid, NULL,
                     VGICD_VM_DEFAULT, NULL);
  return 0;
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) input = NULL;
  g_autoptr (xmlDoc) doc = NULL;
  g_autoptr (VgicdConfig) config = NULL;
  g_autofree char *warning = NULL;
  const char *dom, *op, *subop;
  gboolean migrate, prepare, release;
  VgicdVmChoice choice;
  const char *data;
  gsize len;

  if (argc < 4)
    {
      fprintf (stderr, "Usage: %s DOMAIN OPERATION SUB-OPERATION [EXTRA]\n"
               "libvirt's qemu hook for vgicd; libvirtd runs it, with the "
               "domain XML on standard input.\n", argv[0]);
      return 1;
    }
  dom = argv[1];
  op = argv[2];
  subop = argv[3];
  migrate = g_str_equal (op, "migrate") && g_str_equal (subop, "begin");
  prepare = g_str_equal (op, "prepare") && g_str_equal (subop, "begin");
  release = g_str_equal (op, "release") && g_str_equal (subop, "end");
  if (!migrate && !prepare && !release)
    return 0;

  /* Read all of it whatever follows: libvirt writes the XML to a pipe. */
  input = read_stdin (&error);
  config = vgicd_host_config (&warning);
  if (warning)
    fprintf (stderr, "vgicd: warning: %s\n", warning);
  /* The administrator's off switch (LibvirtHook=false in vgicd.conf, a
   * conffile): nothing recorded, refused or edited.  Deleting the packaged
   * link instead would last only until the next upgrade. */
  if (!config->libvirt_hook)
    return 0;
  if (!input)
    return refuse ("domain '%s': cannot read the domain XML: %s", dom,
                   error->message);
  data = g_bytes_get_data (input, &len);

  doc = vgicd_domxml_parse (data, len, &error);
  if (!doc)
    {
      /* Not XML libvirt would accept anyway: leave it to libvirt. */
      fprintf (stderr, "vgicd: warning: domain '%s': %s; left alone\n", dom,
               error->message);
      return 0;
    }
  if (release)
    return on_release (doc);
  if (!vgicd_domxml_choice (doc, &choice, &error))
    return refuse ("domain '%s': %s; fix it with \"vgicctl enable %s [--required]\" "
                   "or \"vgicctl disable %s\"", dom, error->message, dom, dom);
  return migrate ? on_migrate (config, dom, doc, choice) : on_prepare (config, dom, doc, choice);
}
