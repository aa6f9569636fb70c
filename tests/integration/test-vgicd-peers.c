/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-peers.c - what a peer may say to vgicd and what it gets: a
 * protocol 1 peer served as before, names vgicd refuses, reports that are
 * not errnos, a step channel sent garbage or never read, a flood and
 * stray descriptors on the bus connection, a peer both of vgicd's guards
 * close, descriptors whose last close waits, lines it makes vgicd log,
 * another peer's session.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgicd-test.h"
#include "vgicd/protocol.h"
#include "vgicd/so-passrights.h"

static void
test_protocol1_peer (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[2];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) dst = make_sim (s, FALSE);
  g_autoptr (GVariant) done = NULL, loaded = NULL, bytes = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  OldPeer ps = { 0 }, pd = { 0 };
  const char *action = NULL;
  guint steps;

  vgic_sim_randomize (src, 31);
  old_peer_attach (&ps, h, src, s, "old-src");
  old_peer_attach (&pd, h, dst, s, "old-dst");

  done = old_peer_run (&ps, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  bytes = g_variant_lookup_value (done, "record", G_VARIANT_TYPE_BYTESTRING);
  g_assert_nonnull (bytes);
  record = g_variant_get_data_as_bytes (bytes);
  want = visible_state (src, s);
  g_assert_true (g_bytes_equal (want, record));

  loaded = old_peer_run (&pd, dst, "Load",
                         g_variant_new ("(@ay)", g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING,
                                                                          record, TRUE)),
                         &steps);
  g_assert_true (g_variant_lookup (loaded, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  g_assert_cmpuint (steps, ==, 2);	/* the TYPER reads, then the writes */
  got = visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));
  old_peer_clear (&ps);
  old_peer_clear (&pd);
}

/* A name with control characters (a forged log line, a terminal escape),
 * one over 256 bytes, and a uuid that is not one are refused at Attach,
 * with the reason; a 256-byte name of printable characters, spaces and
 * non-ASCII ones included, is not. */
static void
test_attach_names (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  g_autofree char *long_name = g_strnfill (257, 'n');
  const struct { const char *name, *uuid, *why; } bad[] = {
    { "web-1\nvgicd[1]: VM db: load failed", NULL, "printable" },
    { "web-\033[2J", NULL, "printable" },
    { long_name, NULL, "at most 256 bytes" },
    { "web-1", "../../etc/passwd", "is not a UUID" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicdClient) c = vgicd_test_connect (h, &error);

      g_assert_no_error (error);
      g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), bad[i].name, bad[i].uuid,
                                           s->irqs, s->vcpus, mpidrs, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, bad[i].why));
    }
  {
    /* 256 bytes: UTF-8 and spaces, then ASCII up to the limit. */
    g_autofree char *ok_name = g_strdup_printf ("h\u00f4te web 1 %s", long_name);
    g_autoptr (VgicdClient) c = NULL;

    ok_name[256] = '\0';
    c = attach (h, sim, s, ok_name);	/* asserts that it attached */
  }
}

/* A step report's error is the peer's word: any int32, INT32_MIN too
 * (whose negation is undefined, which UBSan would catch).  The save fails
 * with the number told as it is, and the session serves the next one. */
static void
test_report_error_not_errno (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (GVariant) failed = NULL, done = NULL;
  const char *action = NULL, *message = NULL;
  OldPeer p = { 0 };
  guint steps;

  vgic_sim_randomize (src, 7);
  old_peer_attach (&p, h, src, s, "liar");
  p.report_error = G_MININT32;
  failed = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (failed, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "fail");
  g_assert_true (g_variant_lookup (failed, "message", "&s", &message));
  g_assert_nonnull (strstr (message, "error -2147483648, which is not a kernel errno"));
  done = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  old_peer_clear (&p);
}

/* A peer that sends the step channel what no method is: vgicd closes the
 * channel and says why, and nothing else changes (vgicd serves the next
 * peer, and this one's D-Bus session still works). */
static void
test_channel_refuses_garbage (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  static const char *const features[] = { "channel", "record-window", NULL };
  static const char *const channel_only[] = { "channel", NULL };
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) other = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GVariant) done = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  static const guint32 bad[4] = { 99, 0, 0, 0 };
  const char *action = NULL;
  OldPeer p = { 0 };
  guint8 byte;
  guint steps;

  /* No channel without records in the window (peer_attach checks). */
  peer_attach (&p, h, src, s, "no-channel", channel_only);
  old_peer_clear (&p);

  peer_attach (&p, h, src, s, "garbage", features);
  g_assert_cmpint (send (p.channel, bad, sizeof bad, MSG_NOSIGNAL), ==, sizeof bad);
  /* vgicd closed its end: no answer, end of file. */
  g_assert_cmpint (recv (p.channel, &byte, 1, 0), ==, 0);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "VM garbage: closing the step channel: an unknown method"));

  done = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  old_peer_clear (&p);

  c = attach (h, other, s, "next");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
}

/* A peer that sends step-channel requests and never reads an answer (a
 * compromised QEMU): vgicd must not wait on it.  It closes that channel
 * once the answers fill the socket, says why, and serves the next VM. */
