/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-stream.c - what an admitted peer can make vgicd hold through
 * its D-Bus byte stream (the relay, daemon/vgicd-relay.c): descriptors sent
 * with an unfinished message, and a message declaring 128 MiB; and that the
 * relay's own side of the handshake takes what GLib's clients send.  Each
 * attacker is a process of its own, as a compromised QEMU is, on a raw
 * socket past the D-Bus handshake (as root, on the harness's AllowUsers).
 */
#define _GNU_SOURCE /* prlimit */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgicd-test.h"
#include "vgicd/protocol.h"

#define FDS_PER_SEND 253	/* SCM_MAX_FD: the most the kernel takes per sendmsg */

/* The address and the handshake lines, made before fork(): the attackers
 * use only system calls (the test has threads). */
typedef struct {
  struct sockaddr_un sa;
  char auth[64];	/* "\0AUTH EXTERNAL <hex uid>\r\n", auth_len bytes */
  gsize auth_len;
} Target;

static void
target_init (Target *t, VgicdHarness *h)
{
  g_autofree char *uid = g_strdup_printf ("%u", (guint) getuid ());
  g_autoptr (GString) s = g_string_new (NULL);

  memset (t, 0, sizeof *t);
  t->sa.sun_family = AF_UNIX;
  g_assert_cmpuint (strlen (h->socket_path), <, sizeof t->sa.sun_path);
  strcpy (t->sa.sun_path, h->socket_path);
  g_string_append_c (s, 0);
  g_string_append (s, "AUTH EXTERNAL ");
  for (const char *c = uid; *c; c++)
    g_string_append_printf (s, "%02x", (guint) (guchar) *c);
  g_string_append (s, "\r\n");
  g_assert_cmpuint (s->len, <, sizeof t->auth);
  memcpy (t->auth, s->str, s->len);
  t->auth_len = s->len;
}

/* Read one line (to "\n"); FALSE at end of file or if it does not start
 * with @prefix.  System calls only. */
static gboolean
read_reply (int fd, const char *prefix)
{
  char line[256];
  gsize n = 0;

  while (n < sizeof line - 1)
    {
      if (read (fd, line + n, 1) != 1)
        return FALSE;
      if (line[n++] == '\n')
        break;
    }
  line[n] = 0;
  return strncmp (line, prefix, strlen (prefix)) == 0;
}

/* Connect and finish the D-Bus handshake as libvgicd does; -1 if vgicd
 * refused or closed.  System calls only. */
static int
raw_connect (const Target *t)
{
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0 || connect (fd, (const struct sockaddr *) &t->sa, sizeof t->sa) < 0 ||
      send (fd, t->auth, t->auth_len, MSG_NOSIGNAL) != (ssize_t) t->auth_len ||
      !read_reply (fd, "OK ") ||
      send (fd, "NEGOTIATE_UNIX_FD\r\n", 19, MSG_NOSIGNAL) != 19 ||
      !read_reply (fd, "AGREE_UNIX_FD") ||
      send (fd, "BEGIN\r\n", 7, MSG_NOSIGNAL) != 7)
    {
      if (fd >= 0)
        close (fd);
      return -1;
    }
  return fd;
}

/* The fixed header of a method call whose body is @body bytes (no header
 * fields: what follows is never read as a message, it never ends). */
static void
call_header (guint8 head[16], guint32 body)
{
  guint32 le = GUINT32_TO_LE (body), serial = GUINT32_TO_LE (1), fields = 0;

  head[0] = 'l', head[1] = 1, head[2] = 0, head[3] = 1;
  memcpy (head + 4, &le, 4);
  memcpy (head + 8, &serial, 4);
  memcpy (head + 12, &fields, 4);
}

/* Does vgicd's log say @needle, within VGICD_TEST_PATIENCE_MS? (It logs
 * after it closed, on another thread.) */
static gboolean
log_says (VgicdHarness *h, const char *needle)
{
  g_autofree char *log = vgicd_harness_wait_log (h, needle, VGICD_TEST_PATIENCE_MS);

  return strstr (log, needle) != NULL;
}

static gboolean
vgicd_alive (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) h->vgicd_pid);
  g_autofree char *stat = NULL;
  const char *end;

  if (!g_file_get_contents (path, &stat, NULL, NULL) || !(end = strrchr (stat, ')')))
    return FALSE;
  return end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}

/* What an attacker child tells its parent. */
typedef struct {
  guint connections;	/* admitted past the handshake */
  guint closed;		/* of those, closed by vgicd */
  guint sends;		/* sendmsg() calls that went */
  guint64 bytes;	/* bytes of the unfinished message that went */
} Report;

