/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-door.c - the door against processes that hold connections:
 * descriptors and connections bounded under a low descriptor limit while
 * one process finishes handshakes it never uses (N1(a)), four processes
 * keeping the door full of silent connections (N4), and the shedding
 * rule (the process holding the most loses its oldest; a newcomer of
 * another process gets in).  Every attacker is a process of its own,
 * forked from this one, and makes system calls only (this process has
 * threads); the honest QEMU is the real libvgicd against vgic-sim.
 */
#define _GNU_SOURCE /* prlimit */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgicd-test.h"

static int
raw_connect (const struct sockaddr_un *sa)
{
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd >= 0 && connect (fd, (const struct sockaddr *) sa, sizeof *sa) < 0)
    {
      close (fd);
      fd = -1;
    }
  return fd;
}

static void
socket_address (VgicdHarness *h, struct sockaddr_un *sa)
{
  *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
  g_assert_cmpuint (strlen (h->socket_path), <, sizeof sa->sun_path);
  strcpy (sa->sun_path, h->socket_path);
}

/* The D-Bus handshake a client sends, whole: the NUL, AUTH EXTERNAL of
 * this uid, BEGIN. */
static char *
handshake_bytes (void)
{
  g_autofree char *uid = g_strdup_printf ("%u", (guint) getuid ());
  GString *s = g_string_new (NULL);

  g_string_append_c (s, '\0');
  g_string_append (s, "AUTH EXTERNAL ");
  for (const char *c = uid; *c; c++)
    g_string_append_printf (s, "%02x", (guint) (guchar) *c);
  g_string_append (s, "\r\nBEGIN\r\n");
  return g_string_free (s, FALSE);
}

/* Whether @fd's peer (vgicd) has closed it: readable and at end of file
 * (vgicd never says anything on a connection these attackers hold). */
static gboolean
closed_by_vgicd (int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  char buf[256];

  if (poll (&p, 1, 0) <= 0)
    return FALSE;
  return recv (fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
}

/* Assert that vgicd closes @fd within the patience, unanswered. */
static void
assert_closed_by_vgicd (int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  char byte;

  g_assert_cmpint (poll (&p, 1, VGICD_TEST_PATIENCE_MS), ==, 1);
  g_assert_cmpint (recv (fd, &byte, 1, 0), <=, 0);
}

static gboolean
vgicd_alive (VgicdHarness *h)
{
  int status;

  return waitpid (h->vgicd_pid, &status, WNOHANG) == 0;
}

/* fork(), the child dying with this process (a failed assertion leaves
 * no attacker behind to hold the test runner's pipes). */
static pid_t
fork_attacker (void)
{
  pid_t child = fork ();

  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    prctl (PR_SET_PDEATHSIG, SIGKILL);
  return child;
}

static void
stop_child (pid_t child)
{
  int status;

  kill (child, SIGKILL);
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
}

/* An honest QEMU (this process) attaches a 4-vCPU VM and saves: TRUE, and
 * how long it took in s (*@took_s), when it was served.  Under the
 * reconnect flood below, at its limit, vgicd may refuse it at the door or
 * close it before it attaches (its bounds, counted): FALSE.  What must
 * never happen is the connect failing at once, as it did on the full
 * backlog before libvgicd waited for room ("Could not connect: Resource
 * temporarily unavailable").  The wait
 * itself may run out on a busy machine, where vgicd pauses its accepts
 * until the reaper has caught up (a Debian build beside the nested tier
 * once saw it), but only after the whole budget. */
static gboolean
honest_save (VgicdHarness *h, const char *name, double *took_s)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) sim = make_sim (&shapes[1], FALSE);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (VgicdClient) c = try_attach_uuid (h, sim, &shapes[1], name, NULL, &error);
  g_autoptr (GBytes) record = NULL;
  gint64 waited_us;

  if (c && vgicd_client_save (c, &record, &error))
    {
      *took_s = (g_get_monotonic_time () - t0) / 1e6;
      return TRUE;
    }
  g_assert_nonnull (error);
  waited_us = g_get_monotonic_time () - t0;
  g_test_message ("an honest QEMU not served (after %.2f s): %s", waited_us / 1e6,
                  error->message);
  g_assert_null (strstr (error->message, "Could not connect"));
  if (strstr (error->message, "no room in the backlog"))
    g_assert_cmpint (waited_us, >=, (gint64) VGICD_TEST_BUDGET_MS * 1000);
  return FALSE;
}