static void
test_channel_peer_does_not_read (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  static const char *const features[] = { "channel", "record-window", NULL };
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) other = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  /* Save: the header, then "()" (one byte). */
  const guint8 save[9] = { VGICD_CHANNEL_SAVE };
  OldPeer p = { 0 };
  guint sent = 0, i;

  peer_attach (&p, h, src, s, "deaf", features);
  for (i = 0; i < 20000; i++)
    {
      if (send (p.channel, save, sizeof save, MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof save)
        sent++;
      else if (errno == EAGAIN)
        g_usleep (1000);	/* vgicd is reading: let it */
      else
        break;	/* EPIPE or ECONNRESET: vgicd closed its end */
    }
  g_test_message ("%u requests sent before vgicd closed the channel", sent);
  g_assert_cmpuint (i, <, 20000);
  g_assert_true (errno == EPIPE || errno == ECONNRESET);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "VM deaf: closing the step channel: the peer sends requests "
                                 "and does not read the answers"));
  c = attach (h, other, s, "next");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  old_peer_clear (&p);
}

/* A D-Bus client on a raw socket, past the handshake (as root, who is on
 * the harness's AllowUsers): it can send without reading, and send file
 * descriptors with any message. */
static int
raw_peer_connect (VgicdHarness *h)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  g_autofree char *uid = g_strdup_printf ("%u", (guint) getuid ());
  g_autoptr (GString) auth = g_string_new ("AUTH EXTERNAL ");
  char buf[256];
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const char *lines[] = { NULL, "NEGOTIATE_UNIX_FD\r\n", "BEGIN\r\n" };

  g_assert_cmpint (fd, >=, 0);
  g_strlcpy (a.sun_path, h->socket_path, sizeof a.sun_path);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (send (fd, "", 1, MSG_NOSIGNAL), ==, 1);
  for (const char *c = uid; *c; c++)
    g_string_append_printf (auth, "%02x", (guint) (guchar) *c);
  g_string_append (auth, "\r\n");
  lines[0] = auth->str;
  for (guint i = 0; i < G_N_ELEMENTS (lines); i++)
    {
      ssize_t n;

      g_assert_cmpint (send (fd, lines[i], strlen (lines[i]), MSG_NOSIGNAL), ==,
                       (gssize) strlen (lines[i]));
      if (i == 2)
        break;
      n = recv (fd, buf, sizeof buf - 1, 0);
      g_assert_cmpint (n, >, 0);
      buf[n] = 0;
      g_assert_true (g_str_has_prefix (buf, i == 0 ? "OK " : "AGREE_UNIX_FD"));
    }
  return fd;
}

/* A call of Introspect on the helper, serial @serial, as bytes. */
static guint8 *
raw_call (guint32 serial, GUnixFDList *fds, gsize *len)
{
  g_autoptr (GDBusMessage) m =
    g_dbus_message_new_method_call (NULL, "/org/vgicd/Helper1",
                                    "org.freedesktop.DBus.Introspectable", "Introspect");
  g_autoptr (GError) error = NULL;
  guint8 *blob;

  g_dbus_message_set_serial (m, serial);
  if (fds)
    g_dbus_message_set_unix_fd_list (m, fds);
  blob = g_dbus_message_to_blob (m, len, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING, &error);
  g_assert_no_error (error);
  return blob;
}

/* Did vgicd close @fd's connection?  Reads (and drops) what is there
 * until EOF, for at most @ms. */
static gboolean
raw_peer_closed (int fd, int ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;
  char buf[65536];

  while (g_get_monotonic_time () < end)
    {
      struct pollfd p = { fd, POLLIN, 0 };
      ssize_t n;

      if (poll (&p, 1, 100) <= 0)
        continue;
      n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET))
        return TRUE;
    }
  return FALSE;
}

/* sendmsg() of @len bytes of @data on @sock, with the @n descriptors @fds
 * passed along (SCM_RIGHTS): what it returns, errno set. */
static gssize
fd_sendmsg (int sock, const void *data, gsize len, const int *fds, guint n)
{
  g_autofree char *control = g_malloc0 (CMSG_SPACE (n * sizeof (int)));
  struct iovec iov = { (void *) data, len };
  struct msghdr mh = {
    .msg_iov = &iov, .msg_iovlen = 1,
    .msg_control = control, .msg_controllen = CMSG_SPACE (n * sizeof (int)),
  };
  struct cmsghdr *cm = CMSG_FIRSTHDR (&mh);

  cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN (n * sizeof (int));
  memcpy (CMSG_DATA (cm), fds, n * sizeof (int));
  return sendmsg (sock, &mh, MSG_NOSIGNAL);
}

/* The same, which must send them all. */
static void
send_with_fds (int sock, const void *data, gsize len, const int *fds, guint n)
{
  g_assert_cmpint (fd_sendmsg (sock, data, len, fds, n), ==, (gssize) len);
}

static void
send_with_fd (int sock, const void *data, gsize len, int fd)
{
  send_with_fds (sock, data, len, &fd, 1);
}

/* Rows 3 and 4, for a peer on AllowUsers (the door keeps out the others):
 * 200,000 calls sent without reading an answer, then a call carrying file
 * descriptors.  Each peer is closed, vgicd's memory and descriptors stay
 * where they were, and an honest QEMU attaches and saves meanwhile.  With
 * the old code the first peer was never closed and vgicd grew by hundreds
 * of MiB; the second left vgicd holding its descriptors until it closed. */
