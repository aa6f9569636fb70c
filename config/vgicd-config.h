/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-config.h - vgicd's configuration file (/etc/vgicd/vgicd.conf, a
 * GKeyFile) and the per-host mode.
 */
#pragma once

#include <glib.h>

#include "vgicd-conf-file.h"

#define VGICD_DEFAULT_CONFIG "/etc/vgicd/vgicd.conf"
/* What vgicd writes at run time (`vgicctl mode`): its own, not the
 * packaged configuration file, which dpkg and configuration management own. */
#define VGICD_DEFAULT_STATE "/var/lib/vgicd/state.conf"
#define VGICD_DEFAULT_SOCKET "/run/vgicd/vgicd.sock"
/* vCPUs per attached VM that MaxVcpus= may allow: the shape code's limit
 * (VGIC_MAX_VCPUS, asserted in vgicd). */
#define VGICD_MAX_MAX_VCPUS 4096

typedef enum {
  VGICD_MODE_AUTO,	/* batch when the kernel has it, else one by one */
  VGICD_MODE_SINGLE,	/* never batch */
  VGICD_MODE_OFF,	/* decline saves (loads are still served) */
} VgicdMode;

const char *vgicd_mode_to_string (VgicdMode mode);
/* vgicd_mode_stricter() - off before single before auto */
VgicdMode vgicd_mode_stricter (VgicdMode a, VgicdMode b);
gboolean vgicd_mode_from_string (const char *str, VgicdMode *mode, GError **error);

/**
 * vgicd_config_read_mode() - Mode= of @group in the key file @file (read
 * from @path, which messages name)
 * @found: (out): whether the key is there (@mode is left alone if not)
 * @error: a value that is not a mode, naming the accepted ones
 */
gboolean vgicd_config_read_mode (GKeyFile *file, const char *path, const char *group,
                                 VgicdMode *mode, gboolean *found, GError **error);

/* vgicd_config_read_bool() - the same for a boolean @key ("true", "false") */
gboolean vgicd_config_read_bool (GKeyFile *file, const char *path, const char *group,
                                 const char *key, gboolean *value, gboolean *found,
                                 GError **error);

/* What a key of vgicd.conf takes: each has its own check (vgicd-config.c). */
typedef enum {
  VGICD_CONFIG_MODE,	/* auto, single, off */
  VGICD_CONFIG_BOOL,	/* true, false */
  VGICD_CONFIG_UINT,	/* a decimal number in min..max */
  VGICD_CONFIG_PATH,	/* an absolute path */
  VGICD_CONFIG_PROM_PATH,	/* an absolute path ending in .prom, or empty: none */
  VGICD_CONFIG_GROUP,	/* a group name, not empty */
  VGICD_CONFIG_USERS,	/* user names, ;-separated, empty: nobody */
} VgicdConfigType;

/**
 * VgicdConfigKey - one key of vgicd.conf: the parser, its defaults, its
 * "unknown key" message and the documents' check (tests/docs) all read
 * this, so that a key is defined once.
 * @name: the key, as written in the file
 * @group: the key file group it belongs to
 * @type: what it takes
 * @default_value: its default as it would be written in the file, or
 *   NULL when it has none
 * @min, @max: the accepted range (VGICD_CONFIG_UINT only)
 * @unit: what a number counts, as errors name it ("number of milliseconds")
 * @help: one line for the documents' tables
 */
typedef struct {
  const char *name;
  const char *group;
  VgicdConfigType type;
  const char *default_value;
  guint min, max;
  const char *unit;
  gsize offset;	/* its field in VgicdConfig */
  const char *help;
} VgicdConfigKey;

/* vgicd_config_keys() - the keys of vgicd.conf, in the order the docs list
 * them; @n_keys: (out): how many */
const VgicdConfigKey *vgicd_config_keys (gsize *n_keys);
/* vgicd_config_type_to_string() - "mode", "boolean", "number", ... */
const char *vgicd_config_type_to_string (VgicdConfigType type);