/* The same, asserted to succeed; how long it took is said (the slowest,
 * on a busy machine, is what a failure is read against). */
static void
honest_attach_and_save (VgicdHarness *h, const char *name)
{
  double took_s = 0;

  g_assert_true (honest_save (h, name, &took_s));
  g_test_message ("%s: attach and save in %.2f s", name, took_s);
}

/*
 * N1(a): one process opens connections, finishes the D-Bus handshake on
 * each and never attaches, as many as it can, reopening those vgicd
 * closes.  vgicd runs with a descriptor limit of 256, and its per-process
 * bounds raised to their largest, so that what binds is the descriptor
 * budget.  vgicd must stay up, hold fewer descriptors than the limit
 * minus a margin at every sample, and let an honest QEMU attach and save
 * meanwhile.  (Before: vgicd exited on its first GWakeup past the limit,
 * in a second or two.)
 */
#define N1_LIMIT 256
#define N1_MARGIN 32	/* descriptors vgicd must always keep free */
#define N1_HELD_MAX 1000

static G_NORETURN void
n1_attacker (const struct sockaddr_un *sa, const char *hello, gsize hello_len, guint *done)
{
  static int fds[N1_HELD_MAX];

  for (guint i = 0; i < N1_HELD_MAX; i++)
    fds[i] = -1;
  for (;;)
    for (guint i = 0; i < N1_HELD_MAX; i++)
      {
        struct pollfd p;
        char buf[256];

        if (fds[i] >= 0 && !closed_by_vgicd (fds[i]))
          continue;
        if (fds[i] >= 0)
          close (fds[i]);
        fds[i] = raw_connect (sa);
        if (fds[i] < 0)
          {
            usleep (1000);
            continue;
          }
        if (send (fds[i], hello, hello_len, MSG_NOSIGNAL) != (ssize_t) hello_len)
          continue;	/* closed: reopened on the next pass */
        /* "OK <guid>": the handshake is done once BEGIN is read. */
        p = (struct pollfd) { .fd = fds[i], .events = POLLIN };
        if (poll (&p, 1, 2000) == 1 && recv (fds[i], buf, sizeof buf, 0) > 2 &&
            buf[0] == 'O' && buf[1] == 'K')
          __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);
      }
}

static void
test_n1_handshaken_never_attached (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *hello = handshake_bytes ();
  gsize hello_len = 1 + strlen (hello + 1);
  struct rlimit tight = { N1_LIMIT, N1_LIMIT };
  struct sockaddr_un sa;
  guint *done = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  guint most = 0;
  pid_t child;

  g_assert_true (done != MAP_FAILED);
  h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nMaxConnectionsPerProcess=65536\n"
                           "MaxHandshakesPerProcess=1024\nMaxHandshakes=1024\n", &error);
  g_assert_no_error (error);
  /* As a LimitNOFILE=256 would set it (vgicd raises a soft limit to the
   * hard one at start, so both are set, on vgicd alone). */
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);
  socket_address (h, &sa);

  child = fork_attacker ();
  if (child == 0)
    {
      struct rlimit plenty = { N1_HELD_MAX + 64, N1_HELD_MAX + 64 };

      setrlimit (RLIMIT_NOFILE, &plenty);
      n1_attacker (&sa, hello, hello_len, done);
    }
  /* Until the attacker has finished more handshakes than vgicd has
   * descriptors, or the patience is spent. */
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20 && vgicd_alive (h) &&
                  __atomic_load_n (done, __ATOMIC_RELAXED) < 2 * N1_LIMIT; i++)
    {
      most = MAX (most, vgicd_harness_open_fds (h));
      g_usleep (20000);
    }
  g_test_message ("the attacker finished %u handshakes; vgicd held up to %u descriptors",
                  __atomic_load_n (done, __ATOMIC_RELAXED), most);
  g_assert_true (vgicd_alive (h));
  g_assert_cmpuint (__atomic_load_n (done, __ATOMIC_RELAXED), >=, N1_LIMIT / 2);
  /* The honest QEMU, with the attack still running. */
  for (int i = 0; i < 4; i++)
    {
      g_autofree char *name = g_strdup_printf ("honest-%d", i);

      honest_attach_and_save (h, name);
      most = MAX (most, vgicd_harness_open_fds (h));
    }
  g_assert_true (vgicd_alive (h));
  g_test_message ("vgicd held up to %u descriptors (limit %d)", most, N1_LIMIT);
  g_assert_cmpuint (most, <, N1_LIMIT - N1_MARGIN);
  stop_child (child);
  munmap (done, sizeof (guint));
}

