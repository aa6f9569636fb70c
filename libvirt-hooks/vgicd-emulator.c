/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-emulator.c - asking a QEMU binary whether its GIC takes vgicd's
 * property (see vgicd-emulator.h).
 *
 * A QEMU that does not know the property refuses `-global
 * kvm-arm-gicv3.vgicd=...` at start (QEMU applies -global to every
 * non-hotplugged device with &error_fatal), so the hook must know before
 * it lets such an argument through.  The answer is a property of the
 * binary, so it is kept per binary: a package upgrade that replaces QEMU
 * changes its inode and modification time, and the next call asks again.
 *
 * Theory of operation (safety): the hook runs as root and the <emulator>
 * comes from a domain's XML, which for an incoming migration another host
 * wrote.  So the hook runs only binaries on an allow-list compiled in here
 * (the same paths as the exec rules of its AppArmor profile; the test
 * tests/libvirt/test-emulator-allowlist fails when they part), never as
 * root: as the user libvirt runs QEMU as (qemu.conf's user =, else
 * libvirt-qemu), with no supplementary groups, no new privileges and an
 * empty environment.  The binary is opened once (O_PATH), stamped with
 * fstat() and executed from that descriptor (execveat AT_EMPTY_PATH), so
 * the stamp the answer is remembered by is that of the file that answered:
 * replacing the file behind the path between the stamp and the run no
 * longer pairs one binary's identity with another's answer.
 */
#define _GNU_SOURCE /* O_PATH, execveat, AT_EMPTY_PATH */
#include "vgicd-emulator.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>	/* uintmax_t: on Debian 13 no other header here brings it in */
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgicd-domxml.h"	/* VGICD_QEMU_PROPERTY */

#define PROBE_TIMEOUT_S 10
#define PROBE_FD 3		/* where the binary's descriptor is in the child */
#define PROBE_CANNOT_EXEC 127	/* the child's status when it could not become QEMU */

/* Keep in step with the exec rules ("rix") of
 * security/apparmor/usr.sbin.vgicd-qemu-hook.in (the test
 * emulator-allowlist compares them).  '*' stands for one path component's
 * tail: it never matches '/'. */
static const char *const allow_list[] = {
  "/usr/bin/qemu-system-*",
  "/usr/local/bin/qemu-system-*",
  "/usr/libexec/qemu-kvm",
  "/usr/local/libexec/qemu-kvm",
  NULL,
};

const char *const *
vgicd_emulator_allow_list (void)
{
  return allow_list;
}

gboolean
vgicd_emulator_allowed (const char *path)
{
  for (const char *const *a = allow_list; *a; a++)
    {
      const char *star = strchr (*a, '*');

      if (!star)
        {
          if (g_str_equal (path, *a))
            return TRUE;
        }
      else if (strncmp (path, *a, star - *a) == 0 && path[star - *a] &&
               !strchr (path + (star - *a), '/'))
        return TRUE;
    }
  return FALSE;
}

/* The value of "KEY = \"VALUE\"" in libvirt's qemu.conf (libvirt's own
 * format: one setting a line, '#' comments, strings in double quotes). */
static char *
qemu_conf_string (const char *data, const char *key)
{
  g_auto (GStrv) lines = g_strsplit (data, "\n", -1);
  char *value = NULL;

  for (char **l = lines; *l; l++)
    {
      const char *p = *l + strspn (*l, " \t");
      const char *q;

      if (!g_str_has_prefix (p, key))
        continue;
      p += strlen (key);
      p += strspn (p, " \t");
      if (*p++ != '=')
        continue;
      p += strspn (p, " \t");
      if (*p++ != '"' || !(q = strchr (p, '"')))
        continue;
      g_free (value);
      value = g_strndup (p, q - p);	/* the last one wins, as in libvirt */
    }
  return value;
}