static void
test_admitted_peer_bounds (void)
{
  g_autoptr (VgicdHarness) h = harness_accepting_fds (NULL);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  guint64 rss0, rss1;
  guint fds0, fds1, sent = 0;
  gsize len;
  int fd;

  c = attach (h, sim, s, "honest");
  g_assert_true (vgicd_client_save (c, &record, &error));
  /* 0 is what the harness reads when /proc has nothing for vgicd. */
  rss0 = vgicd_harness_status_kib (h, "VmRSS:");
  fds0 = vgicd_harness_open_fds (h);
  g_assert_cmpuint (rss0, >, 0);
  g_assert_cmpuint (fds0, >, 0);

  /* A flood, never read. */
  fd = raw_peer_connect (h);
  for (sent = 0; sent < 200000; sent++)
    {
      g_autofree guint8 *blob = raw_call (sent + 1, NULL, &len);

      if (send (fd, blob, len, MSG_NOSIGNAL) < 0)
        break;	/* EPIPE: vgicd closed it */
    }
  g_assert_true (raw_peer_closed (fd, 10000));
  close (fd);
  rss1 = vgicd_harness_status_kib (h, "VmRSS:");
  g_assert_cmpuint (rss1, >, 0);
  g_test_message ("flood: %u calls sent before vgicd closed the peer; RSS %" G_GUINT64_FORMAT
                  " -> %" G_GUINT64_FORMAT " KiB", sent, rss0, rss1);
  g_assert_cmpuint (rss1, <, rss0 + 32 * 1024);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);

  /* File descriptors with a call: 200 of them. */
  {
    g_autoptr (GUnixFDList) list = g_unix_fd_list_new ();
    g_autofree guint8 *blob = NULL;

    for (guint i = 0; i < 200; i++)
      g_unix_fd_list_append (list, 0, NULL);	/* dups of stdin, the list's */
    blob = raw_call (1, list, &len);
    fd = raw_peer_connect (h);
    send_with_fds (fd, blob, len, g_unix_fd_list_peek_fds (list, NULL), 200);
    g_assert_true (raw_peer_closed (fd, 10000));
    close (fd);
  }
  /* The peer's socket closes first; GDBus's end of the relay's socketpair
   * when the main loop has seen the connection close. */
  for (guint i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
    {
      fds1 = vgicd_harness_open_fds (h);
      if (fds1 <= fds0)
        break;
      g_usleep (20000);
    }
  g_assert_cmpuint (fds1, >, 0);
  g_test_message ("fds: vgicd holds %u descriptors before, %u after", fds0, fds1);
  g_assert_cmpuint (fds1, <=, fds0);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);

  /* vgicd's own account first, so that a count off by one says which
   * peer it closed that this test did not expect (seen once, in a loaded
   * CI run's ASan build: 3 instead of 2). */
  log = vgicd_harness_read_log (h);
  {
    g_auto (GStrv) lines = g_strsplit (log, "\n", -1);

    for (guint i = 0; lines[i]; i++)
      if (strstr (lines[i], "closed the connection of a peer") ||
          strstr (lines[i], "did not attach"))
        g_test_message ("vgicd: %s", lines[i]);
  }
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 2);
  /* Which of the two bounds a flood meets first depends on how far the
   * main loop lags behind GDBus's reader. */
  g_assert_true (strstr (log, "does not read the answers") || strstr (log, "unanswered"));
  g_assert_nonnull (strstr (log, "it sent file descriptors"));
}

/* A TCP socket whose last close waits @linger s: SO_LINGER set, and data
 * queued that the other end of its loopback connection (*@hold, for the
 * caller to keep open while it matters, then close) never reads, so the
 * window stays shut.  A compromised QEMU can make one and pass it. */