/*
 * N4: four processes each hold the per-process maximum of silent
 * connections (MaxHandshakesPerProcess=8), together MaxHandshakes= (32),
 * and reopen each one as soon as vgicd closes it.  Honest attaches still
 * succeed, every one.  (Before: every honest connection was refused at
 * the full door.)
 */
#define N4_PROCESSES 4
#define N4_EACH 8

static G_NORETURN void
n4_attacker (const struct sockaddr_un *sa, guint *held)
{
  int fds[N4_EACH];

  for (guint i = 0; i < N4_EACH; i++)
    fds[i] = raw_connect (sa);
  for (;;)
    {
      guint open = 0;

      for (guint i = 0; i < N4_EACH; i++)
        {
          if (fds[i] >= 0 && closed_by_vgicd (fds[i]))
            {
              close (fds[i]);
              fds[i] = -1;
            }
          if (fds[i] < 0)
            fds[i] = raw_connect (sa);
          open += fds[i] >= 0;
        }
      __atomic_store_n (held, open, __ATOMIC_RELAXED);
      usleep (1000);
    }
}

static void
test_n4_four_fill_the_door (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h =
    vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                         "Mode=auto\nAllowUsers=root\nMaxHandshakes=32\n"
                         "MaxHandshakesPerProcess=8\n", &error);
  guint *held = mmap (NULL, N4_PROCESSES * sizeof (guint), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t children[N4_PROCESSES];
  struct sockaddr_un sa;
  guint base;

  g_assert_no_error (error);
  g_assert_true (held != MAP_FAILED);
  socket_address (h, &sa);
  base = vgicd_harness_open_fds (h);
  for (guint k = 0; k < N4_PROCESSES; k++)
    {
      children[k] = fork_attacker ();
      if (children[k] == 0)
        n4_attacker (&sa, &held[k]);
    }
  /* The door full: every attacker holds its 8, and vgicd most of the 32
   * (it closes and they reopen all the time). */
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
    {
      guint all = 0;

      for (guint k = 0; k < N4_PROCESSES; k++)
        all += __atomic_load_n (&held[k], __ATOMIC_RELAXED);
      if (all == N4_PROCESSES * N4_EACH &&
          vgicd_harness_open_fds (h) >= base + N4_PROCESSES * N4_EACH / 2)
        break;
      g_usleep (20000);
    }
  g_assert_cmpuint (vgicd_harness_open_fds (h), >=, base + N4_PROCESSES * N4_EACH / 2);
  for (int i = 0; i < 10; i++)
    {
      g_autofree char *name = g_strdup_printf ("honest-%d", i);

      honest_attach_and_save (h, name);
    }
  g_assert_true (vgicd_alive (h));
  for (guint k = 0; k < N4_PROCESSES; k++)
    stop_child (children[k]);
  munmap (held, N4_PROCESSES * sizeof (guint));
}

/*
 * A process reconnecting in a loop: four processes each connect, send a
 * whole handshake and a header no D-Bus message has (with descriptors, on
 * a kernel that lets peers send them), and close, as fast as they can.
 * Most are refused at the door (MaxHandshakesPerProcess=) or closed by the
 * relay; every one holds a descriptor until its last close, on the reaper
 * thread.  vgicd, at a limit of 256, must stay up, let go of them once the
 * attackers stop, and serve an honest QEMU after them; during the attack
 * an honest QEMU's connect() never fails at once: it waits for room in the
 * socket's backlog, which the attackers keep full (vgicd-client-dial.c;
 * before, it failed with EAGAIN and QEMU took its own path).  (Before: the reaper counted
 * vgicd's descriptors through /proc/self/fd for every socket and fell
 * behind; the refused connections, never charged to the door, took vgicd
 * to its limit, where GLib aborted, within a second.)
 */
#define LOOP_PROCESSES 4
#define LOOP_LIMIT 256
#define LOOP_MS 2000
#define LOOP_FDS 8	/* descriptors each connection sends, when it sends some */

