/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-config.c - read /etc/vgicd/vgicd.conf, and vgicd's state file
 * (/var/lib/vgicd/state.conf) over it.
 *
 * The configuration file is the operator's (and dpkg's, and configuration
 * management's): vgicd never writes it.  What changes at run time, the mode
 * `vgicctl mode` persists, goes to the state file, which wins over the
 * configuration file's Mode= for as long as it says so.  A save keeps every
 * comment and key it does not own, and replaces the file atomically: a
 * crash half-way never leaves a truncated file behind.
 */
#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "vgicd"
#endif

#include "vgicd-config.h"

#include <errno.h>
#include <sys/stat.h>

#define GROUP "vgicd"
#define ACCEPTED_MODES "auto, single, off"

static const char *const mode_names[] = {
  [VGICD_MODE_AUTO] = "auto",
  [VGICD_MODE_SINGLE] = "single",
  [VGICD_MODE_OFF] = "off",
};

/* The keys vgicd reads; anything else in [vgicd] is most likely a typo. */
static const char *const known_keys[] = {
  "Mode", "Socket", "SocketGroup", "AllowUsers", "Probe", "ClientTimeout", "Record",
  "MaxSessions", "MaxSessionsPerUser", "MaxVcpus", "MaxSessionMemory", "MaxHandshakes",
  "MaxHandshakesPerProcess", "HandshakeTimeout", "History", "HistoryVMs",
  "MetricsTextfile", NULL,
};

/* vgicd_mode_to_string() - "auto", "single" or "off" */
const char *
vgicd_mode_to_string (VgicdMode mode)
{
  if ((guint) mode < G_N_ELEMENTS (mode_names))
    return mode_names[mode];
  return "invalid";
}

VgicdMode
vgicd_mode_stricter (VgicdMode a, VgicdMode b)
{
  if (a == VGICD_MODE_OFF || b == VGICD_MODE_OFF)
    return VGICD_MODE_OFF;
  if (a == VGICD_MODE_SINGLE || b == VGICD_MODE_SINGLE)
    return VGICD_MODE_SINGLE;
  return VGICD_MODE_AUTO;
}

/**
 * vgicd_mode_from_string() - parse a mode name (exact, lower case)
 * @error: G_KEY_FILE_ERROR_INVALID_VALUE naming the accepted values
 */
gboolean
vgicd_mode_from_string (const char *str, VgicdMode *mode, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (mode_names); i++)
    if (str && g_str_equal (str, mode_names[i]))
      {
        *mode = (VgicdMode) i;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown mode \"%s\"; accepted values: " ACCEPTED_MODES,
               str ? str : "");
  return FALSE;
}

static VgicdConfig *
config_defaults (const char *path)
{
  VgicdConfig *config = g_new0 (VgicdConfig, 1);

  config->path = g_strdup (path);
  config->mode = VGICD_MODE_AUTO;
  config->socket_path = g_strdup (VGICD_DEFAULT_SOCKET);
  config->socket_group = g_strdup (VGICD_DEFAULT_SOCKET_GROUP);
  config->allow_users = g_strsplit ("root;libvirt-qemu", ";", -1);
  config->probe = TRUE;
  config->client_timeout = VGICD_DEFAULT_CLIENT_TIMEOUT;
  config->max_sessions = VGICD_DEFAULT_MAX_SESSIONS;
  config->max_sessions_per_user = VGICD_DEFAULT_MAX_SESSIONS;
  config->max_vcpus = VGICD_DEFAULT_MAX_VCPUS;
  config->max_session_memory = VGICD_DEFAULT_MAX_SESSION_MEMORY;
  config->max_handshakes = VGICD_DEFAULT_MAX_HANDSHAKES;
  config->max_handshakes_per_process = VGICD_DEFAULT_MAX_HANDSHAKES_PER_PROCESS;
  config->handshake_timeout = VGICD_DEFAULT_HANDSHAKE_TIMEOUT;
  config->history = VGICD_DEFAULT_HISTORY;
  config->history_vms = VGICD_DEFAULT_HISTORY_VMS;
  return config;
}