static int
lingering_tcp (int linger, int *hold)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t alen = sizeof a;
  struct linger lg = { 1, linger };
  int small = 4096, l, c, s;
  char buf[4096] = { 0 };

  l = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (l, >=, 0);
  g_assert_cmpint (setsockopt (l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), ==, 0);
  g_assert_cmpint (bind (l, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (listen (l, 1), ==, 0);
  g_assert_cmpint (getsockname (l, (struct sockaddr *) &a, &alen), ==, 0);
  c = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (c, >=, 0);
  g_assert_cmpint (setsockopt (c, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), ==, 0);
  g_assert_cmpint (connect (c, (struct sockaddr *) &a, sizeof a), ==, 0);
  s = accept4 (l, NULL, NULL, SOCK_CLOEXEC);
  g_assert_cmpint (s, >=, 0);
  close (l);
  /* Until the window is shut and the sender's own buffer full. */
  for (guint round = 0; round < 3; round++)
    {
      while (send (c, buf, sizeof buf, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
        ;
      g_assert_cmpint (errno, ==, EAGAIN);
      g_usleep (50000);
    }
  g_assert_cmpint (setsockopt (c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), ==, 0);
  *hold = s;
  return c;
}

/* Stop vgicd (SIGSTOP) and wait until all its threads are stopped. */
static void
vgicd_stop (VgicdHarness *h)
{
  g_autofree char *dir = g_strdup_printf ("/proc/%d/task", (int) h->vgicd_pid);

  g_assert_cmpint (kill (h->vgicd_pid, SIGSTOP), ==, 0);
  for (guint i = 0; i < VGICD_TEST_PATIENCE_MS / 10; i++)
    {
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      gboolean all = d != NULL;
      const char *t;

      while (all && (t = g_dir_read_name (d)))
        {
          g_autofree char *path = g_strdup_printf ("%s/%s/stat", dir, t);
          g_autofree char *stat = NULL;
          const char *paren;

          /* "PID (COMM) STATE ...": T when stopped by a signal. */
          all = g_file_get_contents (path, &stat, NULL, NULL) &&
                (paren = strrchr (stat, ')')) && paren[1] == ' ' && paren[2] == 'T';
        }
      if (all)
        return;
      g_usleep (10000);
    }
  g_assert_not_reached ();
}

/* @len bytes of @data with @fd on @sock, then @fd closed, while vgicd is
 * stopped: so the descriptor is in flight when this test lets it go, and
 * vgicd's handling of it is its last close, whichever thread makes it
 * (and this test never waits on its own close). */
static void
pass_last_reference (VgicdHarness *h, int sock, const void *data, gsize len, int fd)
{
  vgicd_stop (h);
  send_with_fd (sock, data, len, fd);
  close (fd);
  g_assert_cmpint (kill (h->vgicd_pid, SIGCONT), ==, 0);
}

/* Did vgicd close its end of the step channel @fd within @ms?  An end of
 * file, or a reset when the close found the packet it refused still
 * queued (a race between vgicd's shutdown and its reaper's close). */
static gboolean
channel_closed (int fd, int ms)
{
  struct pollfd p = { fd, POLLIN, 0 };
  char buf[256];
  ssize_t n;

  if (poll (&p, 1, ms) != 1)
    return FALSE;
  n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* The weapon is real here: the last close of lingering_tcp (1, ...) waits
 * out its second (so the test below would fail where vgicd made it). */
static void
assert_last_close_waits (void)
{
  int hold, c = lingering_tcp (1, &hold);
  gint64 t0 = g_get_monotonic_time (), took;

  close (c);
  took = g_get_monotonic_time () - t0;
  g_test_message ("a lingering socket's last close, SO_LINGER 1 s: %.2f s",
                  (double) took / G_USEC_PER_SEC);
  g_assert_cmpint (took, >=, G_USEC_PER_SEC / 2);
  close (hold);
}

/* A compromised QEMU passes sockets whose last close waits an hour, where
 * vgicd's protocol passes none: with a call on its bus connection, inside
 * a unix socket inside a call, with a packet on the step channel, and with
 * a call of Manager1 on the system bus.  Each is closed off every thread
 * that serves anyone (vgicd-reaper.c), defused first so it does not wait:
 * the peer is closed at once as before, and vgicd serves on.  Where vgicd
 * dropped such a descriptor on its relay thread or its main loop (before
 * the reaper), that thread stopped for the hour: every peer's handshake,
 * every VM's save and load, and Manager1 with it. */
static void
test_lingering_descriptors (void)
{
  g_autoptr (VgicdHarness) h = harness_accepting_fds (NULL);
  static const char *const features[] = { "channel", "record-window", NULL };
  const guint8 save[9] = { VGICD_CHANNEL_SAVE };
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree guint8 *blob = NULL;
  g_autofree char *log = NULL;
  int hold[4], t, fd, pair[2];
  OldPeer p = { 0 };
  gsize len;

  assert_last_close_waits ();
  blob = raw_call (1, NULL, &len);

  /* With a call on the bus connection. */
  t = lingering_tcp (3600, &hold[0]);
  fd = raw_peer_connect (h);
  pass_last_reference (h, fd, blob, len, t);
  g_assert_true (raw_peer_closed (fd, VGICD_TEST_PATIENCE_MS));
  close (fd);

  /* Queued in a unix socket that goes with a call. */
  t = lingering_tcp (3600, &hold[1]);
  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
  send_with_fd (pair[0], "t", 1, t);
  close (t);
  fd = raw_peer_connect (h);
  pass_last_reference (h, fd, blob, len, pair[1]);
  g_assert_true (raw_peer_closed (fd, VGICD_TEST_PATIENCE_MS));
  close (fd);
  close (pair[0]);

  /* With a packet on the step channel. */
  t = lingering_tcp (3600, &hold[2]);
  peer_attach (&p, h, src, s, "lingering", features);
  pass_last_reference (h, p.channel, save, sizeof save, t);
  g_assert_true (channel_closed (p.channel, VGICD_TEST_PATIENCE_MS));

  /* With a call of Manager1, through the system bus (dbus-daemon passes
   * the caller's descriptors on): sent and flushed while vgicd is
   * stopped, then let go. */
  {
    g_autoptr (GDBusConnection) bus = g_dbus_connection_new_for_address_sync (
      h->bus_address,
      G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
      G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
    g_autoptr (GUnixFDList) list = g_unix_fd_list_new ();

    g_assert_no_error (error);
    t = lingering_tcp (3600, &hold[3]);
    g_assert_cmpint (g_unix_fd_list_append (list, t, &error), ==, 0);
    vgicd_stop (h);
    g_dbus_connection_call_with_unix_fd_list (
      bus, "org.vgicd.Manager1", "/org/vgicd/Manager1", "org.vgicd.Manager1", "GetStats",
      NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1, list, NULL, NULL, NULL);
    g_assert_true (g_dbus_connection_flush_sync (bus, NULL, &error));
    g_assert_no_error (error);
    g_clear_object (&list);
    close (t);
    g_assert_cmpint (kill (h->vgicd_pid, SIGCONT), ==, 0);
  }

  /* vgicd serves on: an honest QEMU attaches and saves, the protocol 1
   * peer's D-Bus session still works, Manager1 answers. */
  c = attach (h, sim, s, "honest");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  {
    g_autoptr (GVariant) done = NULL;
    const char *action = NULL;
    guint steps;

    done = old_peer_run (&p, src, "Save", NULL, &steps);

    g_assert_true (g_variant_lookup (done, "action", "&s", &action));
    g_assert_cmpstr (action, ==, "done");
  }
  old_peer_clear (&p);
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 2);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "it sent file descriptors"));
  g_assert_nonnull (strstr (log, "VM lingering: closing the step channel: a packet with "
                                 "file descriptors"));
  /* No close waited on the reaper either (it logs one that does). */
  g_assert_null (strstr (log, "on vgicd's reaper thread"));
  for (guint i = 0; i < G_N_ELEMENTS (hold); i++)
    close (hold[i]);
}

/* The same sent by a connection the door refuses at accept(), its bytes
 * and descriptors queued before vgicd took it (MaxConnectionsPerProcess=1,
 * and this process holds one): the door's close of it is the reaper's
 * too. */
static void
test_lingering_descriptors_refused (void)
{
  g_autoptr (VgicdHarness) h =
    harness_accepting_fds ("Mode=auto\nAllowUsers=root\nMaxConnectionsPerProcess=1\n");
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int hold, t, first, refused, pair[2];

  g_strlcpy (a.sun_path, h->socket_path, sizeof a.sun_path);
  first = raw_peer_connect (h);
  t = lingering_tcp (3600, &hold);
  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
  send_with_fd (pair[0], "t", 1, t);
  close (t);
  /* vgicd stopped meanwhile, so that all is queued before its accept(). */
  refused = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  vgicd_stop (h);
  g_assert_cmpint (connect (refused, (struct sockaddr *) &a, sizeof a), ==, 0);
  send_with_fd (refused, "", 1, pair[1]);
  close (pair[1]);
  g_assert_cmpint (kill (h->vgicd_pid, SIGCONT), ==, 0);
  g_assert_true (raw_peer_closed (refused, VGICD_TEST_PATIENCE_MS));
  close (refused);
  close (pair[0]);
  /* Answered by the main loop, which made the door's close. */
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
  close (first);
  close (hold);
}

/* Run vgicd-peer (a QEMU of another process) against @h: it attaches a VM
 * named @name and leaves. */
static void
run_other_peer (VgicdHarness *h, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = NULL, *env_lib = NULL, *libdir = NULL;
  const char *argv[4], *envp[2];
  int status;

  g_assert_nonnull (g_getenv ("VGICD_PEER"));
  g_assert_nonnull (g_getenv ("VGICD_LIBVGICD"));
  libdir = g_path_get_dirname (g_getenv ("VGICD_LIBVGICD"));
  env_lib = g_strdup_printf ("LD_LIBRARY_PATH=%s", libdir);
  argv[0] = g_getenv ("VGICD_PEER"), argv[1] = h->address, argv[2] = name, argv[3] = NULL;
  envp[0] = env_lib, envp[1] = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, (char **) envp, G_SPAWN_DEFAULT, NULL,
                               NULL, &out, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (out, ==, "attached\n");
  g_assert_true (g_spawn_check_wait_status (status, NULL));
}

/* @c saves, then loads its record cut 7 bytes short @n times: each
 * refused before its first write, the cheapest operation a QEMU can make
 * vgicd log and count. */
static void
refused_loads (VgicdClient *c, guint n)
{
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < n; i++)
    {
      g_assert_false (vgicd_client_load (c, g_bytes_get_data (record, NULL),
                                         g_bytes_get_size (record) - 7, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
      g_clear_error (&error);
    }
}

/* A compromised QEMU makes vgicd write a line per cheap call: here 600
 * loads refused before their first write, and 100 connections closed for
 * what they sent.  Where each was a line, journald's rate limit on vgicd
 * (10,000 in 30 s) would drop every VM's lines after a few seconds of it.
 * The process gets its share, LogLinesPerProcess= (60 here: 60 at once,
 * then one a second); the rest are counted, one notice says so, and the
 * process's next line after a second says how many were not.  Every load
 * is still counted; a VM of another process is logged as ever. */
#define FLOOD_LOADS 600
#define FLOOD_CLOSED 100
#define LOG_SHARE 60
static void
test_log_share (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (
    vgicd_test_bin, vgicd_test_policy,
    "Mode=auto\nAllowUsers=root\nLogLinesPerProcess=" G_STRINGIFY (LOG_SHARE) "\n", &error);
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) again = NULL;
  g_autofree char *log = NULL, *closed = NULL, *notice = NULL, *told = NULL;
  const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  guint64 suppressed, written, bound;
  gint64 t0, took;

  g_assert_no_error (error);
  t0 = g_get_monotonic_time ();
  c = attach (h, sim, s, "flood");
  refused_loads (c, FLOOD_LOADS);
  for (guint i = 0; i < FLOOD_CLOSED; i++)
    {
      int fd = raw_peer_connect (h);

      g_assert_cmpint (send (fd, junk, sizeof junk, MSG_NOSIGNAL), ==, sizeof junk);
      g_assert_true (raw_peer_closed (fd, VGICD_TEST_PATIENCE_MS));
      close (fd);
    }
  took = g_get_monotonic_time () - t0;

  /* Everything counted (GetStats waits for the journal records). */
  g_assert_cmpuint (vgicd_harness_stat (h, "failures"), ==, FLOOD_LOADS);
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, FLOOD_CLOSED);
  suppressed = vgicd_harness_stat (h, "log-suppressed");
  log = vgicd_harness_read_log (h);
  closed = g_strdup_printf ("closed the connection of a peer (pid %d)", (int) getpid ());
  written = vgicd_harness_count (log, "VM flood: ") + vgicd_harness_count (log, closed);
  bound = LOG_SHARE + (guint64) (took / G_USEC_PER_SEC) + 1;
  g_test_message ("%u refused loads and %u closed connections in %.2f s: %" G_GUINT64_FORMAT
                  " lines written (the share allowed %" G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT
                  " counted in log-suppressed", FLOOD_LOADS, FLOOD_CLOSED,
                  (double) took / G_USEC_PER_SEC, written, bound, suppressed);
  g_assert_cmpuint (written, <=, bound);
  /* Not one lost: each line the flood caused (an attach, a save, a refusal
   * each, a close each) was written or counted. */
  g_assert_cmpuint (written + suppressed, >=, 2 + FLOOD_LOADS + FLOOD_CLOSED);
  notice = g_strdup_printf ("pid %d (VM flood) causes more than its %d log lines a minute",
                            (int) getpid (), LOG_SHARE);
  g_assert_nonnull (strstr (log, notice));

  /* Another process's VM is logged. */
  run_other_peer (h, "bystander");
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions-total"), ==, 2);
  g_clear_pointer (&log, g_free);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "VM bystander: attached"));

  /* A second on, the share has room again: the flood's VM saves, and its
   * line says how many were not logged. */
  g_usleep (G_USEC_PER_SEC + G_USEC_PER_SEC / 10);
  g_assert_true (vgicd_client_save (c, &again, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (vgicd_harness_stat (h, "saves"), ==, 2);
  g_clear_pointer (&log, g_free);
  log = vgicd_harness_read_log (h);
  told = g_strdup_printf (" lines of pid %d not logged before it)", (int) getpid ());
  g_assert_nonnull (strstr (log, told));
}

/* The same flood, with vgicd's notifications to systemd caught on a
 * socket of the test's (NOTIFY_SOCKET, as systemd passes it), read only
 * at the end, as a PID 1 that is busy reads it: STATUS= at most once a
 * second however fast the totals change, and the last one sent says the
 * last totals.  Where vgicd sent one for every change (a load refused, a
 * session gone), one blocked in sd_notify() once the queue was full
 * (net.unix.max_dgram_qlen, 10 by the kernel, 512 where systemd sets it),
 * and vgicd's main loop with it: the session never ended. */
static void
test_status_coalesced (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("vgicd-notify-XXXXXX", &error);
  g_autofree char *path = NULL, *last = NULL;
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  g_autoptr (VgicdHarness) h = NULL;
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  guint statuses = 0;
  gint64 t0, took;
  int sock;

  g_assert_no_error (error);
  path = g_build_filename (dir, "notify", NULL);
  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  sock = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (bind (sock, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_setenv ("NOTIFY_SOCKET", path, TRUE);
  h = harness ("auto");
  g_unsetenv ("NOTIFY_SOCKET");

  t0 = g_get_monotonic_time ();
  c = attach (h, sim, s, "busy");
  refused_loads (c, FLOOD_LOADS);
  g_clear_pointer (&c, vgicd_client_free);
  wait_sessions (h, 0);
  took = g_get_monotonic_time () - t0;
  /* The last change's STATUS= is sent within the second after it. */
  for (;;)
    {
      struct pollfd p = { sock, POLLIN, 0 };
      char buf[1024];
      ssize_t n;

      if (poll (&p, 1, 3000) != 1)
        break;
      n = recv (sock, buf, sizeof buf - 1, 0);
      g_assert_cmpint (n, >, 0);
      buf[n] = 0;
      if (strstr (buf, "STATUS="))
        {
          statuses++;
          g_free (last);
          last = g_strdup (strstr (buf, "STATUS="));
        }
    }
  g_test_message ("%u changes in %.2f s: %u STATUS= sent, the last \"%s\"", FLOOD_LOADS + 3,
                  (double) took / G_USEC_PER_SEC, statuses, last);
  /* One at start, one a second after, and the last. */
  g_assert_cmpuint (statuses, <=, 3 + (guint) (took / G_USEC_PER_SEC));
  g_assert_cmpstr (last, ==, "STATUS=mode auto, kernel batch unknown, 0 session(s), 1 saves, 0 loads");
  close (sock);
  g_unlink (path);
  g_rmdir (dir);
}

/* A peer reaches only the session it attached: another connection does not
 * even see it. */
/* Whether this kernel has SO_PASSRIGHTS (Linux 6.16); else the test is
 * skipped, saying so. */
static gboolean
kernel_refuses_fds (void)
{
#ifdef SO_PASSRIGHTS
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0;
  gboolean has;

  g_assert_cmpint (fd, >=, 0);
  has = setsockopt (fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof off) == 0;
  if (!has)
    g_assert_cmpint (errno, ==, ENOPROTOOPT);
  close (fd);
  if (!has)
    g_test_skip ("this kernel has no SO_PASSRIGHTS (Linux 6.16): vgicd reads around "
                 "descriptors, /vgicd/admitted-peer-bounds tests that");
  return has;
#else
  g_test_skip ("SO_PASSRIGHTS has no number known here on this architecture");
  return FALSE;
#endif
}

/* Where the kernel can refuse descriptors at the sender (Linux 6.16),
 * vgicd has it do so on its listening socket and its step channels: a
 * compromised QEMU's sendmsg() with SCM_RIGHTS fails with EPERM on the bus
 * connection, before vgicd accepted it, and on the step channel, and
 * nothing reaches vgicd, which serves the same peer on as before (the
 * older kernels' defence closes it: /vgicd/admitted-peer-bounds). */
static void
test_descriptors_refused_by_kernel (void)
{
  static const char *const features[] = { "channel", "record-window", NULL };
  const guint8 save[9] = { VGICD_CHANNEL_SAVE };
  const Shape *s = &shapes[1];
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (GUnixFDList) list = g_unix_fd_list_new ();
  g_autoptr (GVariant) done = NULL;
  g_autofree guint8 *blob = NULL, *plain = NULL;
  g_autofree char *log = NULL;
  const char *action = NULL;
  OldPeer p = { 0 };
  guint fds0, steps;
  gsize len, plain_len;
  char buf[4096];
  int fd, early;

  if (!kernel_refuses_fds ())
    return;
  h = harness ("auto");
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "descriptors peers send: refused by the kernel (SO_PASSRIGHTS)"));
  fds0 = vgicd_harness_open_fds (h);
  g_assert_cmpuint (fds0, >, 0);
  for (guint i = 0; i < 200; i++)
    g_unix_fd_list_append (list, 0, NULL);	/* dups of stdin, the list's */
  blob = raw_call (1, list, &len);
  plain = raw_call (2, NULL, &plain_len);

  /* Before vgicd has accepted the connection: with its first byte. */
  {
    struct sockaddr_un a = { .sun_family = AF_UNIX };

    early = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_strlcpy (a.sun_path, h->socket_path, sizeof a.sun_path);
    g_assert_cmpint (connect (early, (struct sockaddr *) &a, sizeof a), ==, 0);
    g_assert_cmpint (fd_sendmsg (early, "", 1, g_unix_fd_list_peek_fds (list, NULL), 200), ==, -1);
    g_assert_cmpint (errno, ==, EPERM);
    close (early);
  }

  /* After the handshake, with a call: refused, and the peer's next call
   * answered. */
  fd = raw_peer_connect (h);
  g_assert_cmpint (fd_sendmsg (fd, blob, len, g_unix_fd_list_peek_fds (list, NULL), 200), ==, -1);
  g_assert_cmpint (errno, ==, EPERM);
  g_assert_cmpint (send (fd, plain, plain_len, MSG_NOSIGNAL), ==, (gssize) plain_len);
  g_assert_cmpint (recv (fd, buf, sizeof buf, 0), >, 0);
  close (fd);

  /* On the step channel, with a request: refused, and the channel works. */
  peer_attach (&p, h, src, s, "passes", features);
  g_assert_cmpint (fd_sendmsg (p.channel, save, sizeof save, g_unix_fd_list_peek_fds (list, NULL),
                               1), ==, -1);
  g_assert_cmpint (errno, ==, EPERM);
  done = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  old_peer_clear (&p);

  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "saves"), ==, 1);
  g_clear_pointer (&log, g_free);
  log = vgicd_harness_read_log (h);
  g_assert_null (strstr (log, "file descriptors"));
}