static G_NORETURN void
loop_attacker (const struct sockaddr_un *sa, const char *hello, gsize hello_len,
               gboolean with_fds, guint *made)
{
  static const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  int null = open ("/dev/null", O_RDONLY | O_CLOEXEC);

  for (;;)
    {
      int fd = raw_connect (sa);

      if (fd < 0)
        {
          usleep (100);	/* the backlog is full: vgicd is not accepting */
          continue;
        }
      if (send (fd, hello, hello_len, MSG_NOSIGNAL) == (ssize_t) hello_len)
        {
          char control[CMSG_SPACE (LOOP_FDS * sizeof (int))] = { 0 };
          struct iovec iov = { (void *) junk, sizeof junk };
          struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

          if (with_fds)
            {
              struct cmsghdr *cm;

              mh.msg_control = control;
              mh.msg_controllen = sizeof control;
              cm = CMSG_FIRSTHDR (&mh);
              cm->cmsg_level = SOL_SOCKET;
              cm->cmsg_type = SCM_RIGHTS;
              cm->cmsg_len = CMSG_LEN (LOOP_FDS * sizeof (int));
              for (guint i = 0; i < LOOP_FDS; i++)
                memcpy (CMSG_DATA (cm) + i * sizeof (int), &null, sizeof null);
            }
          (void) sendmsg (fd, &mh, MSG_NOSIGNAL);
        }
      close (fd);
      __atomic_add_fetch (made, 1, __ATOMIC_RELAXED);
    }
}

static void
reconnect_loop (gboolean with_fds)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *hello = handshake_bytes ();
  gsize hello_len = 1 + strlen (hello + 1);
  struct rlimit tight = { LOOP_LIMIT, LOOP_LIMIT };
  struct sockaddr_un sa;
  guint *made = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t children[LOOP_PROCESSES];
  guint base, most = 0, after = 0, during = 0, refused = 0;
  guint64 pauses;
  gint64 end, stopped;
  double during_s = 0, served_s;
  g_autofree char *log = NULL;

  g_assert_true (made != MAP_FAILED);
  /* Descriptors a peer sends reach vgicd only on a kernel before 6.16
   * (SO_PASSRIGHTS): that kernel is what the variant with them plays. */
  if (with_fds)
    h = harness_accepting_fds ("Mode=auto\nAllowUsers=root\n");
  else
    {
      h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                               "Mode=auto\nAllowUsers=root\n", &error);
      g_assert_no_error (error);
    }
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);
  socket_address (h, &sa);
  base = vgicd_harness_open_fds (h);
  for (guint k = 0; k < LOOP_PROCESSES; k++)
    {
      children[k] = fork_attacker ();
      if (children[k] == 0)
        loop_attacker (&sa, hello, hello_len, with_fds, made);
    }
  /* Honest QEMUs one after the other while the attackers run: each
   * waits behind the attackers' connections in the backlog (128 of
   * them), and is served, or refused by vgicd when the attackers'
   * connections and descriptors hold what this limit of 256 leaves
   * peers (with descriptors: the reaper's copies of theirs, up to all
   * but 32 of the table; at the unit's 8192 there is room).  Its
   * connect never fails at once (honest_save()). */
  end = g_get_monotonic_time () + LOOP_MS * 1000;
  while (g_get_monotonic_time () < end && vgicd_alive (h))
    {
      g_autofree char *name = g_strdup_printf ("during-%u", during + refused);
      double took_s;

      most = MAX (most, vgicd_harness_open_fds (h));
      if (honest_save (h, name, &took_s))
        during++, during_s = MAX (during_s, took_s);
      else
        refused++;
      most = MAX (most, vgicd_harness_open_fds (h));
    }
  for (guint k = 0; k < LOOP_PROCESSES; k++)
    stop_child (children[k]);
  g_assert_true (vgicd_alive (h));
  /* The attackers' last connections may still wait in the backlog, and
   * their descriptors in the reaper's hands: the honest QEMU is served
   * once vgicd has let go of them. */
  stopped = g_get_monotonic_time ();
  while (!honest_save (h, "after", &served_s))
    {
      g_assert_cmpint (g_get_monotonic_time () - stopped, <, VGICD_TEST_PATIENCE_MS * 1000);
      g_usleep (50 * 1000);
    }
  served_s = (g_get_monotonic_time () - stopped) / 1e6;
  g_assert_true (vgicd_alive (h));
  /* ... and what the attack left is let go of. */
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
    {
      after = vgicd_harness_open_fds (h);
      if (after <= base + 4)
        break;
      g_usleep (20000);
    }
  pauses = vgicd_harness_stat (h, "accept-pauses");
  g_test_message ("%u connections in %d ms; vgicd held up to %u descriptors (limit %d), "
                  "%u before, %u after; %u honest saves during the attack (the slowest "
                  "%.2f s, attach included), %u not served, one after it (%.2f s); "
                  "%" G_GUINT64_FORMAT " accept pauses", __atomic_load_n (made, __ATOMIC_RELAXED),
                  LOOP_MS, most, LOOP_LIMIT, base, after, during, during_s, refused, served_s,
                  pauses);
  g_assert_cmpuint (__atomic_load_n (made, __ATOMIC_RELAXED), >=, 2 * LOOP_LIMIT);
  g_assert_cmpuint (after, <=, base + 4);
  log = vgicd_harness_read_log (h);
  g_assert_null (strstr (log, "Too many open files"));
  /* Each pause is counted, and the first is logged. */
  g_assert_cmpint (pauses > 0, ==, strstr (log, "not accepting connections") != NULL);
  munmap (made, sizeof (guint));
}

