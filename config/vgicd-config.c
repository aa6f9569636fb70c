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

#include <string.h>

#include <errno.h>
#include <sys/stat.h>

#define GROUP "vgicd"
#define ACCEPTED_MODES "auto, single, off"

static const char *const mode_names[] = {
  [VGICD_MODE_AUTO] = "auto",
  [VGICD_MODE_SINGLE] = "single",
  [VGICD_MODE_OFF] = "off",
};

#define FIELD(f) G_STRUCT_OFFSET (VgicdConfig, f)
#define KEY(name, type, default_value, field, help) \
  { name, GROUP, VGICD_CONFIG_##type, default_value, 0, 0, NULL, FIELD (field), help }
#define NUMBER(name, default_value, min, max, unit, field, help) \
  { name, GROUP, VGICD_CONFIG_UINT, default_value, min, max, unit, FIELD (field), help }

/*
 * The keys of [vgicd], one row each: the parser reads them, the defaults
 * come from them, the "unknown key" message lists them, and tests/docs
 * checks the man page, the operations guide and the shipped file against
 * them.  A default is written as in the file, and parsed as the file is.
 */
static const VgicdConfigKey config_keys[] = {
  KEY ("Mode", MODE, "auto", mode,
       "how this host's side of a migration runs: auto, single or off"),
  KEY ("Socket", PATH, VGICD_DEFAULT_SOCKET, socket_path,
       "where vgicd listens when it is not socket-activated"),
  /* Debian's libvirt runs QEMU as libvirt-qemu, primary group kvm. */
  KEY ("SocketGroup", GROUP, "kvm", socket_group,
       "the group of that socket (mode 0660)"),
  KEY ("AllowUsers", USERS, "root;libvirt-qemu", allow_users,
       "the users whose QEMUs may attach, ;-separated"),
  KEY ("Probe", BOOL, "true", probe,
       "at start, ask /dev/kvm for the batch group and time the one-by-one path"),
  /* The bound on every libvgicd call, told to QEMU at attach: what a stuck
   * vgicd may cost a paused guest. */
  NUMBER ("ClientTimeout", "250", 10, 5000, "number of milliseconds", client_timeout,
          "what a save or a load may spend waiting for vgicd, in ms"),
  KEY ("Record", BOOL, "false", record,
       "saves on this host send the vGIC as vgicd's state record"),
  /* Sessions (attached VMs) on the host, and per QEMU user: each holds its
   * plan, its window and its state (up to about 6 MiB at 4,096 vCPUs). */
  NUMBER ("MaxSessions", "1024", 1, 65536, "number", max_sessions,
          "VMs attached at once on the host"),
  /* Every libvirt QEMU runs as the same user, so a per-user bound cannot
   * be lower than the host's; the fair share is the process's. */
  NUMBER ("MaxSessionsPerUser", "1024", 1, 65536, "number", max_sessions_per_user,
          "VMs attached at once per user QEMU runs as"),
  /* A QEMU runs one VM and holds one session, two for a moment when it
   * attaches again before vgicd has seen its old connection close. */
  NUMBER ("MaxSessionsPerProcess", "2", 1, 65536, "number", max_sessions_per_process,
          "sessions one process (one QEMU) holds at once"),
  /* KVM's own limit on arm64 (KVM_MAX_VCPUS, 512 in Linux 6.1 and 6.12)
   * by default; the shape code takes up to 4,096. */
  NUMBER ("MaxVcpus", "512", 1, VGICD_MAX_MAX_VCPUS, "number", max_vcpus,
          "vCPUs in one attached VM"),
  /* What the attached VMs' windows, plans and states may take together
   * (vgicd_session_footprint()).  The unit's MemoryMax= is above it. */
  NUMBER ("MaxSessionMemory", "512", 16, 65536, "number of MiB", max_session_memory,
          "MiB held by all attached VMs' sessions together"),
  /* Two sessions of MaxVcpus='s 512 vCPUs (2.7 MiB each) fit, with room;
   * a host that raises MaxVcpus= raises this with it. */
  NUMBER ("MaxSessionMemoryPerProcess", "16", 1, 65536, "number of MiB",
          max_session_memory_per_process, "MiB held by one process's sessions together"),
  /* The door (vgicd-server.c): connections in their D-Bus handshake, on
   * the host and per process, and how long each may take. */
  NUMBER ("MaxHandshakes", "128", 1, 1024, "number", max_handshakes,
          "connections in their D-Bus handshake, on the host"),
  NUMBER ("MaxHandshakesPerProcess", "32", 1, 1024, "number", max_handshakes_per_process,
          "connections in their D-Bus handshake, per process"),
  NUMBER ("HandshakeTimeout", "5000", 100, 60000, "number of milliseconds", handshake_timeout,
          "what a connection may take to finish its handshake, in ms"),
  /* A D-Bus client writes its first byte as soon as it connects. */
  NUMBER ("FirstByteTimeout", "1000", 10, 60000, "number of milliseconds", first_byte_timeout,
          "what a connection may take to send its first byte, in ms"),
  /* Connections in any state (in their handshake, not attached yet,
   * attached), on the host and per process (SO_PEERCRED): a QEMU needs
   * one a VM, two while it attaches again; the host, MaxSessions= and
   * room for the door. */
  NUMBER ("MaxConnections", "1280", 16, 65536, "number", max_connections,
          "connections to vgicd's socket, on the host"),
  NUMBER ("MaxConnectionsPerProcess", "32", 1, 65536, "number", max_connections_per_process,
          "connections to vgicd's socket, per process"),
  /* libvgicd attaches at once after its handshake. */
  NUMBER ("AttachTimeout", "5000", 100, 60000, "number of milliseconds", attach_timeout,
          "what a connection may take to attach after its handshake, in ms"),
  /* Operation history (vgicd-history.h): about 300 bytes an operation
   * with its message, so 32 x 256 is under 3 MiB. */
  NUMBER ("History", "32", 0, 1024, "number of operations", history,
          "operations kept per VM for vgicctl history (0: none)"),
  NUMBER ("HistoryVMs", "256", 1, 65536, "number of VMs", history_vms,
          "VMs whose history is kept, the least recently active dropped first"),
  /* A QEMU runs one VM: its history is one VM's, a second if it is
   * migrated back into the same process's place; more is a peer
   * claiming UUIDs, which evicts its own oldest, never another's. */
  NUMBER ("HistoryVMsPerProcess", "4", 1, 65536, "number of VMs", history_vms_per_process,
          "VMs one process's sessions may add to the history"),
  /* journald drops a service's lines past its rate limit, every VM's
   * with them: a peer that makes vgicd write one line per cheap call is
   * held to its share (daemon/vgicd-logshare.c).  A QEMU writes
   * three to five lines a migration. */
  NUMBER ("LogLinesPerProcess", "120", 1, 65536, "number of lines", log_lines_per_process,
          "log lines one process (one QEMU) may cause in a minute; the rest are counted"),
  KEY ("MetricsTextfile", PROM_PATH, NULL, metrics_textfile,
       "a .prom file for node_exporter's textfile collector"),
  /* Read by libvirt's qemu hook, not by vgicd: the off switch that lasts
   * (this file is a conffile; the hook's link in /etc/libvirt/hooks/qemu.d
   * is the package's, and comes back with each upgrade). */
  KEY ("LibvirtHook", BOOL, "true", libvirt_hook,
       "libvirt's qemu hook hands domains' choices to vgicd (false: it does nothing)"),
};

/* vgicd_config_keys() - see vgicd-config.h */
const VgicdConfigKey *
vgicd_config_keys (gsize *n_keys)
{
  *n_keys = G_N_ELEMENTS (config_keys);
  return config_keys;
}

/* vgicd_config_type_to_string() - see vgicd-config.h */
const char *
vgicd_config_type_to_string (VgicdConfigType type)
{
  switch (type)
    {
    case VGICD_CONFIG_MODE:
      return "mode";
    case VGICD_CONFIG_BOOL:
      return "boolean";
    case VGICD_CONFIG_UINT:
      return "number";
    case VGICD_CONFIG_PATH:
      return "path";
    case VGICD_CONFIG_PROM_PATH:
      return "prom-path";
    case VGICD_CONFIG_GROUP:
      return "group";
    case VGICD_CONFIG_USERS:
      return "users";
    }
  return "invalid";
}

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

/* where() - "PATH: " before a message, or nothing when @path is NULL (the
 * configuration check puts the file and the line there itself) */
static char *
where (const char *path)
{
  return path ? g_strdup_printf ("%s: ", path) : g_strdup ("");
}

/* vgicd_config_read_mode() - see vgicd-config.h */
gboolean
vgicd_config_read_mode (GKeyFile *file, const char *path, const char *group,
                        VgicdMode *mode, gboolean *found, GError **error)
{
  g_autofree char *value = NULL;
  GError *local = NULL;
  g_autofree char *prefix = where (path);

  *found = FALSE;
  if (!g_key_file_has_key (file, group, "Mode", NULL))
    return TRUE;
  value = g_key_file_get_string (file, group, "Mode", &local);
  if (!value)
    {
      g_set_error (error, G_KEY_FILE_ERROR, local->code, "%s[%s] Mode: %s",
                   prefix, group, local->message);
      g_error_free (local);
      return FALSE;
    }
  g_strstrip (value);
  if (!vgicd_mode_from_string (value, mode, NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s[%s] Mode=%s is not a mode; accepted values: " ACCEPTED_MODES,
                   prefix, group, value);
      return FALSE;
    }
  *found = TRUE;
  return TRUE;
}

/* vgicd_config_read_bool() - see vgicd-config.h */
gboolean
vgicd_config_read_bool (GKeyFile *file, const char *path, const char *group, const char *key,
                        gboolean *value, gboolean *found, GError **error)
{
  GError *local = NULL;
  gboolean v;
  g_autofree char *prefix = where (path);

  *found = FALSE;
  if (!g_key_file_has_key (file, group, key, NULL))
    return TRUE;
  v = g_key_file_get_boolean (file, group, key, &local);
  if (local)
    {
      g_autofree char *text = g_key_file_get_value (file, group, key, NULL);

      g_error_free (local);
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s[%s] %s=%s is not a boolean; accepted values: true, false",
                   prefix, group, key, text ? text : "");
      return FALSE;
    }
  *value = v;
  *found = TRUE;
  return TRUE;
}

