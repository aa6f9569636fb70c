/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-limits.c - who reaches vgicd and how many: the door's bounds
 * on silent connections, users off the allow-list or outside the socket's
 * group, the session, vCPU and memory limits, the descriptor limit, and a
 * reachability probe that vgicd keeps quiet about.
 */
#define _GNU_SOURCE /* prlimit */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgicd-test.h"

/* The door's bounds, against a real vgicd: another process (a child, so
 * its own pid) opens 40 connections and says nothing.  12 are admitted
 * (MaxHandshakesPerProcess=12), the other 28 are closed at once and
 * counted as refused; meanwhile a QEMU of another process attaches and
 * saves; and the silent 12 are closed when their handshake time
 * (HandshakeTimeout=1500) is up, which the child sees as end of file on
 * every one (it waits up to 30 s). */
#define SILENT 40
static void
test_door_bounds (void)
{
  g_autoptr (GError) herr = NULL;
  /* The door's bounds are keys: 12 per process here, 1.5 s each. */
  g_autoptr (VgicdHarness) h =
    vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                         "Mode=auto\nAllowUsers=root\nMaxHandshakesPerProcess=12\n"
                         "FirstByteTimeout=1500\nHandshakeTimeout=1500\n", &herr);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int ready[2], status;
  char byte;
  pid_t child;

  g_assert_no_error (herr);
  g_assert_cmpuint (strlen (h->socket_path), <, sizeof sa.sun_path);
  strcpy (sa.sun_path, h->socket_path);
  g_assert_cmpint (pipe (ready), ==, 0);
  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      /* Only system calls here: the parent has threads. */
      struct pollfd fds[SILENT];
      int open = SILENT;

      for (int i = 0; i < SILENT; i++)
        {
          fds[i] = (struct pollfd) { .fd = socket (AF_UNIX, SOCK_STREAM, 0), .events = POLLIN };
          if (fds[i].fd < 0 || connect (fds[i].fd, (struct sockaddr *) &sa, sizeof sa) < 0)
            _exit (2);
        }
      if (write (ready[1], "r", 1) != 1)
        _exit (2);
      while (open > 0)
        {
          int n = poll (fds, SILENT, 30000);

          if (n <= 0)
            _exit (1);	/* some still open after 30 s */
          for (int i = 0; i < SILENT; i++)
            if (fds[i].fd >= 0 && fds[i].revents)
              {
                if (read (fds[i].fd, &byte, 1) > 0)
                  _exit (3);	/* vgicd said something */
                close (fds[i].fd);
                fds[i].fd = -1;
                open--;
              }
        }
      _exit (0);
    }
  g_assert_cmpint (read (ready[0], &byte, 1), ==, 1);
  close (ready[0]);
  close (ready[1]);
  /* Another process's QEMU is not kept out. */
  c = attach (h, sim, s, "after-the-silent");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, SILENT - 12);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "too many connections of this process in their handshake"));
  g_assert_nonnull (strstr (log, "sent nothing within 1500 ms; closed"));
  /* One refusal line for the 28: the rest were counted, not logged. */
  g_assert_null (strstr (strstr (log, "too many connections of this process") + 1,
                         "too many connections of this process"));
}

/* An attach of @sim that vgicd refuses (DENIED), saying @why. */
static void
attach_refused (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *why)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  g_autoptr (VgicdClient) c = vgicd_test_connect (h, &error);

  g_assert_no_error (error);
  g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), "one-too-many", NULL, s->irqs,
                                       s->vcpus, mpidrs, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED);
  g_assert_nonnull (strstr (error->message, why));
}

/* vgicd started from a shell rather than by its unit: a soft descriptor
 * limit of 1024.  It serves several VMs at once (the old reservation, for
 * the largest MaxHandshakes= there could be, left room for one, and the
 * QEMU tier's live migrations, source and destination attached together,
 * went one register per ioctl).  Then, its limit cut to 200 (prlimit, as
 * a LimitNOFILE=200 would set it): VMs attach until the limit's room for
 * sessions beside the door's share is spent, and the next attach is
 * refused with the reason, vgicd holding fewer descriptors than the
 * limit all along. */