static void
test_reconnect_loop (void)
{
  reconnect_loop (FALSE);
}

static void
test_reconnect_loop_with_descriptors (void)
{
  reconnect_loop (TRUE);
}

/*
 * The shedding rule, step by step.  A silent holder is a child that
 * connects when told ('c') and reports which of its connections vgicd
 * has closed ('s': one letter a connection, o open, x closed).
 */
typedef struct {
  pid_t pid;
  int cmd, reply;	/* our ends of its pipes */
} Holder;

static G_NORETURN void
holder_main (const struct sockaddr_un *sa, int cmd, int reply)
{
  int fds[64];
  guint n = 0;
  char c;

  while (read (cmd, &c, 1) == 1)
    {
      if (c == 'c' && n < G_N_ELEMENTS (fds))
        {
          fds[n++] = raw_connect (sa);
          if (write (reply, fds[n - 1] >= 0 ? "k" : "e", 1) != 1)
            _exit (2);
        }
      else if (c == 's')
        {
          char line[G_N_ELEMENTS (fds) + 1];

          for (guint i = 0; i < n; i++)
            {
              if (fds[i] >= 0 && closed_by_vgicd (fds[i]))
                {
                  close (fds[i]);
                  fds[i] = -1;
                }
              line[i] = fds[i] >= 0 ? 'o' : 'x';
            }
          line[n] = '\n';
          if (write (reply, line, n + 1) != (ssize_t) n + 1)
            _exit (2);
        }
    }
  _exit (0);
}

static void
holder_start (Holder *hd, const struct sockaddr_un *sa)
{
  int cmd[2], reply[2];

  g_assert_cmpint (pipe (cmd), ==, 0);
  g_assert_cmpint (pipe (reply), ==, 0);
  hd->pid = fork_attacker ();
  if (hd->pid == 0)
    {
      close (cmd[1]);
      close (reply[0]);
      holder_main (sa, cmd[0], reply[1]);
    }
  close (cmd[0]);
  close (reply[1]);
  hd->cmd = cmd[1];
  hd->reply = reply[0];
}

static void
holder_stop (Holder *hd)
{
  close (hd->cmd);
  close (hd->reply);
  stop_child (hd->pid);
}

/* Connect @n more from @hd, and wait until vgicd holds @n more
 * descriptors than it did. */
static void
holder_connect (VgicdHarness *h, Holder *hd, guint n)
{
  guint before = vgicd_harness_open_fds (h);
  char c;

  for (guint i = 0; i < n; i++)
    {
      g_assert_cmpint (write (hd->cmd, "c", 1), ==, 1);
      g_assert_cmpint (read (hd->reply, &c, 1), ==, 1);
      g_assert_cmpint (c, ==, 'k');
    }
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 10 && vgicd_harness_open_fds (h) < before + n; i++)
    g_usleep (10000);
}

static char *
holder_status (Holder *hd)
{
  GString *s = g_string_new (NULL);
  char c;

  g_assert_cmpint (write (hd->cmd, "s", 1), ==, 1);
  while (read (hd->reply, &c, 1) == 1 && c != '\n')
    g_string_append_c (s, c);
  return g_string_free (s, FALSE);
}

/* Wait until @hd's status is @want (vgicd closes in its own time);
 * assert it. */
static void
holder_expect (Holder *hd, const char *want)
{
  g_autofree char *got = NULL;

  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
    {
      g_free (got);
      got = holder_status (hd);
      if (g_str_equal (got, want))
        break;
      g_usleep (20000);
    }
  g_assert_cmpstr (got, ==, want);
}