/* Prefix an error from the key file with where it came from, since the
 * daemon's log line is all the operator gets. */
gboolean
vgicd_config_read_mode (GKeyFile *file, const char *path, const char *group,
                        VgicdMode *mode, gboolean *found, GError **error)
{
  g_autofree char *value = NULL;
  GError *local = NULL;

  *found = FALSE;
  if (!g_key_file_has_key (file, group, "Mode", NULL))
    return TRUE;
  value = g_key_file_get_string (file, group, "Mode", &local);
  if (!value)
    {
      g_set_error (error, G_KEY_FILE_ERROR, local->code, "%s: [%s] Mode: %s", path, group,
                   local->message);
      g_error_free (local);
      return FALSE;
    }
  g_strstrip (value);
  if (!vgicd_mode_from_string (value, mode, NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: [%s] Mode=%s is not a mode; accepted values: " ACCEPTED_MODES,
                   path, group, value);
      return FALSE;
    }
  *found = TRUE;
  return TRUE;
}

gboolean
vgicd_config_read_bool (GKeyFile *file, const char *path, const char *group, const char *key,
                        gboolean *value, gboolean *found, GError **error)
{
  GError *local = NULL;
  gboolean v;

  *found = FALSE;
  if (!g_key_file_has_key (file, group, key, NULL))
    return TRUE;
  v = g_key_file_get_boolean (file, group, key, &local);
  if (local)
    {
      g_autofree char *text = g_key_file_get_value (file, group, key, NULL);

      g_error_free (local);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: [%s] %s=%s is not a boolean; accepted values: true, false",
                   path, group, key, text ? text : "");
      return FALSE;
    }
  *value = v;
  *found = TRUE;
  return TRUE;
}

static gboolean
config_error (GError **error, GError *cause, const char *path, const char *key)
{
  if (key)
    g_set_error (error, G_KEY_FILE_ERROR, cause->code,
                 "%s: [" GROUP "] %s: %s", path, key, cause->message);
  else
    g_set_error (error, G_KEY_FILE_ERROR, cause->code, "%s: %s", path,
                 cause->message);
  g_error_free (cause);
  return FALSE;
}

/* An unsigned key in @min..@max, when the file has it; @what names its
 * unit in the error ("number", "number of milliseconds"). */
static gboolean
read_uint (GKeyFile *file, const char *path, const char *key, guint min, guint max,
           const char *what, guint *out, GError **error)
{
  g_autofree char *value = g_key_file_get_value (file, GROUP, key, NULL);
  guint64 n = 0;

  if (!value)
    return TRUE;
  g_strstrip (value);
  if (!g_ascii_string_to_unsigned (value, 10, min, max, &n, NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: [" GROUP "] %s=%s is not a %s in %u..%u", path, key, value, what,
                   min, max);
      return FALSE;
    }
  *out = (guint) n;
  return TRUE;
}

