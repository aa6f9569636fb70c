/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-fds.c - how many more descriptors vgicd may open (vgicd-fds.h).
 *
 * Theory of operation.  The door charges each connection what it is
 * meant to hold (vgicd-server.c), but a connection's objects let go of
 * their descriptors when GLib and GDBus drop their last references, which
 * a flood of short connections outruns: the charges then say less than
 * the table holds, and GLib aborts where it cannot make a wakeup.  So the
 * door and the reaper also ask the kernel's table, which costs nothing far
 * from the limit: no descriptor is numbered at or above the table's size
 * (FDSize in /proc/self/status), so a table smaller than the limit by
 * @enough needs no count.  Near the limit the open ones are counted with
 * one fcntl() a number (a few ms at 8,192), not by walking /proc/self/fd,
 * which instantiates an entry each and took 30 to 300 ms there.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>

#include "vgicd-fds.h"

/* The size of this process's descriptor table, 0 if unknown. */
static guint
table_size (void)
{
  g_autofree char *status = NULL;
  const char *at;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL) ||
      !(at = strstr (status, "\nFDSize:")))
    return 0;
  return (guint) g_ascii_strtoull (at + strlen ("\nFDSize:"), NULL, 10);
}

guint
vgicd_fds_free (guint enough)
{
  struct rlimit r;
  guint table, open = 0;
  rlim_t scan;

  if (getrlimit (RLIMIT_NOFILE, &r) < 0)
    return 0;
  if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= G_MAXUINT)
    return G_MAXUINT;
  table = table_size ();
  if (table && (rlim_t) table + enough <= r.rlim_cur)
    return (guint) (r.rlim_cur - table);
  scan = table ? MIN ((rlim_t) table, r.rlim_cur) : r.rlim_cur;
  for (rlim_t fd = 0; fd < scan && fd <= G_MAXINT; fd++)
    if (fcntl ((int) fd, F_GETFD) >= 0)
      open++;
  return (rlim_t) open >= r.rlim_cur ? 0 : (guint) (r.rlim_cur - open);
}