static void
test_shedding_rule (void)
{
  g_autoptr (GError) error = NULL;
  /* Deadlines far away: only the rule closes connections here. */
  g_autoptr (VgicdHarness) h =
    vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                         "Mode=auto\nAllowUsers=root\nMaxHandshakes=8\n"
                         "MaxHandshakesPerProcess=8\nFirstByteTimeout=60000\n"
                         "HandshakeTimeout=60000\n", &error);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autoptr (VgicdClient) honest = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autofree char *log = NULL;
  struct sockaddr_un sa;
  Holder a, b;

  g_assert_no_error (error);
  socket_address (h, &sa);
  holder_start (&a, &sa);
  holder_start (&b, &sa);
  /* The door full: A holds 6, B 2. */
  holder_connect (h, &a, 6);
  holder_connect (h, &b, 2);
  /* A newcomer of another process (the honest QEMU) gets in: A, holding
   * the most, loses its oldest. */
  honest = attach (h, sim, s, "newcomer");
  g_assert_true (vgicd_client_save (honest, &record, &error));
  g_assert_no_error (error);
  holder_expect (&a, "xooooo");
  holder_expect (&b, "oo");
  /* Full again (A 6, B 2); B's next gets in, and A loses its oldest. */
  holder_connect (h, &a, 1);
  holder_connect (h, &b, 1);
  holder_expect (&a, "xxooooo");
  holder_expect (&b, "ooo");
  /* A newcomer of the process holding the most is itself refused:
   * nothing of anyone else's is shed. */
  holder_connect (h, &a, 1);
  holder_expect (&a, "xxooooox");
  holder_expect (&b, "ooo");
  g_assert_true (vgicd_alive (h));
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 3);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "shed"));
  holder_stop (&a);
  holder_stop (&b);
}

/*
 * accept() failing with EMFILE: vgicd's descriptor limit cut to what it
 * holds (something outside the door's count took the rest).  Each
 * connection is accepted with the spare descriptor and closed, counted,
 * instead of staying in the backlog while vgicd spins on a readable
 * socket (GSocketService warns and accepts again at once), and counted
 * once; with the limit back, the honest QEMU attaches.
 */
#define EMFILE_TRIES 20
static void
test_emfile_sheds (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  struct rlimit plenty, none;
  struct sockaddr_un sa;
  guint64 refused = vgicd_harness_stat (h, "refused");
  int fds[EMFILE_TRIES];

  socket_address (h, &sa);
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, NULL, &plenty), ==, 0);
  none = (struct rlimit) { vgicd_harness_open_fds (h), plenty.rlim_max };
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &none, NULL), ==, 0);
  for (guint i = 0; i < EMFILE_TRIES; i++)
    {
      fds[i] = raw_connect (&sa);
      g_assert_cmpint (fds[i], >=, 0);
    }
  for (guint i = 0; i < EMFILE_TRIES; i++)
    {
      assert_closed_by_vgicd (fds[i]);
      close (fds[i]);
    }
  g_assert_true (vgicd_alive (h));
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &plenty, NULL), ==, 0);
  /* Each connection counted once: closed at accept(), or accepted and
   * refused at the door (fewer than 16 descriptors free); a spare not
   * taken again at once pauses vgicd, and is no refusal. */
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, refused + EMFILE_TRIES);
  honest_attach_and_save (h, "after-emfile");
}

/*
 * A connection admitted at the door makes its relay at its first byte,
 * three descriptors more.  If the table filled in between (with what the
 * door cannot count: the reaper's copies of a peer's descriptors, closed
 * connections' objects GLib has not dropped yet), vgicd closes it there,
 * rather than make a relay whose handshake could not make its wakeup
 * (GLib aborts then).  Played by lowering vgicd's limit to just above
 * what it holds, between the admission and the first byte: the peer is
 * closed, counted in refused and logged; with the limit back, an honest
 * QEMU attaches.  (FirstByteTimeout= long, so that a slow host does not
 * close the connection for its silence first.)
 */