static void
test_fd_limit_outside_systemd (void)
{
  const Shape *s = &shapes[0];
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (GPtrArray) more = g_ptr_array_new_with_free_func ((GDestroyNotify) vgicd_client_free);
  struct rlimit mine, shell, tight = { 200, 200 };
  VgicdClient *c[4] = { NULL };

  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &mine), ==, 0);
  shell = mine;
  shell.rlim_cur = MIN (mine.rlim_max, 1024);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &shell), ==, 0);
  h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nMaxConnectionsPerProcess=1024\n", &error);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &mine), ==, 0);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    {
      g_autofree char *name = g_strdup_printf ("vm-%u", i);

      c[i] = attach (h, sim, s, name);
    }
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    g_clear_pointer (&c[i], vgicd_client_free);
  while (vgicd_harness_stat (h, "sessions") > 0)
    g_usleep (10000);

  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);
  for (;;)
    {
      g_autoptr (GError) e2 = NULL;
      g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
      VgicdClient *cl = vgicd_test_connect (h, &e2);

      g_assert_no_error (e2);
      if (!vgicd_client_attach (cl, vgic_sim_get_fd (sim), "one-more", NULL, s->irqs, s->vcpus,
                                mpidrs, &e2))
        {
          g_test_message ("after %u sessions: %s", more->len, e2->message);
          g_assert_error (e2, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED);
          g_assert_nonnull (strstr (e2->message, "as many as its file descriptor limit allows "
                                                 "(LimitNOFILE=)"));
          vgicd_client_free (cl);
          break;
        }
      g_ptr_array_add (more, cl);
      g_assert_cmpuint (vgicd_harness_open_fds (h), <, 200);
      g_assert_cmpuint (more->len, <, 200);
    }
  g_assert_cmpuint (more->len, >=, 2);
  g_assert_cmpuint (vgicd_harness_open_fds (h), <, 200);
}

/* MaxSessions= and MaxSessionsPerUser=: the attach over the limit is
 * refused with the reason (QEMU then keeps its own path), counted, and a
 * session that ends makes room again. */
static void
test_session_limits (void)
{
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autoptr (GError) error = NULL;
  VgicdClient *c[3] = { NULL };

  {
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, "Mode=auto\nAllowUsers=root\nMaxSessions=2\n",
                           &error);
    g_assert_no_error (error);
    c[0] = attach (h, sim, s, "one");
    c[1] = attach (h, sim, s, "two");
    attach_refused (h, sim, s, "vgicd has 2 sessions, its limit (MaxSessions=2)");
    g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
    g_clear_pointer (&c[1], vgicd_client_free);
    /* The session goes with its connection, which vgicd sees close. */
    for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20 && !c[2]; i++)
      {
        g_autoptr (GError) e2 = NULL;
        g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);

        c[2] = vgicd_test_connect (h, &e2);
        g_assert_no_error (e2);
        if (!vgicd_client_attach (c[2], vgic_sim_get_fd (sim), "three", NULL, s->irqs, s->vcpus,
                                  mpidrs, &e2))
          {
            g_clear_pointer (&c[2], vgicd_client_free);
            g_usleep (20000);
          }
      }
    g_assert_nonnull (c[2]);
    for (guint i = 0; i < G_N_ELEMENTS (c); i++)
      g_clear_pointer (&c[i], vgicd_client_free);
  }
  {
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nMaxSessionsPerUser=1\n", &error);
    g_assert_no_error (error);
    c[0] = attach (h, sim, s, "one");
    attach_refused (h, sim, s, "uid 0 has 1 sessions, its limit (MaxSessionsPerUser=1)");
    g_clear_pointer (&c[0], vgicd_client_free);
  }
  {
    /* vCPUs per VM: the 4-vCPU VM is refused, a 1-vCPU one is not. */
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, "Mode=auto\nAllowUsers=root\nMaxVcpus=2\n",
                           &error);
    g_autoptr (VgicSim) small = make_sim (&shapes[0], FALSE);

    g_assert_no_error (error);
    attach_refused (h, sim, s, "the VM has 4 vCPUs, more than this host's limit (MaxVcpus=2)");
    c[0] = attach (h, small, &shapes[0], "small");
    g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
    g_clear_pointer (&c[0], vgicd_client_free);
  }
  {
    /* Memory: 64-vCPU VMs attach until their sessions would pass 16 MiB;
     * the next is refused with the figures, and vgicd serves the rest. */
    const Shape *big = &shapes[3];
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                           "Mode=auto\nAllowUsers=root\nMaxSessionMemory=16\n", &error);
    g_autoptr (VgicSim) bsim = make_sim (big, TRUE);
    g_autoptr (GPtrArray) clients = g_ptr_array_new_with_free_func ((GDestroyNotify) vgicd_client_free);
    g_autoptr (GBytes) record = NULL;

    g_assert_no_error (error);
    for (;;)
      {
        g_autoptr (GError) e2 = NULL;
        g_autofree guint32 *mpidrs = sim_vm_mpidrs (bsim, big->vcpus);
        VgicdClient *cl = vgicd_test_connect (h, &e2);

        g_assert_no_error (e2);
        if (!vgicd_client_attach (cl, vgic_sim_get_fd (bsim), "big", NULL, big->irqs,
                                  big->vcpus, mpidrs, &e2))
          {
            g_test_message ("after %u sessions: %s", clients->len, e2->message);
            g_assert_error (e2, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED);
            g_assert_nonnull (strstr (e2->message, "(MaxSessionMemory=16 MiB)"));
            vgicd_client_free (cl);
            break;
          }
        g_ptr_array_add (clients, cl);
        g_assert_cmpuint (clients->len, <, 200);
      }
    g_assert_cmpuint (clients->len, >, 1);
    g_assert_true (vgicd_client_save (g_ptr_array_index (clients, 0), &record, &error));
    g_assert_no_error (error);
  }
}