/* config_error() - @cause as the error of @key, which it names */
static gboolean
config_error (GError **error, GError *cause, const VgicdConfigKey *key)
{
  g_set_error (error, G_KEY_FILE_ERROR, cause->code, "[%s] %s: %s", key->group, key->name,
               cause->message);
  g_error_free (cause);
  return FALSE;
}

/* An unsigned key in @key's min..max; its unit names it in the error
 * ("number", "number of milliseconds"). */
static gboolean
read_uint (GKeyFile *file, const VgicdConfigKey *key, guint *out, GError **error)
{
  g_autofree char *value = g_key_file_get_value (file, key->group, key->name, NULL);
  guint64 n = 0;

  g_strstrip (value);
  if (!g_ascii_string_to_unsigned (value, 10, key->min, key->max, &n, NULL))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[%s] %s=%s is not a %s in %u..%u", key->group, key->name, value,
                   key->unit, key->min, key->max);
      return FALSE;
    }
  *out = (guint) n;
  return TRUE;
}

/* A string key, stripped, and checked as its type says. */
static char *
read_string (GKeyFile *file, const VgicdConfigKey *key, GError **error)
{
  GError *local = NULL;
  g_autofree char *value = g_key_file_get_string (file, key->group, key->name, &local);

  if (!value)
    {
      config_error (error, local, key);
      return NULL;
    }
  g_strstrip (value);
  switch (key->type)
    {
    case VGICD_CONFIG_PATH:
      if (!g_path_is_absolute (value))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "[%s] %s=%s is not an absolute path", key->group, key->name, value);
          return NULL;
        }
      break;
    case VGICD_CONFIG_PROM_PATH:
      if (*value && (!g_path_is_absolute (value) || !g_str_has_suffix (value, ".prom")))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "[%s] %s=%s is not an absolute path ending "
                       "in .prom (node_exporter's textfile collector reads only those)",
                       key->group, key->name, value);
          return NULL;
        }
      break;
    case VGICD_CONFIG_GROUP:
      if (!*value)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "[%s] %s= is empty; give a group name", key->group, key->name);
          return NULL;
        }
      break;
    default:
      g_assert_not_reached ();
    }
  return g_steal_pointer (&value);
}