#define RELAY_SPARE 5	/* descriptors left: fewer than a relay's 3 and 8 to spare */
static void
test_relay_needs_room (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *hello = handshake_bytes ();
  g_autofree char *log = NULL;
  struct rlimit plenty, tight;
  struct sockaddr_un sa;
  guint64 refused;
  guint held;
  int fd;

  h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nFirstByteTimeout=60000\n", &error);
  g_assert_no_error (error);
  socket_address (h, &sa);
  refused = vgicd_harness_stat (h, "refused");
  held = vgicd_harness_open_fds (h);
  fd = raw_connect (&sa);
  g_assert_cmpint (fd, >=, 0);
  /* Admitted: vgicd holds its socket and waits for the first byte. */
  for (guint i = 0; vgicd_harness_open_fds (h) <= held; i++)
    {
      g_assert_cmpuint (i, <, VGICD_TEST_PATIENCE_MS / 10);
      g_usleep (10 * 1000);
    }
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, refused);
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, NULL, &plenty), ==, 0);
  tight = (struct rlimit) { vgicd_harness_open_fds (h) + RELAY_SPARE, plenty.rlim_max };
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);

  g_assert_cmpint (send (fd, hello, 1 + strlen (hello + 1), MSG_NOSIGNAL), >, 0);
  assert_closed_by_vgicd (fd);	/* not answered */
  close (fd);
  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &plenty, NULL), ==, 0);
  g_assert_true (vgicd_alive (h));
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, refused + 1);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "at its first byte: " G_STRINGIFY (RELAY_SPARE)
                                 " descriptors free, and its relay needs 3"));
  g_assert_null (strstr (log, "Too many open files"));
  honest_attach_and_save (h, "after-relay-refused");
}

/* A process of its own that opens a connection and stays silent (one in
 * its handshake, MaxHandshakesPerProcess=1), then @n more, each refused;
 * it exits once vgicd has closed those.  Its pid. */
static pid_t
refused_process (const struct sockaddr_un *sa, guint n)
{
  pid_t child = fork_attacker ();
  int status;

  if (child == 0)
    {
      int held = raw_connect (sa);

      if (held < 0)
        _exit (2);
      for (guint i = 0; i < n; i++)
        {
          int fd = raw_connect (sa);
          struct pollfd p = { .fd = fd, .events = POLLIN };
          char byte;

          if (fd < 0 || poll (&p, 1, VGICD_TEST_PATIENCE_MS) != 1 || recv (fd, &byte, 1, 0) > 0)
            _exit (3);
          close (fd);
        }
      _exit (0);
    }
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  return child;
}

/* How long a line said at a log window's end may take: the window's
 * 10 s, and the patience. */
#define LOG_WINDOW_WAIT_MS (10000 + VGICD_TEST_PATIENCE_MS)

/* One refusal line per uid every 10 s, and every libvirt QEMU is one uid:
 * the refusals not logged are said at the window's end, in a line of
 * their own, naming the processes they came from with their counts (the
 * first 8 processes; the others summed), so that a QEMU refused among
 * another process's refusals is still named, and a flood's last 10 s are
 * not lost to the journal.  The door's other lines are limited the same
 * way, each kind on its own: the connections closed for their silence
 * here, on a second vgicd (FirstByteTimeout=10). */
static void
test_refusal_line_names_processes (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (VgicdHarness) quick = NULL;
  g_autofree char *log = NULL;
  g_autofree char *want = NULL;
  struct sockaddr_un sa, quick_sa;
  g_autoptr (GString) named = g_string_new (NULL);
  const char *silent = "since the last such line, 2 more connections closed for their first "
                       "byte or handshake not in time, not logged\n";
  pid_t first;

  h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nMaxHandshakesPerProcess=1\n"
                           "FirstByteTimeout=60000\n", &error);
  g_assert_no_error (error);
  quick = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                               "Mode=auto\nAllowUsers=root\nFirstByteTimeout=10\n", &error);
  g_assert_no_error (error);
  socket_address (h, &sa);
  socket_address (quick, &quick_sa);
  /* Three silent connections, one after the other, each closed at its
   * deadline: the first logged, two not. */
  for (guint i = 0; i < 3; i++)
    {
      int fd = raw_connect (&quick_sa);

      g_assert_cmpint (fd, >=, 0);
      assert_closed_by_vgicd (fd);
      close (fd);
    }
  first = refused_process (&sa, 1);	/* logged */
  /* Not logged, within 10 s: 9 processes, the second refused twice. */
  for (guint i = 0; i < 9; i++)
    {
      guint n = i == 1 ? 2 : 1;
      pid_t pid = refused_process (&sa, n);

      if (i < 8)
        g_string_append_printf (named, "%spid %d (%u)", i ? ", " : "", (int) pid, n);
    }
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 11);
  /* No refusal after them: the window's end says them. */
  want = g_strdup_printf ("closed 10 more connections from user root (uid 0) since the last "
                          "such line, not logged, from %s and 1 from other processes; "
                          "GetStats' refused counts them all\n", named->str);
  log = vgicd_harness_wait_log (h, want, LOG_WINDOW_WAIT_MS);
  g_test_message ("%s", log);
  g_assert_nonnull (strstr (log, want));
  g_free (want);
  want = g_strdup_printf ("(uid 0, pid %d): too many connections of this process in their "
                          "handshake (AllowUsers in %s/vgicd.conf lists: root)\n", (int) first,
                          h->dir);
  g_assert_nonnull (strstr (log, want));	/* the first, alone */
  /* Said once: the counts start again. */
  g_assert_null (strstr (strstr (log, "closed 10 more") + 1, "closed 10 more"));
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 11);
  g_free (log);
  log = vgicd_harness_wait_log (quick, silent, LOG_WINDOW_WAIT_MS);
  g_test_message ("%s", log);
  g_assert_nonnull (strstr (log, silent));
}

