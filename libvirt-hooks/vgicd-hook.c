/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-hook.c - libvirt's qemu hook for vgicd, installed as
 * /etc/libvirt/hooks/qemu.d/50-vgicd.
 *
 * libvirtd runs it as `50-vgicd DOMAIN OPERATION SUB-OPERATION EXTRA` with
 * the domain's XML on standard input.  It acts on two calls, and only for
 * domains that opted in (<vgicd:vgicd> in their metadata):
 *
 *   prepare begin   a domain that requires vgicd does not start on a host
 *                   where vgicd is unreachable (exit 1, libvirt shows the
 *                   message); one that merely wants it starts anyway.
 *   migrate begin   (destination) the incoming XML is filtered: the QEMU
 *                   argument that points the GIC at vgicd is added where this
 *                   host offers vgicd, and removed where it does not; a
 *                   domain that requires vgicd is refused there instead.
 *
 * Everything else exits 0 at once.  A domain that did not opt in comes out of
 * the migrate filter byte for byte as it went in.  The hook never calls back
 * into libvirt (that would deadlock libvirtd).
 *
 * "This host offers vgicd" means: something accepts a connection on vgicd's
 * socket (vgicd itself, or systemd's vgicd.socket).  The socket is
 * $VGICD_SOCKET, else Socket= in $VGICD_CONFIG or /etc/vgicd/vgicd.conf,
 * else /run/vgicd/vgicd.sock.
 *
 * Exit status: 0 go on, 1 refuse (the message is on standard error).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "vgicd-domxml.h"

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
host_vgicd (HostVgicd *h)
{
  g_autofree char *warning = NULL;

  h->socket_path = vgicd_socket_path (&warning);
  if (warning)
    fprintf (stderr, "vgicd: warning: %s\n", warning);
  h->up = vgicd_socket_reachable (h->socket_path, &h->why);
}

static int
on_prepare (const char *dom, xmlDoc *doc, VgicdOptIn opt_in)
{
  HostVgicd h = { NULL };
  g_autofree char *host = host_name ();
  int status = 0;

  host_vgicd (&h);
  if (!h.up && opt_in == VGICD_OPTIN_REQUIRED)
    status = refuse ("domain '%s' requires vgicd, but vgicd is not reachable "
                     "on host %s (%s: %s); " REMEDY ", or make vgicd optional "
                     "for the domain with \"vgicctl enable %s\"",
                     dom, host, h.socket_path, h.why, dom);
  else if (!h.up)
    fprintf (stderr, "vgicd: warning: domain '%s' runs without vgicd on host %s "
             "(%s: %s)\n", dom, host, h.socket_path, h.why);
  g_free (h.socket_path);
  g_free (h.why);
  return status;
}

static int
on_migrate (const char *dom, xmlDoc *doc, VgicdOptIn opt_in)
{
  HostVgicd h = { NULL };
  g_autofree char *host = host_name ();
  g_autofree char *out = NULL;
  gsize len;

  host_vgicd (&h);
  if (h.up)
    vgicd_domxml_add_arg (doc, h.socket_path);
  else if (opt_in == VGICD_OPTIN_REQUIRED)
    {
      int status = refuse ("refusing incoming migration of domain '%s': it "
                           "requires vgicd, but vgicd is not reachable on host "
                           "%s (%s: %s); " REMEDY " on %s and migrate again",
                           dom, host, h.socket_path, h.why, host);

      g_free (h.socket_path);
      g_free (h.why);
      return status;
    }
  else
    vgicd_domxml_remove_arg (doc);
  g_free (h.socket_path);
  g_free (h.why);

  out = vgicd_domxml_format (doc, &len);
  if (!write_all (out, len))
    return refuse ("domain '%s': cannot write the filtered XML: %s", dom,
                   g_strerror (errno));
  return 0;
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) input = NULL;
  g_autoptr (xmlDoc) doc = NULL;
  const char *dom, *op, *subop;
  gboolean migrate, prepare;
  VgicdOptIn opt_in;
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
  if (!migrate && !prepare)
    return 0;

  input = read_stdin (&error);
  if (!input)
    return refuse ("domain '%s': cannot read the domain XML: %s", dom,
                   error->message);
  data = g_bytes_get_data (input, &len);

  doc = vgicd_domxml_parse (data, len, &error);
  if (doc && !vgicd_domxml_opt_in (doc, &opt_in, &error))
    return refuse ("domain '%s': %s; fix it with \"vgicctl enable %s [--required]\"",
                   dom, error->message, dom);
  if (!doc || opt_in == VGICD_OPTIN_NONE)
    {
      /* Not ours (or not XML libvirt would accept anyway): hand the input
       * back untouched, byte for byte, and let libvirt judge it. */
      if (!doc)
        fprintf (stderr, "vgicd: warning: domain '%s': %s; left alone\n", dom,
                 error->message);
      if (migrate && !write_all (data, len))
        return refuse ("domain '%s': cannot write the XML: %s", dom,
                       g_strerror (errno));
      return 0;
    }
  return migrate ? on_migrate (dom, doc, opt_in) : on_prepare (dom, doc, opt_in);
}