static char **
read_users (GKeyFile *file, const VgicdConfigKey *key, GError **error)
{
  GError *local = NULL;
  char **users = g_key_file_get_string_list (file, key->group, key->name, NULL, &local);

  if (!users)
    {
      /* An empty value is a list of nobody, not a syntax error. */
      if (!g_error_matches (local, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE))
        {
          config_error (error, local, key);
          return NULL;
        }
      g_clear_error (&local);
      users = g_new0 (char *, 1);
    }
  for (guint i = 0; users[i]; i++)
    g_strstrip (users[i]);
  return users;
}

/* Set @key's field of @config from @file, which has the key. */
static gboolean
read_key (VgicdConfig *config, GKeyFile *file, const VgicdConfigKey *key, GError **error)
{
  gpointer field = G_STRUCT_MEMBER_P (config, key->offset);
  gboolean found;

  switch (key->type)
    {
    case VGICD_CONFIG_MODE:
      return vgicd_config_read_mode (file, NULL, key->group, field, &found, error);
    case VGICD_CONFIG_BOOL:
      return vgicd_config_read_bool (file, NULL, key->group, key->name, field, &found, error);
    case VGICD_CONFIG_UINT:
      return read_uint (file, key, field, error);
    case VGICD_CONFIG_PATH:
    case VGICD_CONFIG_PROM_PATH:
    case VGICD_CONFIG_GROUP:
      {
        char *value = read_string (file, key, error);

        if (!value)
          return FALSE;
        g_free (*(char **) field);
        /* An empty MetricsTextfile= is none, as if it were not there. */
        if (!*value)
          g_clear_pointer (&value, g_free);
        *(char **) field = value;
        return TRUE;
      }
    case VGICD_CONFIG_USERS:
      {
        char **users = read_users (file, key, error);

        if (!users)
          return FALSE;
        g_strfreev (*(char ***) field);
        *(char ***) field = users;
        return TRUE;
      }
    }
  g_return_val_if_reached (FALSE);
}