/* A descriptor limit below what the configuration may ask (the defaults
 * under LimitNOFILE=512): vgicd says so at start, with the figures, and
 * serves within the limit. */
/* vgicd started as a unit with LimitNOFILE=@limit would be: both limits
 * (vgicd raises its soft limit to the hard one), set by util-linux's
 * prlimit, which then becomes vgicd (exec).  Returns its log after an
 * honest VM attached and saved. */
static char *
log_under_limit (guint limit)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *dir = g_dir_make_tmp ("vgicd-door-XXXXXX", &error);
  g_autofree char *wrapper = NULL, *script = NULL, *name = NULL;
  char *log = NULL;

  g_assert_no_error (error);
  wrapper = g_build_filename (dir, "vgicd", NULL);
  script = g_strdup_printf ("#!/bin/sh\nexec prlimit --nofile=%u:%u %s \"$@\"\n", limit, limit,
                            vgicd_test_bin);
  g_assert_true (g_file_set_contents (wrapper, script, -1, &error));
  g_assert_no_error (error);
  g_assert_cmpint (chmod (wrapper, 0755), ==, 0);
  h = vgicd_harness_start (wrapper, vgicd_test_policy, "Mode=auto\nAllowUsers=root\n", &error);
  g_assert_no_error (error);
  name = g_strdup_printf ("under-%u", limit);
  honest_attach_and_save (h, name);
  log = vgicd_harness_read_log (h);
  g_test_message ("%s", log);
  g_clear_pointer (&h, vgicd_harness_stop);
  unlink (wrapper);
  rmdir (dir);
  return log;
}

/* Below what the keys may ask, vgicd says so at start, with the figures,
 * and serves. */
static void
test_limit_below_configuration (void)
{
  g_autofree char *log = log_under_limit (512);

  g_assert_nonnull (strstr (log, "the file descriptor limit (LimitNOFILE=) leaves peers 448 "
                                 "descriptors"));
  g_assert_nonnull (strstr (log, "fewer than MaxConnections=1280"));
}

/* The unit's LimitNOFILE=8192 holds what the default keys may ask
 * (MaxConnections=, MaxHandshakes=, MaxSessions=): no warning at start.
 * (The defaults outgrew it once, when a connection came to cost three
 * descriptors, and only the booted-systemd tier saw the warning.) */
static void
test_unit_limit_fits_defaults (void)
{
  struct rlimit r;
  g_autofree char *log = NULL;

  if (getrlimit (RLIMIT_NOFILE, &r) == 0 && r.rlim_max != RLIM_INFINITY && r.rlim_max < 8192)
    {
      g_test_skip ("this process's hard descriptor limit is below 8192");
      return;
    }
  log = log_under_limit (8192);
  g_assert_null (strstr (log, "the file descriptor limit"));
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/door/n1-handshaken-never-attached", test_n1_handshaken_never_attached);
  g_test_add_func ("/vgicd/door/n4-four-fill-the-door", test_n4_four_fill_the_door);
  g_test_add_func ("/vgicd/door/reconnect-loop", test_reconnect_loop);
  g_test_add_func ("/vgicd/door/reconnect-loop-with-descriptors",
                   test_reconnect_loop_with_descriptors);
  g_test_add_func ("/vgicd/door/shedding-rule", test_shedding_rule);
  g_test_add_func ("/vgicd/door/emfile-sheds", test_emfile_sheds);
  g_test_add_func ("/vgicd/door/relay-needs-room", test_relay_needs_room);
  g_test_add_func ("/vgicd/door/refusal-line-names-processes",
                   test_refusal_line_names_processes);
  g_test_add_func ("/vgicd/door/limit-below-configuration", test_limit_below_configuration);
  g_test_add_func ("/vgicd/door/unit-limit-fits-defaults", test_unit_limit_fits_defaults);
  return g_test_run ();
}