typedef struct {
  char *path;		/* the file it was read from (it may not exist) */
  char *state_path;	/* the state file applied over it, or NULL */
  VgicdMode mode;	/* [vgicd] Mode=auto|single|off, or the state file's */
  gboolean mode_from_state;	/* the state file set it (`vgicctl mode`) */
  char *socket_path;	/* [vgicd] Socket= (when not socket-activated) */
  char *socket_group;	/* [vgicd] SocketGroup= of that socket (mode 0660) */
  gboolean socket_group_set;	/* SocketGroup= was in the file */
  char **allow_users;	/* [vgicd] AllowUsers= user names, ;-separated */
  gboolean probe;	/* [vgicd] Probe=true: start-up /dev/kvm probe */
  gboolean record;	/* [vgicd] Record=: saves carry a state record */
  guint client_timeout;	/* [vgicd] ClientTimeout= ms, for libvgicd's calls */
  guint max_sessions;	/* [vgicd] MaxSessions= on the host */
  guint max_sessions_per_user;	/* [vgicd] MaxSessionsPerUser= per QEMU uid */
  guint max_sessions_per_process;	/* [vgicd] MaxSessionsPerProcess= per QEMU pid */
  guint max_vcpus;	/* [vgicd] MaxVcpus= per attached VM */
  guint max_session_memory;	/* [vgicd] MaxSessionMemory= MiB, all sessions */
  guint max_session_memory_per_process;	/* [vgicd] MaxSessionMemoryPerProcess= MiB */
  guint max_handshakes;	/* [vgicd] MaxHandshakes= on the host */
  guint max_handshakes_per_process;	/* [vgicd] MaxHandshakesPerProcess= */
  guint handshake_timeout;	/* [vgicd] HandshakeTimeout= ms */
  guint first_byte_timeout;	/* [vgicd] FirstByteTimeout= ms */
  guint max_connections;	/* [vgicd] MaxConnections= on the host */
  guint max_connections_per_process;	/* [vgicd] MaxConnectionsPerProcess= */
  guint attach_timeout;	/* [vgicd] AttachTimeout= ms */
  guint history;	/* [vgicd] History= operations kept per VM */
  guint history_vms;	/* [vgicd] HistoryVMs= VMs whose history is kept */
  guint history_vms_per_process;	/* [vgicd] HistoryVMsPerProcess= */
  guint log_lines_per_process;	/* [vgicd] LogLinesPerProcess= */
  char *metrics_textfile;	/* [vgicd] MetricsTextfile= .prom path, or NULL */
  gboolean libvirt_hook;	/* [vgicd] LibvirtHook=: libvirt's qemu hook acts (vgicd-hook.c) */
} VgicdConfig;

/**
 * vgicd_config_load() - read @path, then its drop-ins (vgicd_config_dropins(),
 * each over the one before); a missing file gives the defaults
 * (vgicd_config_keys()).  A file that exists but cannot be read, a line
 * that does not parse, or a value a key does not accept is an error naming
 * the file, the line, the key and the accepted values (the first, and how
 * many more); unknown groups and keys are logged, and vgicd runs.
 */
VgicdConfig *vgicd_config_load (const char *path, GError **error);

/**
 * vgicd_config_check() - what vgicd_config_load() reads, with every problem
 * put in @diags instead (file, line, key; errors and warnings): the
 * configuration check.  Returns the configuration as far as it was read;
 * it is what vgicd would run with only when @diags has no error.
 */
VgicdConfig *vgicd_config_check (const char *path, VgicdDiags *diags);

/* vgicd_config_check_file() - the problems of the one file @path, in
 * vgicd.conf's format, without its drop-ins (`vgicd --check-config FILE`);
 * a missing file is an error here */
void vgicd_config_check_file (const char *path, VgicdDiags *diags);

/* vgicd_config_dropins() - @path's drop-ins: @path.d/NAME.conf, in byte
 * order of NAME (NULL-terminated; none when the folder is missing) */
char **vgicd_config_dropins (const char *path);

/* vgicd_config_check_state() - the state file @state_path's problems
 * (vgicd_config_load_state() refuses what this reports as an error) */
void vgicd_config_check_state (const char *state_path, VgicdDiags *diags);

/**
 * vgicd_config_load_state() - apply the state file @state_path (what
 * `vgicctl mode MODE` saved) over @config: its Mode= wins over the
 * configuration file's.  A missing file changes nothing; a broken one is
 * an error naming it.
 */
gboolean vgicd_config_load_state (VgicdConfig *config, const char *state_path,
                                  GError **error);
void vgicd_config_free (VgicdConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdConfig, vgicd_config_free)

/**
 * vgicd_config_save_mode() - set Mode= in the key file @path (vgicd's state
 * file), keeping the file's other keys and comments; the file is created,
 * or replaced atomically
 */
gboolean vgicd_config_save_mode (const char *path, VgicdMode mode, GError **error);
