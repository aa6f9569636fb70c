/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-config.h - vgicd's configuration file (/etc/vgicd/vgicd.conf, a
 * GKeyFile) and the per-host mode.
 */
#pragma once

#include <glib.h>

#define VGICD_DEFAULT_CONFIG "/etc/vgicd/vgicd.conf"
/* What vgicd writes at run time (`vgicctl mode`): its own, not the
 * packaged configuration file, which dpkg and configuration management own. */
#define VGICD_DEFAULT_STATE "/var/lib/vgicd/state.conf"
#define VGICD_DEFAULT_SOCKET "/run/vgicd/vgicd.sock"
#define VGICD_DEFAULT_SOCKET_GROUP "kvm"
/* The bound on every libvgicd call, told to QEMU at attach (ms). */
#define VGICD_DEFAULT_CLIENT_TIMEOUT 250
#define VGICD_MIN_CLIENT_TIMEOUT 10
#define VGICD_MAX_CLIENT_TIMEOUT 5000
/* Sessions (attached VMs) on the host, and per QEMU user: each holds its
 * plan, its window and its state (up to about 6 MiB at 4,096 vCPUs). */
#define VGICD_DEFAULT_MAX_SESSIONS 1024
#define VGICD_MAX_MAX_SESSIONS 65536
/* vCPUs per attached VM: KVM's own limit on arm64 (KVM_MAX_VCPUS, 512 in
 * Linux 6.1 and 6.12) by default; the shape code takes up to 4,096. */
#define VGICD_DEFAULT_MAX_VCPUS 512
#define VGICD_MAX_MAX_VCPUS 4096	/* VGIC_MAX_VCPUS (asserted in vgicd) */
/* What the attached VMs' windows, plans and states may take together, in
 * MiB (vgicd_session_footprint()).  The unit's MemoryMax= is above it. */
#define VGICD_DEFAULT_MAX_SESSION_MEMORY 512
/* The door (vgicd-server.c): connections in their D-Bus handshake, on the
 * host and per process, and how long each may take. */
#define VGICD_DEFAULT_MAX_HANDSHAKES 128
#define VGICD_DEFAULT_MAX_HANDSHAKES_PER_PROCESS 32
#define VGICD_MAX_MAX_HANDSHAKES 1024
#define VGICD_DEFAULT_HANDSHAKE_TIMEOUT 5000
#define VGICD_MIN_HANDSHAKE_TIMEOUT 100
#define VGICD_MAX_HANDSHAKE_TIMEOUT 60000
#define VGICD_MAX_MAX_SESSION_MEMORY 65536
/* Operation history (vgicd-history.h): operations kept per VM (0: none),
 * and VMs kept, the least recently active dropped first.  About 300 bytes
 * an operation with its message: 32 x 256 is under 3 MiB. */
#define VGICD_DEFAULT_HISTORY 32
#define VGICD_MAX_HISTORY 1024
#define VGICD_DEFAULT_HISTORY_VMS 256
#define VGICD_MAX_HISTORY_VMS 65536

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
  guint max_vcpus;	/* [vgicd] MaxVcpus= per attached VM */
  guint max_session_memory;	/* [vgicd] MaxSessionMemory= MiB, all sessions */
  guint max_handshakes;	/* [vgicd] MaxHandshakes= on the host */
  guint max_handshakes_per_process;	/* [vgicd] MaxHandshakesPerProcess= */
  guint handshake_timeout;	/* [vgicd] HandshakeTimeout= ms */
  guint history;	/* [vgicd] History= operations kept per VM */
  guint history_vms;	/* [vgicd] HistoryVMs= VMs whose history is kept */
  char *metrics_textfile;	/* [vgicd] MetricsTextfile= .prom path, or NULL */
} VgicdConfig;

/**
 * vgicd_config_load() - read @path; a missing file gives the defaults
 * (Mode=auto, Socket=/run/vgicd/vgicd.sock, SocketGroup=kvm,
 * AllowUsers=root;libvirt-qemu, Probe=true, ClientTimeout=250,
 * MaxSessions=1024, MaxSessionsPerUser=1024, MaxVcpus=512,
 * MaxSessionMemory=512, MaxHandshakes=128, MaxHandshakesPerProcess=32,
 * HandshakeTimeout=5000, History=32, HistoryVMs=256, no
 * MetricsTextfile=).  A file
 * that exists but does not parse, or holds an unknown mode, is an error
 * that names the file, the key and the accepted values.
 */
VgicdConfig *vgicd_config_load (const char *path, GError **error);

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