/*
 * N1(b): descriptors in an unfinished message.  The child finishes the
 * handshake, sends the header of a 64 KiB call, then its body a byte per
 * sendmsg(), each carrying 253 descriptors, and never finishes it; when
 * vgicd closes the connection it opens another, until told to stop (or
 * 2,000 connections).  It keeps up to 8 connections open at once.
 */
static void
fd_flood_child (const Target *t, int stop, int report)
{
  int fds[FDS_PER_SEND], open[8];
  char cbuf[CMSG_SPACE (sizeof fds)];
  guint nopen = 0;
  Report r = { 0 };
  guint8 head[16];

  for (guint i = 0; i < FDS_PER_SEND; i++)
    if ((fds[i] = dup (2)) < 0)
      _exit (2);
  call_header (head, 65536);
  while (r.connections < 2000)
    {
      struct pollfd p = { stop, POLLIN, 0 };
      int fd;

      if (poll (&p, 1, 0) > 0)
        break;
      fd = raw_connect (t);
      if (fd < 0)
        {
          usleep (1000);	/* refused at the door: its bounds, not this test's */
          continue;
        }
      r.connections++;
      if (send (fd, head, sizeof head, MSG_NOSIGNAL) != sizeof head)
        {
          r.closed++;
          close (fd);
          continue;
        }
      for (guint i = 0; i < 256; i++)
        {
          struct iovec iov = { (void *) "x", 1 };
          struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                               .msg_control = cbuf, .msg_controllen = sizeof cbuf };
          struct cmsghdr *cm = CMSG_FIRSTHDR (&mh);

          cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS;
          cm->cmsg_len = CMSG_LEN (sizeof fds);
          memcpy (CMSG_DATA (cm), fds, sizeof fds);
          if (sendmsg (fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
            {
              if (errno == EAGAIN || errno == ETOOMANYREFS)
                {
                  usleep (1000);
                  continue;
                }
              r.closed++;	/* EPIPE, ECONNRESET: vgicd closed it */
              close (fd);
              fd = -1;
              break;
            }
          r.sends++;
          r.bytes++;
        }
      if (fd < 0)
        continue;
      /* Still open: hold it (unfinished), the oldest goes. */
      if (nopen == G_N_ELEMENTS (open))
        {
          close (open[0]);
          memmove (open, open + 1, sizeof open - sizeof open[0]);
          nopen--;
        }
      open[nopen++] = fd;
    }
  if (write (report, &r, sizeof r) != sizeof r)
    _exit (2);
  _exit (0);
}

static pid_t
spawn (void (*child) (const Target *, int, int), const Target *t, int *stop, int *report)
{
  int s[2], r[2];
  pid_t pid;

  g_assert_cmpint (pipe (s), ==, 0);
  g_assert_cmpint (pipe (r), ==, 0);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      close (s[1]);
      close (r[0]);
      child (t, s[0], r[1]);
    }
  close (s[0]);
  close (r[1]);
  *stop = s[1];
  *report = r[0];
  return pid;
}

/* Stop the child, take its report. */
static Report
finish (pid_t pid, int stop, int report)
{
  Report r = { 0 };
  int status;

  g_assert_cmpint (write (stop, "s", 1), ==, 1);
  g_assert_cmpint (read (report, &r, sizeof r), ==, sizeof r);
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  close (stop);
  close (report);
  return r;
}

static void
honest_save (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name)
{
  g_autoptr (VgicdClient) c = attach (h, sim, s, name);
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
}

/* N1(b), on a vgicd whose descriptor limit is 256 (the old vgicd took the
 * 253 descriptors of each byte as it read them, ran out at the second and
 * aborted at the next connection): vgicd stays up, holds few descriptors
 * throughout (and, on its reaper thread, one read's worth at most of an
 * attacker's), closes each attacking connection with the reason, and an
 * honest QEMU attaches and saves during the attack and after it. */
