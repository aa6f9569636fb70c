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
 */
#include "vgicd-emulator.h"

#include <errno.h>
#include <gio/gio.h>
#include <stdint.h>	/* uintmax_t: on Debian 13 no other header here brings it in */
#include <string.h>
#include <sys/stat.h>

#include "vgicd-domxml.h"	/* VGICD_QEMU_PROPERTY */

#define PROBE_TIMEOUT_S 10

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

/* Run the binary; its stdout and stderr, or FALSE with *why. */
static gboolean
run_help (const char *emulator, char **out, char **err, char **why)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GMainContext) ctx = g_main_context_new ();
  g_autoptr (GBytes) o = NULL, e = NULL;
  GSource *timeout;
  gboolean ok;

  g_main_context_push_thread_default (ctx);
  p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE |
                        G_SUBPROCESS_FLAGS_STDIN_INHERIT, &error, emulator,
                        "-nodefaults", "-machine", "none", "-device", "kvm-arm-gicv3,help",
                        NULL);
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
  *out = bytes_to_string (o);
  *err = bytes_to_string (e);
  return TRUE;
}

/* 1 it has, 0 it has not, -1 it could not be asked (not remembered: the
 * next call asks again). */
static int
probe (const char *emulator, char **why)
{
  g_autofree char *out = NULL, *err = NULL;

  if (!run_help (emulator, &out, &err, why))
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
vgicd_emulator_has_vgicd (const char *emulator, const char *cache_dir, char **why)
{
  g_autoptr (GKeyFile) cache = g_key_file_new ();
  g_autofree char *cache_path = NULL;
  g_autofree char *stamp = NULL;
  g_autofree char *reason = NULL;
  g_autofree char *data = NULL;
  struct stat st;
  int has;
  gsize len;

  if (!cache_dir)
    cache_dir = VGICD_EMULATOR_CACHE;
  if (stat (emulator, &st) < 0)
    {
      if (why)
        *why = g_strdup_printf ("%s: %s", emulator, g_strerror (errno));
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
  has = probe (emulator, &reason);
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