/* The table's keys by name, NULL-terminated, for the unknown-key check. */
static const char *const *
key_names (void)
{
  static const char *names[G_N_ELEMENTS (config_keys) + 1];

  if (!names[0])
    for (guint k = 0; k < G_N_ELEMENTS (config_keys); k++)
      names[k] = config_keys[k].name;
  return names;
}

/* config_apply() - set @config from the keys @file has; every problem
 * (an unknown group or key: a warning; a value a key refuses: an error) to
 * @diags with its line.  A refused value leaves the key as it was. */
static void
config_apply (VgicdConfig *config, const VgicdConfFile *file, VgicdDiags *diags)
{
  static const char *const groups[] = { GROUP, NULL };
  GKeyFile *keys = vgicd_conf_file_keys (file);
  const char *path = vgicd_conf_file_path (file);
  const guint *lines;
  const char *const *names = vgicd_conf_file_groups (file, &lines);

  for (guint i = 0; names[i]; i++)
    {
      const char *close;

      if (g_str_equal (names[i], GROUP) || vgicd_conf_file_group_line (file, names[i]) != lines[i])
        continue;	/* [vgicd], or said at the group's first header */
      close = vgicd_conf_closest (names[i], groups);
      vgicd_diags_add (diags, VGICD_DIAG_WARNING, path, lines[i], names[i], NULL,
                       "unknown group [%s] ignored%s%s%s (vgicd.conf has one group, ["
                       GROUP "])", names[i], close ? "; did you mean [" : "",
                       close ? close : "", close ? "]?" : "");
    }
  vgicd_conf_check_keys (file, GROUP, key_names (), diags);

  for (guint k = 0; k < G_N_ELEMENTS (config_keys); k++)
    {
      const VgicdConfigKey *key = &config_keys[k];
      g_autoptr (GError) error = NULL;

      if (!g_key_file_has_key (keys, key->group, key->name, NULL))
        continue;
      if (!read_key (config, keys, key, &error))
        {
          vgicd_diags_add (diags, VGICD_DIAG_ERROR, path,
                           vgicd_conf_file_key_line (file, key->group, key->name),
                           key->group, key->name, "%s", error->message);
          continue;
        }
      if (key->offset == FIELD (socket_group))
        config->socket_group_set = TRUE;
    }
}

/* The table's defaults, written as a key file and read as the operator's
 * would be: a default that its own key would refuse is a bug caught at
 * once (the tests load the defaults). */