static gboolean
config_parse (VgicdConfig *config, GKeyFile *file, GError **error)
{
  const char *path = config->path;
  g_auto (GStrv) keys = NULL;
  GError *local = NULL;
  gboolean found;

  if (!g_key_file_has_group (file, GROUP))
    return TRUE;

  keys = g_key_file_get_keys (file, GROUP, NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++)
    if (!g_strv_contains (known_keys, keys[i]))
      {
        g_autofree char *known = g_strjoinv (", ", (char **) known_keys);

        g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                          "MESSAGE", "%s: unknown key [" GROUP "] %s ignored (known: %s)",
                          path, keys[i], known);
      }

  if (!vgicd_config_read_mode (file, path, GROUP, &config->mode, &found, error))
    return FALSE;

  if (g_key_file_has_key (file, GROUP, "Socket", NULL))
    {
      g_autofree char *socket = g_key_file_get_string (file, GROUP, "Socket", &local);

      if (!socket)
        return config_error (error, local, path, "Socket");
      g_strstrip (socket);
      if (!g_path_is_absolute (socket))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "%s: [" GROUP "] Socket=%s is not an absolute path",
                       path, socket);
          return FALSE;
        }
      g_free (config->socket_path);
      config->socket_path = g_steal_pointer (&socket);
    }

  if (g_key_file_has_key (file, GROUP, "MetricsTextfile", NULL))
    {
      g_autofree char *textfile = g_key_file_get_string (file, GROUP, "MetricsTextfile",
                                                         &local);

      if (!textfile)
        return config_error (error, local, path, "MetricsTextfile");
      g_strstrip (textfile);
      if (*textfile && (!g_path_is_absolute (textfile) ||
                        !g_str_has_suffix (textfile, ".prom")))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "%s: [" GROUP "] MetricsTextfile=%s is not an absolute path ending "
                       "in .prom (node_exporter's textfile collector reads only those)",
                       path, textfile);
          return FALSE;
        }
      g_free (config->metrics_textfile);
      config->metrics_textfile = *textfile ? g_steal_pointer (&textfile) : NULL;
    }

  if (g_key_file_has_key (file, GROUP, "SocketGroup", NULL))
    {
      g_autofree char *group = g_key_file_get_string (file, GROUP, "SocketGroup", &local);

      if (!group)
        return config_error (error, local, path, "SocketGroup");
      g_strstrip (group);
      if (!*group)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "%s: [" GROUP "] SocketGroup= is empty; give a group name",
                       path);
          return FALSE;
        }
      g_free (config->socket_group);
      config->socket_group = g_steal_pointer (&group);
      config->socket_group_set = TRUE;
    }

  if (g_key_file_has_key (file, GROUP, "AllowUsers", NULL))
    {
      char **users = g_key_file_get_string_list (file, GROUP, "AllowUsers",
                                                 NULL, &local);
      if (!users)
        {
          /* An empty value is a list of nobody, not a syntax error. */
          if (!g_error_matches (local, G_KEY_FILE_ERROR,
                                G_KEY_FILE_ERROR_INVALID_VALUE))
            return config_error (error, local, path, "AllowUsers");
          g_clear_error (&local);
          users = g_new0 (char *, 1);
        }
      for (guint i = 0; users[i]; i++)
        g_strstrip (users[i]);
      g_strfreev (config->allow_users);
      config->allow_users = users;
    }

  if (!read_uint (file, path, "ClientTimeout", VGICD_MIN_CLIENT_TIMEOUT,
                  VGICD_MAX_CLIENT_TIMEOUT, "number of milliseconds", &config->client_timeout,
                  error))
    return FALSE;
  if (!read_uint (file, path, "MaxSessions", 1, VGICD_MAX_MAX_SESSIONS, "number",
                  &config->max_sessions, error) ||
      !read_uint (file, path, "MaxSessionsPerUser", 1, VGICD_MAX_MAX_SESSIONS, "number",
                  &config->max_sessions_per_user, error) ||
      !read_uint (file, path, "MaxVcpus", 1, VGICD_MAX_MAX_VCPUS, "number", &config->max_vcpus,
                  error) ||
      !read_uint (file, path, "MaxSessionMemory", 16, VGICD_MAX_MAX_SESSION_MEMORY,
                  "number of MiB", &config->max_session_memory, error) ||
      !read_uint (file, path, "MaxHandshakes", 1, VGICD_MAX_MAX_HANDSHAKES, "number",
                  &config->max_handshakes, error) ||
      !read_uint (file, path, "MaxHandshakesPerProcess", 1, VGICD_MAX_MAX_HANDSHAKES, "number",
                  &config->max_handshakes_per_process, error) ||
      !read_uint (file, path, "HandshakeTimeout", VGICD_MIN_HANDSHAKE_TIMEOUT,
                  VGICD_MAX_HANDSHAKE_TIMEOUT, "number of milliseconds",
                  &config->handshake_timeout, error) ||
      !read_uint (file, path, "History", 0, VGICD_MAX_HISTORY, "number of operations",
                  &config->history, error) ||
      !read_uint (file, path, "HistoryVMs", 1, VGICD_MAX_HISTORY_VMS, "number of VMs",
                  &config->history_vms, error))
    return FALSE;
  if (!vgicd_config_read_bool (file, path, GROUP, "Probe", &config->probe, &found, error) ||
      !vgicd_config_read_bool (file, path, GROUP, "Record", &config->record, &found, error))
    return FALSE;
  return TRUE;
}

