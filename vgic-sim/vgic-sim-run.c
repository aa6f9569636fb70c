/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-run.c - run a command with its vgic-sim fds served by a
 * supervisor outside the command's seccomp filter:
 *
 *   vgic-sim-run [--] CMD ARGS...
 *
 * The fork-first arrangement (docs/vgic-sim.md): the child installs the filter
 * (it is single-threaded, so no TSYNC is needed), hands the listener to the
 * parent over a socketpair with SCM_RIGHTS and execs CMD, which inherits the
 * filter.  The parent, never filtered, answers the notifications until the
 * child exits, then exits with the child's status (128+N for signal N).
 * CMD sees VGIC_SIM_SUPERVISED=1, so vgic_sim_supervise_self() is a no-op.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgic-sim-private.h"

static G_NORETURN void
run_child (int sock, char **argv)
{
  g_autoptr (GError) error = NULL;
  int listener = vgic_sim_filter_install (FALSE, &error);

  if (listener < 0 && errno == EBUSY)
    {
      /* Seccomp allows one listener per filter chain: we already run under
       * a vgic-sim supervisor (vgic-sim-run, or a test's in-process one),
       * which will serve CMD as well. */
      if (write (sock, "n", 1) != 1)
        _exit (127);
      close (sock);
      execvp (argv[0], argv);
      fprintf (stderr, "vgic-sim-run: %s: %s\n", argv[0], g_strerror (errno));
      _exit (127);
    }
  if (listener < 0)
    {
      fprintf (stderr, "vgic-sim-run: %s\n", error->message);
      _exit (127);
    }
  if (vgic_sim_send_fd (sock, listener) < 0)
    {
      fprintf (stderr, "vgic-sim-run: passing the listener: %s\n", g_strerror (errno));
      _exit (127);
    }
  close (listener);
  close (sock);
  g_setenv (VGIC_SIM_SUPERVISED_ENV, "1", TRUE);
  execvp (argv[0], argv);
  fprintf (stderr, "vgic-sim-run: %s: %s\n", argv[0], g_strerror (errno));
  _exit (127);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  VgicSimServer *server;
  int sv[2], listener, pidfd, status;
  pid_t pid;

  argv++, argc--;
  if (argc > 0 && strcmp (argv[0], "--") == 0)
    argv++, argc--;
  if (argc == 0)
    {
      fprintf (stderr, "usage: vgic-sim-run [--] CMD ARGS...\n");
      return 2;
    }
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    {
      perror ("vgic-sim-run: socketpair");
      return 127;
    }
  pid = fork ();
  if (pid < 0)
    {
      perror ("vgic-sim-run: fork");
      return 127;
    }
  if (pid == 0)
    {
      close (sv[0]);
      run_child (sv[1], argv);
    }
  close (sv[1]);
  listener = vgic_sim_recv_fd (sv[0]);
  close (sv[0]);
  if (listener == -2)	/* a byte without an fd: the child is already supervised */
    goto wait_child;
  pidfd = pidfd_open (pid, 0);
  server = listener >= 0 && pidfd >= 0 ? vgic_sim_server_new (listener, &error) : NULL;
  if (!server)
    {
      fprintf (stderr, "vgic-sim-run: cannot supervise %s: %s\n", argv[0],
               error ? error->message : g_strerror (errno));
      kill (pid, SIGKILL);
      waitpid (pid, &status, 0);
      return 127;
    }

  for (;;)
    {
      struct pollfd fds[2] = {
        { .fd = listener, .events = POLLIN },
        { .fd = pidfd, .events = POLLIN },
      };

      if (poll (fds, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          perror ("vgic-sim-run: poll");
          break;
        }
      if (fds[1].revents)
        break;	/* the child exited: descendants left get ENOSYS */
      if ((fds[0].revents & POLLIN) && !vgic_sim_server_handle (server))
        break;
      if (fds[0].revents & (POLLHUP | POLLERR) && !(fds[0].revents & POLLIN))
        break;	/* no task uses the filter any more */
    }
  vgic_sim_server_free (server);
  close (pidfd);
wait_child:
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return WEXITSTATUS (status);
}
