/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log-on-failure.c - the end of a watched log on stderr when the test
 * dies (see log-on-failure.h).
 *
 * Theory of operation: a failed g_assert() aborts the test program, so no
 * cleanup runs; the harness's folder stays, but in CI it goes with the
 * machine, and a flaky failure is left with no trace of what vgicd did.
 * The test runner (meson) keeps the program's stderr, so that is where the
 * log goes.  The handler runs in a signal context: it uses only
 * async-signal-safe calls (open, fstat, lseek, read, write, close, getpid,
 * sigaction, raise), on names copied into static slots beforehand, and
 * then lets the signal do what it did before (the previous handler, or
 * the default: the core dump and status the runner reports).  A child
 * the test forked inherits the handler, and prints nothing: the slots
 * carry the pid that watched them.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log-on-failure.h"

#define SLOTS 8
#define TAIL_BYTES (16 * 1024)

typedef struct {
  volatile sig_atomic_t owner;	/* the pid that watches it; 0: free */
  char path[PATH_MAX];
} Slot;

static Slot slots[SLOTS];
static const int signals[] = { SIGABRT, SIGTERM };
static struct sigaction previous[G_N_ELEMENTS (signals)];

static void
say (const char *s)
{
  size_t n = strlen (s);

  while (n > 0)
    {
      ssize_t w = write (STDERR_FILENO, s, n);

      if (w <= 0)
        return;
      s += w;
      n -= (size_t) w;
    }
}

static void
print_tail (const char *path)
{
  char buf[4096];
  struct stat st;
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  ssize_t n;

  say ("\n---- the end of ");
  say (path);
  say (" ----\n");
  if (fd < 0)
    {
      say ("(cannot be opened)\n");
      return;
    }
  if (fstat (fd, &st) == 0 && st.st_size > TAIL_BYTES)
    {
      lseek (fd, st.st_size - TAIL_BYTES, SEEK_SET);
      say ("[...]");
    }
  while ((n = read (fd, buf, sizeof buf)) > 0)
    {
      ssize_t done = 0;

      while (done < n)
        {
          ssize_t w = write (STDERR_FILENO, buf + done, (size_t) (n - done));

          if (w <= 0)
            break;
          done += w;
        }
    }
  close (fd);
  say ("---- end ----\n");
}

static void
on_fatal (int sig)
{
  pid_t me = getpid ();

  for (guint i = 0; i < SLOTS; i++)
    if (slots[i].owner == me)
      {
        slots[i].owner = 0;	/* once, if the signal comes again */
        print_tail (slots[i].path);
      }
  /* What the signal did before this handler: it is blocked while the
   * handler runs, and delivered again once it returns. */
  for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
    if (signals[i] == sig)
      sigaction (sig, &previous[i], NULL);
  raise (sig);
}

static void
install_once (void)
{
  static gsize done;

  if (g_once_init_enter (&done))
    {
      struct sigaction sa = { .sa_handler = on_fatal };

      sigemptyset (&sa.sa_mask);
      for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
        sigaction (signals[i], &sa, &previous[i]);
      g_once_init_leave (&done, 1);
    }
}

int
log_on_failure_watch (const char *path)
{
  install_once ();
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].owner == 0)
      {
        g_strlcpy (slots[i].path, path, sizeof slots[i].path);
        slots[i].owner = getpid ();
        return i;
      }
  return -1;
}

void
log_on_failure_forget (int handle)
{
  if (handle >= 0 && handle < SLOTS)
    slots[handle].owner = 0;
}

void
log_on_failure_print (int handle)
{
  if (handle >= 0 && handle < SLOTS && slots[handle].owner == getpid ())
    print_tail (slots[handle].path);
}