/* Under socket activation the QEMU whose connection starts vgicd is queued
 * before vgicd has set anything on the listening socket, and its
 * connection inherits the listener's setting of then: vgicd sets the
 * refusal again on each connection it accepts.  Here vgicd starts a
 * second after systemd-socket-activate listens (a wrapper sleeps), and
 * this peer connects in that second. */
static void
test_descriptors_refused_queued_before_start (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *dir = NULL, *wrapper = NULL, *script = NULL, *log = NULL;
  g_autofree guint8 *blob = NULL, *plain = NULL;
  gsize len, plain_len;
  char buf[4096];
  int fd, in = 0;	/* stdin, passed */

  if (!kernel_refuses_fds ())
    return;
  dir = g_dir_make_tmp ("vgicd-slow-XXXXXX", &error);
  g_assert_no_error (error);
  wrapper = g_build_filename (dir, "vgicd-slow", NULL);
  script = g_strdup_printf ("#!/bin/sh\nsleep 1\nexec '%s' \"$@\"\n", vgicd_test_bin);
  g_assert_true (g_file_set_contents (wrapper, script, -1, &error));
  g_assert_cmpint (chmod (wrapper, 0755), ==, 0);
  h = vgicd_harness_start_activated (wrapper, vgicd_test_policy,
                                     "Mode=auto\nAllowUsers=root\n", &error);
  g_assert_no_error (error);
  /* Listening already (systemd-socket-activate's), vgicd not yet: the
   * handshake's answer waits for it. */
  fd = raw_peer_connect (h);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "(socket-activated)"));
  g_assert_nonnull (strstr (log, "descriptors peers send: refused by the kernel"));
  blob = raw_call (1, NULL, &len);
  plain = raw_call (2, NULL, &plain_len);
  g_assert_cmpint (fd_sendmsg (fd, blob, len, &in, 1), ==, -1);
  g_assert_cmpint (errno, ==, EPERM);
  g_assert_cmpint (send (fd, plain, plain_len, MSG_NOSIGNAL), ==, (gssize) plain_len);
  g_assert_cmpint (recv (fd, buf, sizeof buf, 0), >, 0);
  close (fd);
  g_clear_pointer (&h, vgicd_harness_stop);
  g_unlink (wrapper);
  g_rmdir (dir);
}

