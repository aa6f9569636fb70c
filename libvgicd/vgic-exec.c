/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-exec.c - executes vGIC access lists with real ioctl(2) calls.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "vgic-exec.h"
#include "vgicd/vgic-entry.h"

#define VGIC_EXEC_ERROR (g_quark_from_static_string ("vgic-exec-error"))

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

gboolean
vgic_exec_check (const struct kvm_vgic_batch_entry *entries, uint32_t n,
                 VgicExecDir dir, GError **error)
{
  for (uint32_t i = 0; i < n; i++)
    {
      const struct kvm_vgic_batch_entry *e = &entries[i];

      if (!vgic_entry_group_is_data (e->group))
        {
          g_set_error (error, VGIC_EXEC_ERROR, 1,
                       "entry %u: group %u is not a vGIC register group; "
                       "refusing to run the list", i, e->group);
          return FALSE;
        }
      if (e->reserved != 0)
        {
          g_set_error (error, VGIC_EXEC_ERROR, 3,
                       "entry %u: its reserved field is not 0; refusing to run the list", i);
          return FALSE;
        }
      if (dir == VGIC_EXEC_WRITE && !vgic_entry_value_fits (e->group, e->value))
        {
          g_set_error (error, VGIC_EXEC_ERROR, 2,
                       "entry %u: value 0x%" G_GINT64_MODIFIER "x does not fit "
                       "the 32-bit buffer of group %u", i, (guint64) e->value,
                       e->group);
          return FALSE;
        }
    }
  return TRUE;
}

/* One access per ioctl.  The width of the user buffer is the group's: the
 * kernel copies a u32 for DIST/REDIST/LEVEL_INFO and a u64 for CPU_SYSREGS
 * (a u32 there would let it write 8 bytes into 4). */
static unsigned long
request_of (VgicExecDir dir)
{
  return dir == VGIC_EXEC_READ ? KVM_GET_DEVICE_ATTR : KVM_SET_DEVICE_ATTR;
}

static gboolean
run_single (int fd, struct kvm_vgic_batch_entry *entries, uint32_t n,
            VgicExecDir dir, VgicExecReport *report)
{
  const unsigned long req = request_of (dir);

  for (uint32_t i = 0; i < n; i++)
    {
      struct kvm_vgic_batch_entry *e = &entries[i];
      uint32_t v32 = (uint32_t) e->value;
      uint64_t v64 = e->value;
      gboolean wide = vgic_entry_group_is_wide (e->group);
      struct kvm_device_attr attr = {
        .group = e->group,
        .attr = e->attr,
        .addr = wide ? (uint64_t) (uintptr_t) &v64 : (uint64_t) (uintptr_t) &v32,
      };

      report->ioctls++;
      if (ioctl (fd, req, &attr) < 0)
        {
          report->error = -errno;
          report->error_index = i;
          return FALSE;
        }
      if (dir == VGIC_EXEC_READ)
        e->value = wide ? v64 : v32;
      report->done++;
    }
  return TRUE;
}

static gboolean
run_batch (int fd, struct kvm_vgic_batch_entry *entries, uint32_t n,
           VgicExecDir dir, VgicExecReport *report)
{
  const unsigned long req = request_of (dir);

  for (uint32_t off = 0; off < n;)
    {
      uint32_t chunk = MIN (n - off, VGICD_BATCH_CHUNK);
      struct kvm_vgic_batch batch = {
        .nr_entries = chunk,
        .entries = (uint64_t) (uintptr_t) &entries[off],
      };
      struct kvm_device_attr attr = {
        .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS,
        .attr = 0,
        .addr = (uint64_t) (uintptr_t) &batch,
      };

      report->ioctls++;
      if (ioctl (fd, req, &attr) < 0)
        {
          /* The kernel wrote nr_done before anything else: the entries
           * before it are done, the one at it failed (or, for a batch
           * refused as a whole before any access, nr_done is 0). */
          uint32_t done = MIN (batch.nr_done, chunk - 1);

          report->done += done;
          report->error = -errno;
          report->error_index = off + done;
          return FALSE;
        }
      report->done += chunk;
      off += chunk;
    }
  return TRUE;
}

gboolean
vgic_exec_run (int dev_fd, struct kvm_vgic_batch_entry *entries, uint32_t n,
               VgicExecDir dir, VgicExecVia via, VgicExecReport *report)
{
  uint64_t t0 = now_ns ();
  gboolean ok;

  memset (report, 0, sizeof (*report));
  ok = via == VGIC_EXEC_BATCH ? run_batch (dev_fd, entries, n, dir, report)
                              : run_single (dev_fd, entries, n, dir, report);
  report->ns = now_ns () - t0;
  return ok;
}