/* The access tests' peer is a separate program run as another user (this
 * process has threads, so a forked child must exec before it uses GDBus):
 * in the child, become @data (a struct passwd), with no supplementary
 * groups left from root. */
static void
child_become (gpointer data)
{
  struct passwd *pw = data;

  if (setgroups (0, NULL) < 0 || setgid (pw->pw_gid) < 0 || setuid (pw->pw_uid) < 0)
    _exit (127);
}

/* Run vgicd-peer as @pw against @h; its one line of output. */
static char *
run_peer_as (VgicdHarness *h, struct passwd *pw)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *peer = NULL, *lib = NULL, *env_lib = NULL;
  const char *argv[3], *envp[2];
  char *out = NULL;
  int status;

  g_assert_nonnull (g_getenv ("VGICD_PEER"));
  g_assert_nonnull (g_getenv ("VGICD_LIBVGICD"));
  /* The peer runs as another user, who may not reach the build tree (a
   * checkout in a private folder): it runs from the harness's folder,
   * which vgicd's socket is in and everyone may enter. */
  peer = copy_for_everyone (g_getenv ("VGICD_PEER"), h->dir, "vgicd-peer");
  lib = copy_for_everyone (g_getenv ("VGICD_LIBVGICD"), h->dir, "libvgicd.so.0");
  env_lib = g_strdup_printf ("LD_LIBRARY_PATH=%s", h->dir);
  argv[0] = peer, argv[1] = h->address, argv[2] = NULL;
  envp[0] = env_lib, envp[1] = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, (char **) envp, G_SPAWN_DEFAULT,
                               child_become, pw, &out, NULL, &status, &error));
  g_assert_no_error (error);
  g_test_message ("peer (%s) said: %s", pw->pw_name, out);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  return out;
}

/* A harness whose socket is in @pw's primary group, so that @pw gets as
 * far as vgicd's own check. */
static VgicdHarness *
harness_group_of (struct passwd *pw)
{
  struct group *gr = getgrgid (pw->pw_gid);
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = NULL;
  VgicdHarness *h;

  g_assert_nonnull (gr);
  conf = g_strdup_printf ("Mode=auto\nAllowUsers=root\nSocketGroup=%s\n", gr->gr_name);
  h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, conf, &error);
  g_assert_no_error (error);
  return h;
}

/* A peer whose uid is not on the allow-list is closed at the door, before
 * any handshake; libvgicd tells its caller it is denied, with a message
 * that names neither the allow-list nor the configuration's path (the peer
 * may be hostile); vgicd's log has both, for the operator. */
