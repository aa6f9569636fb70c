/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-vms.h - per-VM choices: whether vgicd serves one VM, and how.
 *
 * vgicd is on for every VM of a host that runs it (the patched QEMU reaches
 * it at the well-known socket without any argument).  A VM can be set apart
 * two ways, and vgicd applies the most restrictive of them and of the
 * host's mode (off before single before auto):
 *
 *   the domain's own metadata, which travels with it: libvirt's qemu hook
 *   writes it, at every start and incoming migration, to a runtime file
 *   named by the VM's UUID (/run/vgicd/vms/UUID.conf); vgicd reads it when
 *   the VM's QEMU attaches;
 *
 *   the host's static policy, /etc/vgicd/vms.conf, for fleets whose
 *   orchestrator rewrites domain XML (OpenStack Nova, KubeVirt): groups
 *   [uuid UUID] or [name NAME] with Mode= and Record=; configuration
 *   management puts the same file on every host.
 *
 * Record= (the host's in vgicd.conf, a VM's in vms.conf, which wins) says
 * whether the VM's saves carry a state record rather than QEMU's own GIC
 * fields: for pools where every destination has vgicd.
 *
 * Both are key files; this is the one reader and writer of their format.
 */
#pragma once

#include <glib.h>

#include "vgicd-config.h"

#define VGICD_DEFAULT_VMS_CONF "/etc/vgicd/vms.conf"
#define VGICD_DEFAULT_VMS_DIR "/run/vgicd/vms"

/* What a VM's own metadata asks for (vgicctl enable|disable write it). */
typedef enum {
  VGICD_VM_DEFAULT,	/* no choice: the host's */
  VGICD_VM_WANTED,	/* use vgicd where the host has it */
  VGICD_VM_REQUIRED,	/* do not start or migrate in where vgicd is down */
  VGICD_VM_OFF,		/* never: QEMU's own path */
} VgicdVmChoice;

const char *vgicd_vm_choice_to_string (VgicdVmChoice choice);

/**
 * VgicdVmPolicy - what vgicd applies to one VM
 * @mode: the most restrictive of the host's mode and the VM's choices
 * @source: why, for logs and vgicctl sessions ("host", "domain metadata",
 *	"/etc/vgicd/vms.conf [uuid ...]")
 */
typedef struct {
  VgicdMode mode;
  const char *source;
  gboolean record;
} VgicdVmPolicy;

/**
 * vgicd_vms_lookup() - the policy of the VM @uuid / @name
 * @vms_conf: the static policy file (may not exist)
 * @vms_dir: the folder of runtime files (may not exist)
 * @host: the host's mode
 * @host_record: the host's Record=
 * @uuid: the VM's UUID as QEMU gave it (may be empty)
 * @name: the VM's name
 * @policy: (out): the result; @source points to a static string or into
 *	@buf; @record is the VM's group's Record= if it has one, else @host_record
 * @buf: room for @source
 * @error: set when a file that exists cannot be read at all (the caller
 *	logs it and applies the host's mode: a broken policy file must not stop
 *	a migration).  A vms.conf group that does not parse or holds a bad
 *	value is not an error: it is logged (file, line, key), counted, and
 *	its VM gets mode off; a line outside any readable group makes every
 *	VM off (the policy fails closed, never open).
 */
gboolean vgicd_vms_lookup (const char *vms_conf, const char *vms_dir, VgicdMode host,
                           gboolean host_record,
                           const char *uuid, const char *name, VgicdVmPolicy *policy,
                           char *buf, gsize buf_size, GError **error);

/**
 * vgicd_vms_write() - record the domain @uuid's choice for vgicd (the hook,
 * at prepare); VGICD_VM_DEFAULT removes the record.  Atomic.
 */
gboolean vgicd_vms_write (const char *vms_dir, const char *uuid, const char *name,
                          VgicdVmChoice choice, GError **error);

/**
 * vgicd_vms_check() - every problem of the static policy file @vms_conf,
 * each group's alone (file, line, key), to @diags: what vgicd_vms_lookup()
 * would make a VM fail closed for is an error, as is a [uuid] group whose
 * UUID can match no VM; unknown groups and keys are warnings.  A missing
 * file is none.  vgicd runs it at start and at every reload, and logs it.
 */
void vgicd_vms_check (const char *vms_conf, VgicdDiags *diags);

/* vgicd_vms_broken_total() - vms.conf lines that made a VM fail closed, since start */
guint vgicd_vms_broken_total (void);

/* vgicd_vms_uuid_ok() - a UUID safe to name a file by (hex digits and dashes) */
gboolean vgicd_vms_uuid_ok (const char *uuid);