/* A peer closed by both of vgicd's guards at once: a signal (which the
 * GDBus filter closes a peer for: vgicd's protocol has none) and, in the
 * next write, a header no D-Bus message has (which the relay closes it
 * for).  The relay passes the signal to GDBus before it reads the header,
 * and each side used to count the peer it closed: peers-closed went up
 * by two for one peer, in most rounds. */
#define BOTH_GUARDS_ROUNDS 40
static void
test_closed_once (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                                                    "Mode=auto\nAllowUsers=root\n", &error);
  g_autoptr (GDBusMessage) m = g_dbus_message_new_signal ("/org/vgicd/Helper1",
                                                          "org.vgicd.Test", "Hello");
  g_autofree guint8 *blob = NULL;
  const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  g_autofree char *log = NULL;
  gsize len;

  g_assert_no_error (error);
  g_dbus_message_set_serial (m, 1);
  blob = g_dbus_message_to_blob (m, &len, G_DBUS_CAPABILITY_FLAGS_NONE, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < BOTH_GUARDS_ROUNDS; i++)
    {
      int fd = raw_peer_connect (h);

      g_assert_cmpint (send (fd, blob, len, MSG_NOSIGNAL), ==, (gssize) len);
      /* A pause the length of a relay's read, rounds apart, so that the
       * two writes are read apart in some rounds, together in others. */
      g_usleep (i % 4 * 50);
      (void) send (fd, junk, sizeof junk, MSG_NOSIGNAL);	/* EPIPE: closed already */
      g_assert_true (raw_peer_closed (fd, VGICD_TEST_PATIENCE_MS));
      close (fd);
    }
  log = vgicd_harness_read_log (h);
  g_test_message ("%u peers closed: peers-closed %" G_GUINT64_FORMAT ", by the filter %u, "
                  "by the relay %u", BOTH_GUARDS_ROUNDS, vgicd_harness_stat (h, "peers-closed"),
                  vgicd_harness_count (log, "not a call awaiting an answer"),
                  vgicd_harness_count (log, "endianness byte"));
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, BOTH_GUARDS_ROUNDS);
  g_assert_cmpuint (vgicd_harness_count (log, "closed the connection of a peer"), ==,
                    BOTH_GUARDS_ROUNDS);
}

