/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fake-emulator.c - a QEMU stand-in for the hook's probe tests: it answers
 * "-device kvm-arm-gicv3,help" as a patched QEMU does, and first writes
 * who ran it (uid, euid, groups), with which environment, and which file
 * it is (the inode of /proc/self/exe) to "report" beside the path it was
 * run by (argv[0]: the probe runs it with an empty environment, so the
 * path is the only channel a test has).
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

int
main (int argc, char **argv)
{
  g_autofree char *dir = g_path_get_dirname (argv[0]);
  g_autofree char *path = g_build_filename (dir, "report", NULL);
  g_autoptr (GString) r = g_string_new (NULL);
  struct stat st;

  g_string_append_printf (r, "uid=%u\neuid=%u\ngid=%u\negid=%u\n", (unsigned) getuid (),
                          (unsigned) geteuid (), (unsigned) getgid (), (unsigned) getegid ());
  if (stat ("/proc/self/exe", &st) == 0)
    g_string_append_printf (r, "exe-ino=%ju\n", (uintmax_t) st.st_ino);
  for (char **e = environ; e && *e; e++)
    g_string_append_printf (r, "env=%s\n", *e);
  if (!g_file_set_contents (path, r->str, r->len, NULL))
    return 2;
  printf ("kvm-arm-gicv3 options:\n  vgicd=<str>\n");
  return 0;
}