/* vgicd_config_load() - see vgicd-config.h */
VgicdConfig *
vgicd_config_load (const char *path, GError **error)
{
  g_autoptr (VgicdConfig) config = NULL;
  g_autoptr (GKeyFile) file = g_key_file_new ();
  GError *local = NULL;

  if (!path)
    path = VGICD_DEFAULT_CONFIG;
  config = config_defaults (path);

  if (!g_key_file_load_from_file (file, path, G_KEY_FILE_NONE, &local))
    {
      /* No file means "all defaults": vgicd runs out of the box. */
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_error_free (local);
          return g_steal_pointer (&config);
        }
      g_set_error (error, local->domain, local->code,
                   "cannot read the configuration file %s: %s; fix or remove it",
                   path, local->message);
      g_error_free (local);
      return NULL;
    }

  if (!config_parse (config, file, error))
    return NULL;
  return g_steal_pointer (&config);
}

/* vgicd_config_load_state() - see vgicd-config.h */
gboolean
vgicd_config_load_state (VgicdConfig *config, const char *state_path, GError **error)
{
  g_autoptr (GKeyFile) file = g_key_file_new ();
  GError *local = NULL;
  gboolean found;

  g_free (config->state_path);
  config->state_path = g_strdup (state_path);
  config->mode_from_state = FALSE;
  if (!state_path)
    return TRUE;
  if (!g_key_file_load_from_file (file, state_path, G_KEY_FILE_NONE, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_error_free (local);
          return TRUE;
        }
      g_set_error (error, local->domain, local->code,
                   "cannot read the state file %s: %s; fix or remove it",
                   state_path, local->message);
      g_error_free (local);
      return FALSE;
    }
  if (!vgicd_config_read_mode (file, state_path, GROUP, &config->mode, &found, error))
    return FALSE;
  config->mode_from_state = found;
  return TRUE;
}

/* vgicd_config_free() - free @config (NULL is fine) */
void
vgicd_config_free (VgicdConfig *config)
{
  if (!config)
    return;
  g_free (config->path);
  g_free (config->state_path);
  g_free (config->socket_path);
  g_free (config->metrics_textfile);
  g_free (config->socket_group);
  g_strfreev (config->allow_users);
  g_free (config);
}

/* vgicd_config_save_mode() - see vgicd-config.h */
gboolean
vgicd_config_save_mode (const char *path, VgicdMode mode, GError **error)
{
  g_autoptr (GKeyFile) file = g_key_file_new ();
  g_autofree char *data = NULL;
  GError *local = NULL;
  struct stat st;
  int file_mode = 0644;
  gsize len;

  g_return_val_if_fail ((guint) mode < G_N_ELEMENTS (mode_names), FALSE);

  if (!g_key_file_load_from_file (file, path,
                                  G_KEY_FILE_KEEP_COMMENTS |
                                  G_KEY_FILE_KEEP_TRANSLATIONS, &local))
    {
      /* A missing file is created; an unreadable or broken one is left
       * alone rather than overwritten with a one-line file. */
      if (!g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_set_error (error, local->domain, local->code,
                       "cannot save the mode in %s: %s", path, local->message);
          g_error_free (local);
          return FALSE;
        }
      g_clear_error (&local);
    }

  g_key_file_set_string (file, GROUP, "Mode", vgicd_mode_to_string (mode));
  data = g_key_file_to_data (file, &len, NULL);

  /* The replacement gets the permissions of the file it replaces. */
  if (stat (path, &st) == 0)
    file_mode = st.st_mode & 07777;

  if (!g_file_set_contents_full (path, data, len,
                                 G_FILE_SET_CONTENTS_CONSISTENT, file_mode,
                                 &local))
    {
      g_set_error (error, local->domain, local->code,
                   "cannot save the mode in %s: %s (vgicd needs write access "
                   "to the file's directory; or change the mode for this run "
                   "only, without persisting it)", path, local->message);
      g_error_free (local);
      return FALSE;
    }
  return TRUE;
}