/* A peer vgicd closed for what it sent leaves the door's count of its
 * process's connections when its socket closes, not when GDBus says
 * "closed" on the main loop (seconds later on a busy host): the same
 * process connecting again at once is admitted.  Before, a loaded CI
 * run's closed-once refused its 33rd peer at MaxConnectionsPerProcess=
 * (32); here the bound is 1, and rounds alternate the relay's close (a
 * header no message has) and the bus filter's (a signal). */
static void
test_closed_peer_leaves_door (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h =
    vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                         "Mode=auto\nAllowUsers=root\nMaxConnectionsPerProcess=1\n", &error);
  g_autoptr (GDBusMessage) m = g_dbus_message_new_signal ("/org/vgicd/Helper1",
                                                          "org.vgicd.Test", "Hello");
  g_autofree guint8 *blob = NULL;
  const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  gsize len;

  g_assert_no_error (error);
  g_dbus_message_set_serial (m, 1);
  blob = g_dbus_message_to_blob (m, &len, G_DBUS_CAPABILITY_FLAGS_NONE, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < 10; i++)
    {
      int fd = raw_peer_connect (h);	/* fails the test if vgicd refuses it */

      if (i % 2)
        g_assert_cmpint (send (fd, blob, len, MSG_NOSIGNAL), ==, (gssize) len);
      else
        g_assert_cmpint (send (fd, junk, sizeof junk, MSG_NOSIGNAL), ==, sizeof junk);
      g_assert_true (raw_peer_closed (fd, VGICD_TEST_PATIENCE_MS));
      close (fd);
    }
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 10);
}