static void
test_descriptors_in_unfinished_message (void)
{
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdHarness) h = NULL;
  const struct rlimit tight = { 256, 256 };
  Target t;
  Report r;
  guint fds0, fds_max = 0;
  int stop, report;
  pid_t child;

  h = harness_accepting_fds ("Mode=auto\nAllowUsers=root\nMaxHandshakes=16\n");
  /* As a LimitNOFILE=256 would set it, on vgicd alone: both limits, since
   * vgicd raises a soft limit to the hard one at start (a soft limit
   * lowered before the start, as this test did, left it at the hard). */
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);

  honest_save (h, sim, s, "before");
  fds0 = vgicd_harness_open_fds (h);
  g_assert_cmpuint (fds0, >, 0);
  target_init (&t, h);
  child = spawn (fd_flood_child, &t, &stop, &report);
  for (guint i = 0; i < 20; i++)
    {
      g_autofree char *name = g_strdup_printf ("during-%u", i);

      g_assert_true (vgicd_alive (h));
      fds_max = MAX (fds_max, vgicd_harness_open_fds (h));
      honest_save (h, sim, s, name);
      fds_max = MAX (fds_max, vgicd_harness_open_fds (h));
    }
  r = finish (child, stop, report);
  g_test_message ("attacker: %u connections, %u closed by vgicd, %u sends of %d descriptors; "
                  "vgicd's descriptors: %u before, at most %u during",
                  r.connections, r.closed, r.sends, FDS_PER_SEND, fds0, fds_max);
  g_assert_true (vgicd_alive (h));
  honest_save (h, sim, s, "after");
  g_assert_cmpuint (r.connections, >, 0);
  /* A few connections, each a relay's three sockets, and the honest one;
   * on vgicd's reaper thread (vgicd-reaper.c), the copies one peek makes
   * of a closed attacker's queued descriptors to defuse them (253 at
   * most), and the closed attackers' sockets waiting for it (one each):
   * no thread that serves a peer ever holds one. */
  g_assert_cmpuint (fds_max, <=, fds0 + 48 + 253 + r.connections);
  g_assert_true (log_says (h, "it sent file descriptors, which vgicd's protocol never passes"));
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), >=, 1);
}

/*
 * N3: a message declaring 128 MiB.  The child sends its header, then its
 * body in 64 KiB writes until vgicd closes the connection or 120 MiB went,
 * then reports and holds the connection until told to stop.
 */
static void
big_message_child (const Target *t, int stop, int report)
{
  static guint8 body[64 * 1024];
  Report r = { 0 };
  guint8 head[16];
  char byte;
  int fd = raw_connect (t);

  if (fd < 0)
    _exit (2);
  r.connections = 1;
  call_header (head, 128 * 1024 * 1024 - 16);
  if (send (fd, head, sizeof head, MSG_NOSIGNAL) != sizeof head)
    r.closed = 1;
  while (!r.closed && r.bytes < 120 * 1024 * 1024)
    {
      ssize_t n = send (fd, body, sizeof body, MSG_NOSIGNAL);

      if (n <= 0)
        r.closed = 1;	/* EPIPE, ECONNRESET */
      else
        r.bytes += (guint64) n, r.sends++;
    }
  if (write (report, &r, sizeof r) != sizeof r)
    _exit (2);
  if (read (stop, &byte, 1) < 0)
    _exit (2);
  _exit (0);
}

/* N3: vgicd closes the connection at the message's header (the old vgicd
 * buffered all 120 MiB, waiting for the rest), its RSS stays where it
 * was, the closure is logged and counted, and an honest QEMU saves after. */
static void
test_oversized_message (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  guint64 rss0, rss1;
  struct pollfd p;
  Target t;
  Report r;
  int stop, report;
  pid_t child;

  honest_save (h, sim, s, "before");
  rss0 = vgicd_harness_status_kib (h, "VmRSS:");
  g_assert_cmpuint (rss0, >, 0);
  target_init (&t, h);
  child = spawn (big_message_child, &t, &stop, &report);
  /* The child reports when vgicd closed it, or after 120 MiB. */
  p = (struct pollfd) { report, POLLIN, 0 };
  g_assert_cmpint (poll (&p, 1, VGICD_TEST_PATIENCE_MS * 3), ==, 1);
  rss1 = vgicd_harness_status_kib (h, "VmRSS:");
  r = finish (child, stop, report);
  g_test_message ("attacker: %" G_GUINT64_FORMAT " bytes of a 128 MiB message sent, "
                  "closed by vgicd: %s; vgicd's RSS %" G_GUINT64_FORMAT " -> %"
                  G_GUINT64_FORMAT " KiB", r.bytes, r.closed ? "yes" : "no", rss0, rss1);
  g_assert_true (vgicd_alive (h));
  g_assert_cmpuint (r.closed, ==, 1);
  /* Closed at the header: what went is what the sockets' buffers took. */
  g_assert_cmpuint (r.bytes, <, 16 * 1024 * 1024);
  g_assert_cmpuint (rss1, <, rss0 + 32 * 1024);
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 1);
  g_assert_true (log_says (h, "it declared a D-Bus message of 134217728 bytes"));
  honest_save (h, sim, s, "after");
}

/* A client that claims no identity (AUTH EXTERNAL, then an empty DATA,
 * as GLib's does across user namespaces): the relay takes the socket's,
 * and the connection is served. */