static VgicdConfig *
config_defaults (const char *path)
{
  g_autoptr (VgicdConfig) config = g_new0 (VgicdConfig, 1);
  g_autoptr (GKeyFile) file = g_key_file_new ();

  for (guint k = 0; k < G_N_ELEMENTS (config_keys); k++)
    {
      const VgicdConfigKey *key = &config_keys[k];
      g_autoptr (GError) error = NULL;

      if (!key->default_value)
        continue;
      g_key_file_set_value (file, key->group, key->name, key->default_value);
      if (!read_key (config, file, key, &error))
        g_error ("the default of %s: %s", key->name, error->message);
    }
  config->path = g_strdup (path);
  return g_steal_pointer (&config);
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* vgicd_config_dropins() - see vgicd-config.h */
char **
vgicd_config_dropins (const char *path)
{
  g_autofree char *dir = g_strconcat (path, ".d", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr (GPtrArray) files = g_ptr_array_new_null_terminated (0, g_free, TRUE);
  const char *name;

  while (d && (name = g_dir_read_name (d)))
    if (g_str_has_suffix (name, ".conf") && name[0] != '.')
      g_ptr_array_add (files, g_build_filename (dir, name, NULL));
  /* Byte order (LC_ALL=C), as systemd orders its drop-ins. */
  g_ptr_array_sort (files, compare_names);
  return (char **) g_ptr_array_free (g_steal_pointer (&files), FALSE);
}

/* read_file() - apply @file to @config; a missing file is no problem
 * unless @must_exist */
static void
read_file (VgicdConfig *config, const char *file, gboolean must_exist, VgicdDiags *diags)
{
  g_autoptr (VgicdConfFile) conf = NULL;
  g_autoptr (GError) error = NULL;

  conf = vgicd_conf_file_read (file, "ignored", diags, &error);
  if (!conf)
    {
      /* No file means "all defaults": vgicd runs out of the box. */
      if (must_exist || !g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        vgicd_diags_add (diags, VGICD_DIAG_ERROR, file, 0, NULL, NULL,
                         "cannot read the configuration file: %s; fix or remove it",
                         error->message);
      return;
    }
  config_apply (config, conf, diags);
}

/* vgicd_config_check() - see vgicd-config.h */
VgicdConfig *
vgicd_config_check (const char *path, VgicdDiags *diags)
{
  g_autoptr (VgicdConfig) config = NULL;
  g_auto (GStrv) dropins = NULL;

  if (!path)
    path = VGICD_DEFAULT_CONFIG;
  config = config_defaults (path);
  read_file (config, path, FALSE, diags);
  dropins = vgicd_config_dropins (path);
  for (guint i = 0; dropins[i]; i++)
    read_file (config, dropins[i], FALSE, diags);
  return g_steal_pointer (&config);
}

/* vgicd_config_check_file() - see vgicd-config.h */
void
vgicd_config_check_file (const char *path, VgicdDiags *diags)
{
  g_autoptr (VgicdConfig) config = config_defaults (path);

  read_file (config, path, TRUE, diags);
}

/* vgicd_config_load() - see vgicd-config.h */
VgicdConfig *
vgicd_config_load (const char *path, GError **error)
{
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autoptr (VgicdConfig) config = vgicd_config_check (path, diags);

  if (diags->errors)
    {
      vgicd_diags_set_error (diags, error);
      return NULL;
    }
  vgicd_diags_log (diags);
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

/* vgicd_config_check_state() - see vgicd-config.h */
void
vgicd_config_check_state (const char *state_path, VgicdDiags *diags)
{
  static const char *const known[] = { "Mode", NULL };
  g_autoptr (VgicdConfFile) conf = NULL;
  g_autoptr (GError) error = NULL;
  VgicdMode mode;
  gboolean found;

  conf = vgicd_conf_file_read (state_path, "ignored", diags, &error);
  if (!conf)
    {
      if (!g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        vgicd_diags_add (diags, VGICD_DIAG_ERROR, state_path, 0, NULL, NULL,
                         "cannot read the state file: %s; fix or remove it", error->message);
      return;
    }
  vgicd_conf_check_keys (conf, GROUP, known, diags);
  if (!vgicd_config_read_mode (vgicd_conf_file_keys (conf), NULL, GROUP, &mode, &found, &error))
    vgicd_diags_add (diags, VGICD_DIAG_ERROR, state_path,
                     vgicd_conf_file_key_line (conf, GROUP, "Mode"), GROUP, "Mode", "%s",
                     error->message);
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
