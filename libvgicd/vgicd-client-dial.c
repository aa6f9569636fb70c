/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-dial.c - the socket to vgicd, connected with a wait for
 * room in its backlog (vgicd-client-private.h).
 *
 * Theory of operation.  GDBus connects on a non-blocking socket, and a
 * unix socket whose backlog is full answers a non-blocking connect() with
 * EAGAIN at once: libvgicd then reported vgicd unreachable, and QEMU took
 * its own path.  A process reconnecting to vgicd in a loop keeps that
 * backlog full (vgicd stops accepting for a while when the closes it owes
 * pile up), so one compromised QEMU could send every other VM on the host
 * down QEMU's own path for as long as it kept at it.  A blocking connect()
 * instead waits in the kernel, and the kernel wakes it as soon as vgicd
 * accepts one: so the address vgicd is always at, a unix path, is
 * connected here, blocking, with SO_SNDTIMEO (which bounds a unix
 * connect()'s wait) set to what is left of the caller's time.  Any other
 * D-Bus address is left to GDBus.  On Linux, a unix connect() that a
 * signal interrupts has changed nothing, and is simply made again.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgicd-client-private.h"

char *
vgicd_client_unix_path (const char *address)
{
  const char *value;

  if (!g_str_has_prefix (address, "unix:path=") || strpbrk (address, ",;"))
    return NULL;
  value = address + strlen ("unix:path=");
  return *value ? g_uri_unescape_string (value, NULL) : NULL;
}

/* @us as a timeval, at least 1 µs (0 would mean no bound). */
static struct timeval
timeval_of (gint64 us)
{
  us = MAX (us, 1);
  return (struct timeval) { .tv_sec = us / G_USEC_PER_SEC, .tv_usec = us % G_USEC_PER_SEC };
}

GIOStream *
vgicd_client_dial (const char *path, gint64 deadline_us, GError **error)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  const struct timeval none = { 0 };
  g_autoptr (GSocket) sock = NULL;
  int fd, errsv;

  if (strlen (path) >= sizeof sa.sun_path)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "%s: longer than a unix socket's path can be", path);
      return NULL;
    }
  memcpy (sa.sun_path, path, strlen (path) + 1);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    {
      errsv = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                   "cannot make a socket: %s", g_strerror (errsv));
      return NULL;
    }
  for (;;)
    {
      struct timeval tv = timeval_of (deadline_us - g_get_monotonic_time ());

      errsv = 0;
      if (setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
          connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
        errsv = errno;
      if (errsv != EINTR || g_get_monotonic_time () >= deadline_us)
        break;
    }
  if (errsv)
    {
      close (fd);
      /* EAGAIN: the backlog stayed full until the deadline. */
      if (errsv == EAGAIN || errsv == EINTR)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                     "no room in the backlog of %s in time", path);
      else
        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s: %s", path,
                     g_strerror (errsv));
      return NULL;
    }
  /* GSocket makes the descriptor non-blocking; the send timeout was only
   * for the wait above. */
  (void) setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  /* On failure GLib has closed @fd already (its finalize does): a second
   * close here could close a descriptor another of QEMU's threads just
   * opened. */
  sock = g_socket_new_from_fd (fd, error);
  if (!sock)
    return NULL;
  return G_IO_STREAM (g_socket_connection_factory_create_connection (sock));
}