static void
test_empty_identity (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocket) sock = NULL;
  g_autoptr (GSocketConnection) stream = NULL;
  g_autoptr (GDBusConnection) c = NULL;
  g_autoptr (GDBusMessage) call = NULL;
  g_autoptr (GDBusMessage) reply = NULL;
  Target t;
  int fd;

  target_init (&t, h);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &t.sa, sizeof t.sa), ==, 0);
  g_assert_cmpint (send (fd, "\0AUTH EXTERNAL\r\n", 16, MSG_NOSIGNAL), ==, 16);
  g_assert_true (read_reply (fd, "DATA"));
  g_assert_cmpint (send (fd, "DATA\r\n", 6, MSG_NOSIGNAL), ==, 6);
  g_assert_true (read_reply (fd, "OK "));
  g_assert_cmpint (send (fd, "BEGIN\r\n", 7, MSG_NOSIGNAL), ==, 7);
  /* The rest by GDBus, with no handshake of its own. */
  sock = g_socket_new_from_fd (fd, &error);
  g_assert_no_error (error);
  stream = g_socket_connection_factory_create_connection (sock);
  c = g_dbus_connection_new_sync (G_IO_STREAM (stream), NULL, G_DBUS_CONNECTION_FLAGS_NONE,
                                  NULL, NULL, &error);
  g_assert_no_error (error);
  call = g_dbus_message_new_method_call (NULL, VGICD_HELPER_PATH,
                                         "org.freedesktop.DBus.Introspectable", "Introspect");
  reply = g_dbus_connection_send_message_with_reply_sync (c, call, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                                          VGICD_TEST_BUDGET_MS, NULL, NULL,
                                                          &error);
  g_assert_no_error (error);
  g_assert_no_error (g_dbus_message_to_gerror (reply, &error) ? error : NULL);
  g_assert_nonnull (strstr (g_variant_get_string (
                      g_variant_get_child_value (g_dbus_message_get_body (reply), 0), NULL),
                    "org.vgicd.Helper1"));
}

/* A peer claiming another uid than its socket's is rejected, and one that
 * does not say it is D-Bus (no NUL byte) is closed; neither is served. */
static void
test_wrong_identity (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  g_autofree char *other = g_strdup_printf ("%u", (guint) getuid () + 1);
  g_autoptr (GString) auth = g_string_new ("AUTH EXTERNAL ");
  Target t;
  int fd;
  char buf[64];

  target_init (&t, h);
  for (const char *c = other; *c; c++)
    g_string_append_printf (auth, "%02x", (guint) (guchar) *c);
  g_string_append (auth, "\r\n");
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &t.sa, sizeof t.sa), ==, 0);
  g_assert_cmpint (send (fd, "", 1, MSG_NOSIGNAL), ==, 1);
  g_assert_cmpint (send (fd, auth->str, auth->len, MSG_NOSIGNAL), ==, (gssize) auth->len);
  g_assert_true (read_reply (fd, "REJECTED EXTERNAL"));
  close (fd);

  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &t.sa, sizeof t.sa), ==, 0);
  g_assert_cmpint (send (fd, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL), ==, 18);
  g_assert_cmpint (read (fd, buf, sizeof buf), ==, 0);
  close (fd);
  g_assert_true (log_says (h, "did not start with a NUL byte"));
}

/* The cap on a message's length, from both sides with GLib's own client:
 * a Load carrying 900 KiB (more than twice the largest record of a
 * 512-vCPU VM, 430,024 bytes) is answered (an error: this connection has
 * no session), one carrying 2 MiB closes the connection. */
static void
test_message_cap (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  gsize sizes[] = { 900 * 1024, 2 * 1024 * 1024 };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GDBusConnection) c =
        g_dbus_connection_new_for_address_sync (h->address,
                                                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                NULL, NULL, &error);
      g_autofree guint8 *record = g_malloc0 (sizes[i]);
      g_autoptr (GVariant) reply = NULL;

      g_assert_no_error (error);
      reply = g_dbus_connection_call_sync (
        c, NULL, "/org/vgicd/Session1/none", "org.vgicd.Session1", "Load",
        g_variant_new ("(@ay)", g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE, record,
                                                           sizes[i], 1)),
        NULL, G_DBUS_CALL_FLAGS_NONE, VGICD_TEST_BUDGET_MS, NULL, &error);
      g_assert_null (reply);
      g_test_message ("a Load of %" G_GSIZE_FORMAT " bytes: %s", sizes[i], error->message);
      if (i == 0)
        g_assert_true (g_dbus_error_is_remote_error (error));
      else
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CLOSED);
    }
  g_assert_true (log_says (h, "above the 1048576 bytes vgicd's largest may take"));
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 1);
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/stream/descriptors-in-unfinished-message",
                   test_descriptors_in_unfinished_message);
  g_test_add_func ("/vgicd/stream/oversized-message", test_oversized_message);
  g_test_add_func ("/vgicd/stream/message-cap", test_message_cap);
  g_test_add_func ("/vgicd/stream/empty-identity", test_empty_identity);
  g_test_add_func ("/vgicd/stream/wrong-identity", test_wrong_identity);
  return g_test_run ();
}