static void
test_sessions_are_private (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = attach (h, sim, s, "owner");
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) other = NULL;
  g_autoptr (GVariant) reply = NULL;

  g_assert_cmpstr (vgicd_client_get_mode (c), ==, "auto");

  other = g_dbus_connection_new_for_address_sync (h->address,
                                                  G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                  NULL, NULL, &error);
  g_assert_no_error (error);
  reply = g_dbus_connection_call_sync (other, NULL, "/org/vgicd/Session1/1",
                                       "org.vgicd.Session1", "Save", NULL, NULL,
                                       G_DBUS_CALL_FLAGS_NONE, 2000, NULL, &error);
  g_assert_null (reply);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD);
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/protocol-1-peer", test_protocol1_peer);
  g_test_add_func ("/vgicd/channel-refuses-garbage", test_channel_refuses_garbage);
  g_test_add_func ("/vgicd/channel-peer-does-not-read", test_channel_peer_does_not_read);
  g_test_add_func ("/vgicd/report-error-not-errno", test_report_error_not_errno);
  g_test_add_func ("/vgicd/attach-names", test_attach_names);
  g_test_add_func ("/vgicd/admitted-peer-bounds", test_admitted_peer_bounds);
  g_test_add_func ("/vgicd/lingering-descriptors", test_lingering_descriptors);
  g_test_add_func ("/vgicd/lingering-descriptors-refused", test_lingering_descriptors_refused);
  g_test_add_func ("/vgicd/log-share", test_log_share);
  g_test_add_func ("/vgicd/status-coalesced", test_status_coalesced);
  g_test_add_func ("/vgicd/closed-once", test_closed_once);
  g_test_add_func ("/vgicd/closed-peer-leaves-door", test_closed_peer_leaves_door);
  g_test_add_func ("/vgicd/descriptors-refused-by-kernel", test_descriptors_refused_by_kernel);
  g_test_add_func ("/vgicd/descriptors-refused-queued-before-start",
                   test_descriptors_refused_queued_before_start);
  g_test_add_func ("/vgicd/sessions-are-private", test_sessions_are_private);
  return g_test_run ();
}