gboolean
vgicd_emulator_qemu_user (const char *qemu_conf, uid_t *uid, gid_t *gid, char **name,
                          char **why)
{
  g_autofree char *data = NULL;
  g_autofree char *user = NULL, *group = NULL;
  g_autoptr (GError) error = NULL;
  struct passwd *pw;

  if (!qemu_conf)
    qemu_conf = VGICD_QEMU_CONF;
  if (g_file_get_contents (qemu_conf, &data, NULL, &error))
    {
      user = qemu_conf_string (data, "user");
      group = qemu_conf_string (data, "group");
    }
  else if (!g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
    {
      *why = g_strdup_printf ("cannot read %s: %s", qemu_conf, error->message);
      return FALSE;
    }
  if (!user)
    user = g_strdup (VGICD_QEMU_USER);
  /* libvirt's "+N" is a numeric id. */
  if (user[0] == '+')
    {
      guint64 n;

      if (!g_ascii_string_to_unsigned (user + 1, 10, 0, G_MAXUINT32 - 1, &n, NULL))
        {
          *why = g_strdup_printf ("%s: user \"%s\" is not a user", qemu_conf, user);
          return FALSE;
        }
      *uid = n;
      pw = getpwuid (*uid);
      *gid = pw ? pw->pw_gid : (gid_t) n;
    }
  else if ((pw = getpwnam (user)))
    {
      *uid = pw->pw_uid;
      *gid = pw->pw_gid;
    }
  else
    {
      *why = g_strdup_printf ("no user \"%s\" (QEMU's user, %s)", user, qemu_conf);
      return FALSE;
    }
  if (group)
    {
      struct group *gr;
      guint64 n;

      if (group[0] == '+' && g_ascii_string_to_unsigned (group + 1, 10, 0, G_MAXUINT32 - 1,
                                                         &n, NULL))
        *gid = n;
      else if ((gr = getgrnam (group)))
        *gid = gr->gr_gid;
      else
        {
          *why = g_strdup_printf ("no group \"%s\" (QEMU's group, %s)", group, qemu_conf);
          return FALSE;
        }
    }
  *name = g_steal_pointer (&user);
  return TRUE;
}

/* A descriptor closed when it goes out of scope (g_autofd is GLib 2.76). */
typedef int VgicdFd;
static void
vgicd_fd_close (VgicdFd fd)
{
  close (fd);
}
G_DEFINE_AUTO_CLEANUP_FREE_FUNC (VgicdFd, vgicd_fd_close, -1)

/* What the child needs, made before the fork: after it, only system calls. */
typedef struct {
  uid_t uid;
  gid_t gid;
  char **argv;
} ProbeChild;

/* In the child, after GLib put the pipes on 1 and 2 and the binary on
 * PROBE_FD: drop to QEMU's user and become the binary that was stamped.
 * It never returns to GLib, which would run the path instead. */
static void
probe_child (gpointer data)
{
  ProbeChild *c = data;
  static char *const no_env[] = { NULL };

  if (setgroups (1, &c->gid) < 0 || setgid (c->gid) < 0 || setuid (c->uid) < 0 ||
      prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      fcntl (PROBE_FD, F_SETFD, FD_CLOEXEC) < 0)
    _exit (PROBE_CANNOT_EXEC);
  execveat (PROBE_FD, "", c->argv, no_env, AT_EMPTY_PATH);
  _exit (PROBE_CANNOT_EXEC);
}

static gboolean
on_probe_timeout (gpointer data)
{
  g_subprocess_force_exit (data);
  return G_SOURCE_REMOVE;
}

/* @b as a string; "" for none (an empty GBytes has no data pointer). */
static char *
bytes_to_string (GBytes *b)
{
  gsize len = 0;
  const char *data = b ? g_bytes_get_data (b, &len) : NULL;

  return data ? g_strndup (data, len) : g_strdup ("");
}

/* Run the binary opened as @fd as QEMU's user; its stdout and stderr, or
 * FALSE with *why. */
static gboolean
run_help (const char *emulator, int fd, const char *qemu_conf, char **out, char **err,
          char **why)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GSubprocessLauncher) launcher = NULL;
  g_autoptr (GMainContext) ctx = g_main_context_new ();
  g_autoptr (GBytes) o = NULL, e = NULL;
  g_autofree char *user = NULL;
  char *argv[] = { (char *) emulator, "-nodefaults", "-machine", "none", "-device",
                   "kvm-arm-gicv3,help", NULL };
  static const char *const no_env[] = { NULL };
  ProbeChild child = { .argv = argv };
  GSource *timeout;
  gboolean ok;
  int dup_fd;

  if (!vgicd_emulator_qemu_user (qemu_conf, &child.uid, &child.gid, &user, why))
    return FALSE;
  dup_fd = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0)
    {
      *why = g_strdup_printf ("cannot run %s: %s", emulator, g_strerror (errno));
      return FALSE;
    }
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                        G_SUBPROCESS_FLAGS_STDERR_PIPE |
                                        G_SUBPROCESS_FLAGS_STDIN_INHERIT);
  g_subprocess_launcher_set_environ (launcher, (char **) no_env);
  g_subprocess_launcher_take_fd (launcher, dup_fd, PROBE_FD);
  g_subprocess_launcher_set_child_setup (launcher, probe_child, &child, NULL);
  g_main_context_push_thread_default (ctx);
  p = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv, &error);
  if (!p)
    {
      g_main_context_pop_thread_default (ctx);
      *why = g_strdup_printf ("cannot run %s: %s", emulator, error->message);
      return FALSE;
    }
  timeout = g_timeout_source_new_seconds (PROBE_TIMEOUT_S);
  g_source_set_callback (timeout, on_probe_timeout, p, NULL);
  g_source_attach (timeout, ctx);
  ok = g_subprocess_communicate (p, NULL, NULL, &o, &e, &error);
  g_source_destroy (timeout);
  g_source_unref (timeout);
  g_main_context_pop_thread_default (ctx);
  if (!ok)
    {
      *why = g_strdup_printf ("cannot run %s: %s", emulator, error->message);
      return FALSE;
    }
  if (g_subprocess_get_if_signaled (p))
    {
      *why = g_strdup_printf ("%s did not answer within %d s", emulator, PROBE_TIMEOUT_S);
      return FALSE;
    }
  if (g_subprocess_get_if_exited (p) &&
      g_subprocess_get_exit_status (p) == PROBE_CANNOT_EXEC)
    {
      *why = g_strdup_printf ("cannot run %s as %s (uid %u)", emulator, user,
                              (unsigned) child.uid);
      return FALSE;
    }
  *out = bytes_to_string (o);
  *err = bytes_to_string (e);
  return TRUE;
}