static void
test_peer_not_allowed (void)
{
  struct passwd *nobody = getpwnam ("nobody");
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *out = NULL;
  g_autofree char *code = NULL;
  g_autofree char *log = NULL;

  g_assert_nonnull (nobody);
  h = harness_group_of (nobody);
  out = run_peer_as (h, nobody);
  code = g_strdup_printf ("error %d ", VGICD_CLIENT_ERROR_DENIED);
  g_assert_true (g_str_has_prefix (out, code));
  g_assert_nonnull (strstr (out, "may not use vgicd"));
  g_assert_null (strstr (out, "AllowUsers"));
  g_assert_null (strstr (out, "root"));
  g_assert_null (strstr (out, ".conf"));
  /* Logged before the connection was closed. */
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "closed a connection from user nobody"));
  g_assert_nonnull (strstr (log, ": not allowed (AllowUsers in "));
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
}

/* The socket vgicd binds itself is what vgicd.socket makes: 0660 in group
 * SocketGroup= (kvm by default), so a user outside the group cannot even
 * connect; with no kvm group on the host it is root's alone (0600), and
 * the log says so.  A SocketGroup= that does not exist stops vgicd. */
static void
test_socket_group (void)
{
  struct passwd *nobody = getpwnam ("nobody");
  struct group *kvm = getgrnam ("kvm");
  struct passwd outsider;
  g_autoptr (VgicdHarness) h = harness ("auto");
  g_autoptr (VgicdHarness) in_group = NULL, bad = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL, *out = NULL, *code = NULL;
  struct stat st;

  g_assert_cmpint (stat (h->socket_path, &st), ==, 0);
  log = vgicd_harness_read_log (h);
  if (kvm)
    {
      g_assert_cmpint (st.st_mode & 07777, ==, 0660);
      g_assert_cmpint (st.st_gid, ==, kvm->gr_gid);
    }
  else
    {
      g_assert_cmpint (st.st_mode & 07777, ==, 0600);
      /* A warning: it costs every non-root QEMU vgicd. */
      g_assert_true (g_regex_match_simple ("WARNING.*group kvm does not exist", log, 0, 0));
    }

  g_assert_nonnull (nobody);
  in_group = harness_group_of (nobody);
  g_assert_cmpint (stat (in_group->socket_path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0660);
  g_assert_cmpint (st.st_gid, ==, nobody->pw_gid);
  /* nobody in another group: refused by the socket's mode, before vgicd
   * sees a byte. */
  outsider = *nobody;
  outsider.pw_gid = nobody->pw_gid - 1;
  out = run_peer_as (in_group, &outsider);
  code = g_strdup_printf ("error %d ", VGICD_CLIENT_ERROR_UNREACHABLE);
  g_assert_true (g_str_has_prefix (out, code));
  g_assert_nonnull (strstr (out, g_strerror (EACCES)));

  bad = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                             "Mode=auto\nSocketGroup=no-such-group-vgicd\n", &error);
  g_assert_null (bad);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "SocketGroup=no-such-group-vgicd: no such group"));
}

/* A connection closed before its first byte is a reachability probe (the
 * libvirt hook's): vgicd says nothing about it, and serves on. */
static void
test_probe_is_silent (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;

  for (int i = 0; i < 20; i++)
    {
      g_autoptr (GSocketClient) sc = g_socket_client_new ();
      g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (h->socket_path);
      g_autoptr (GSocketConnection) conn =
        g_socket_client_connect (sc, G_SOCKET_CONNECTABLE (addr), NULL, &error);

      g_assert_no_error (error);
      g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
      /* One at a time, as hooks come: the listen backlog is short. */
      g_usleep (10000);
    }
  c = attach (h, sim, s, "after-probes");
  g_assert_true (vgicd_client_save (c, &record, &error));
  log = vgicd_harness_read_log (h);
  g_assert_null (strstr (log, "handshake"));
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/door-bounds", test_door_bounds);
  g_test_add_func ("/vgicd/peer-not-allowed", test_peer_not_allowed);
  g_test_add_func ("/vgicd/socket-group", test_socket_group);
  g_test_add_func ("/vgicd/session-limits", test_session_limits);
  g_test_add_func ("/vgicd/fd-limit-outside-systemd", test_fd_limit_outside_systemd);
  g_test_add_func ("/vgicd/probe-is-silent", test_probe_is_silent);
  return g_test_run ();
}