/* 1 it has, 0 it has not, -1 it could not be asked (not remembered: the
 * next call asks again). */
static int
probe (const char *emulator, int fd, const char *qemu_conf, char **why)
{
  g_autofree char *out = NULL, *err = NULL;

  if (!run_help (emulator, fd, qemu_conf, &out, &err, why))
    return -1;
  /* QEMU 10.0 prints "  vgicd=<str>" (older ones "kvm-arm-gicv3.vgicd=..."). */
  if (strstr (out, VGICD_QEMU_PROPERTY "=") || strstr (out, "  vgicd="))
    return 1;
  if (strstr (err, "not found") || strstr (out, "not found"))
    *why = g_strdup_printf ("%s has no kvm-arm-gicv3 device (a QEMU without KVM "
                            "for arm64)", emulator);
  else
    *why = g_strdup_printf ("%s's kvm-arm-gicv3 has no vgicd property (a QEMU "
                            "without vgicd's patches)", emulator);
  return 0;
}

gboolean
vgicd_emulator_has_vgicd (const char *emulator, const char *cache_dir, const char *qemu_conf,
                          char **why)
{
  g_autoptr (GKeyFile) cache = g_key_file_new ();
  g_autofree char *cache_path = NULL;
  g_autofree char *stamp = NULL;
  g_autofree char *reason = NULL;
  g_autofree char *data = NULL;
  g_auto (VgicdFd) fd = -1;
  struct stat st;
  int has;
  gsize len;

  if (!cache_dir)
    cache_dir = VGICD_EMULATOR_CACHE;
  if (!vgicd_emulator_allowed (emulator))
    {
      /* The path comes from another host's XML: escaped, it forges no
       * line of libvirtd's log. */
      g_autofree char *shown = g_strescape (emulator, NULL);

      if (why)
        *why = g_strdup_printf ("%s is not a QEMU the hook may run (not on its allow-list: "
                                "/usr/bin/qemu-system-*, /usr/libexec/qemu-kvm and their "
                                "/usr/local twins); not asked", shown);
      return FALSE;
    }
  fd = open (emulator, O_PATH | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) < 0)
    {
      if (why)
        *why = g_strdup_printf ("%s: %s", emulator, g_strerror (errno));
      return FALSE;
    }
  if (!S_ISREG (st.st_mode))
    {
      if (why)
        *why = g_strdup_printf ("%s: not a regular file", emulator);
      return FALSE;
    }
  stamp = g_strdup_printf ("%ju:%ju:%jd:%jd.%09ld", (uintmax_t) st.st_dev,
                           (uintmax_t) st.st_ino, (intmax_t) st.st_size,
                           (intmax_t) st.st_mtim.tv_sec, (long) st.st_mtim.tv_nsec);
  cache_path = g_build_filename (cache_dir, "emulators.conf", NULL);
  g_key_file_load_from_file (cache, cache_path, G_KEY_FILE_NONE, NULL);
  {
    g_autofree char *seen = g_key_file_get_string (cache, emulator, "Stamp", NULL);

    if (seen && g_str_equal (seen, stamp))
      {
        has = g_key_file_get_boolean (cache, emulator, "Vgicd", NULL);
        if (!has && why)
          *why = g_key_file_get_string (cache, emulator, "Why", NULL);
        return has;
      }
  }
  has = probe (emulator, fd, qemu_conf, &reason);
  if (has < 0)
    {
      if (why)
        *why = g_steal_pointer (&reason);
      return FALSE;
    }
  g_key_file_set_string (cache, emulator, "Stamp", stamp);
  g_key_file_set_boolean (cache, emulator, "Vgicd", has);
  if (reason)
    g_key_file_set_string (cache, emulator, "Why", reason);
  else
    g_key_file_remove_key (cache, emulator, "Why", NULL);
  data = g_key_file_to_data (cache, &len, NULL);
  if (g_mkdir_with_parents (cache_dir, 0755) == 0)
    g_file_set_contents_full (cache_path, data, len, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                              NULL);
  if (!has && why)
    *why = g_steal_pointer (&reason);
  return has == 1;
}
