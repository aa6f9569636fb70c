/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-batch-probe.c - the batch group's probe: HAS, then a batched read
 * compared with single reads, in memory a kernel of another layout cannot
 * be made to write outside of (the theory is in vgic-batch-probe.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgic-batch-probe.h"
#include "vgicd/kvm-call.h"
#include "vgicd/vgic-entry.h"

/* What the probe reads: registers every initialized vGICv3 has, at offsets
 * below 16, of the distributor and of the redistributor of affinity 0 (the
 * attr's mpidr field is 0, so each attr is the offset itself). */
static const struct {
  guint32 group;
  guint32 offset;
  const char *name;
} probe_regs[] = {
  { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x0, "GICD_CTLR" },
  { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x4, "GICD_TYPER" },
  { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 0x8, "GICD_IIDR" },
  { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, 0x0, "GICR_CTLR" },
  { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, 0x4, "GICR_IIDR" },
  { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, 0x8, "GICR_TYPER" },
  { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, 0xc, "GICR_TYPER[63:32]" },
};
#define NR_PROBE G_N_ELEMENTS (probe_regs)

/* Every small word the probe hands the kernel is below this. */
#define SMALL_LIMIT 0x10u
/* Guards and the entry area: larger than any plausible entry stride times
 * the few entries a misread count could start with, and whole pages. */
#define SPAN (64u * 1024u)

typedef struct {
  guint8 *base;		/* the whole reservation, guards included */
  gsize size;
  guint8 *header;	/* one page: struct kvm_vgic_batch, then zeros */
  gsize header_size;
  guint8 *entries;	/* SPAN bytes: the entries, then zeros */
  guint8 *scratch;	/* one page of zeros: the entries' value pointers */
  gsize scratch_size;
} ProbeMap;

static int
say (char **why, int verdict, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static int
say (char **why, int verdict, const char *fmt, ...)
{
  if (why)
    {
      va_list ap;

      va_start (ap, fmt);
      *why = g_strdup_vprintf (fmt, ap);
      va_end (ap);
    }
  return verdict;
}

/* The verdict on a group 10 that is not this UAPI, with what showed it. */
static int
foreign (char **why, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static int
foreign (char **why, const char *fmt, ...)
{
  if (why)
    {
      g_autofree char *detail = NULL;
      va_list ap;

      va_start (ap, fmt);
      detail = g_strdup_vprintf (fmt, ap);
      va_end (ap);
      *why = g_strdup_printf ("the kernel's device-attr group %u is another batch "
                              "interface (%s): not used",
                              KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, detail);
    }
  return VGIC_BATCH_PROBE_FOREIGN;
}

static gboolean
map_new (ProbeMap *m)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gsize guard = MAX (SPAN, page), span = MAX (SPAN, page);

  m->header_size = page;
  m->scratch_size = page;
  m->size = guard + m->header_size + span + m->scratch_size + guard;
  m->base = mmap (NULL, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m->base == MAP_FAILED)
    return FALSE;
  m->header = m->base + guard;
  m->entries = m->header + m->header_size;
  m->scratch = m->entries + span;
  /* Anonymous memory is zeroed: the comparison below relies on it. */
  if (mprotect (m->header, m->header_size + span + m->scratch_size, PROT_READ | PROT_WRITE) < 0)
    {
      munmap (m->base, m->size);
      return FALSE;
    }
  return TRUE;
}

static gboolean
all_zero (const guint8 *p, gsize n)
{
  for (gsize i = 0; i < n; i++)
    if (p[i])
      return FALSE;
  return TRUE;
}

/* Single reads of probe_regs into @values; 0 or -errno, *@failed set. */
static int
read_single (int fd, guint32 *values, guint *failed)
{
  for (guint i = 0; i < NR_PROBE; i++)
    {
      struct kvm_device_attr a = {
        .group = probe_regs[i].group,
        .attr = probe_regs[i].offset,
        .addr = (guint64) (uintptr_t) &values[i],
      };

      if (kvm_call (fd, KVM_GET_DEVICE_ATTR, &a) < 0)
        {
          *failed = i;
          return -errno;
        }
    }
  return 0;
}

/* The verdict on what the batch left in the mapping. */
static int
judge (const ProbeMap *m, const guint32 *values, char **why)
{
  const struct kvm_vgic_batch *b = (const struct kvm_vgic_batch *) m->header;
  const struct kvm_vgic_batch_entry *e = (const struct kvm_vgic_batch_entry *) m->entries;
  gsize used = NR_PROBE * sizeof *e;

  if (b->nr_entries != NR_PROBE || b->flags || b->reserved ||
      b->entries != (guint64) (uintptr_t) m->entries ||
      !all_zero (m->header + sizeof *b, m->header_size - sizeof *b))
    return foreign (why, "it wrote into the batch header where this UAPI has input fields");
  if (b->nr_done != NR_PROBE)
    return foreign (why, "it accepted a batch of %u reads but reported %u done",
                    (guint) NR_PROBE, b->nr_done);
  if (!all_zero (m->entries + used, SPAN - used) || !all_zero (m->scratch, m->scratch_size))
    return foreign (why, "it wrote outside the entries' values");
  for (guint i = 0; i < NR_PROBE; i++)
    {
      if (e[i].group != probe_regs[i].group || e[i].reserved ||
          e[i].attr != probe_regs[i].offset)
        return foreign (why, "it wrote into entry %u's group or attr", i);
      if (e[i].value != values[i])
        return foreign (why, "it read %s as 0x%" G_GINT64_MODIFIER "x where a single "
                        "read gives 0x%x", probe_regs[i].name, (guint64) e[i].value, values[i]);
    }
  return say (why, VGIC_BATCH_PROBE_OURS, "the kernel has the vGIC batch group "
              "(%u registers read as a batch and one by one agree)", (guint) NR_PROBE);
}

/* Is the page every small word falls in unmapped in this process?  Asked
 * with msync(2), which fails with ENOMEM on an unmapped range (MS_ASYNC
 * does nothing to a mapped one), rather than by reading vm.mmap_min_addr:
 * a confined QEMU may not open /proc/sys, what matters is this process's
 * memory, not the sysctl, and msync is in systemd's @system-service (the
 * filter of vgicd's unit), where mincore is not. */
static gboolean
small_words_unmapped (void)
{
  G_STATIC_ASSERT (SMALL_LIMIT <= 4096);
  return msync (NULL, (gsize) sysconf (_SC_PAGESIZE), MS_ASYNC) < 0 && errno == ENOMEM;
}

int
vgic_batch_probe (int dev_fd, char **why)
{
  struct kvm_device_attr has = { .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, .attr = 0 };
  guint32 values[NR_PROBE] = { 0 };
  ProbeMap m;
  guint failed = 0;
  int ret;

  if (why)
    *why = NULL;
  if (kvm_call (dev_fd, KVM_HAS_DEVICE_ATTR, &has) < 0)
    return errno == ENXIO
           ? say (why, VGIC_BATCH_PROBE_ABSENT, "the kernel has no vGIC batch group")
           : say (why, -errno, "KVM_HAS_DEVICE_ATTR of the batch group: %s", g_strerror (errno));
  /* This UAPI has attr 0 only: a group that claims attr 1 is another one,
   * and is given nothing. */
  has.attr = 1;
  if (kvm_call (dev_fd, KVM_HAS_DEVICE_ATTR, &has) == 0)
    return foreign (why, "it claims attribute 1, which this UAPI does not have");

  ret = read_single (dev_fd, values, &failed);
  if (ret < 0)
    return say (why, ret, "the vGIC batch group could not be verified: a single read of %s "
                "failed: %s", probe_regs[failed].name, g_strerror (-ret));

  /* The small words must not be mapped addresses (theory: the header). */
  if (!small_words_unmapped ())
    return say (why, -EPERM, "the vGIC batch group was not verified: this process has "
                "memory mapped at address 0, so a misread register offset could be a "
                "mapped address");

  if (!map_new (&m))
    return say (why, -errno, "the vGIC batch group could not be verified: mmap: %s",
                g_strerror (errno));
  {
    struct kvm_vgic_batch *b = (struct kvm_vgic_batch *) m.header;
    struct kvm_vgic_batch_entry *e = (struct kvm_vgic_batch_entry *) m.entries;
    struct kvm_device_attr get = {
      .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS,
      .attr = 0,
      .addr = (guint64) (uintptr_t) b,
    };

    b->nr_entries = NR_PROBE;
    b->entries = (guint64) (uintptr_t) e;
    for (guint i = 0; i < NR_PROBE; i++)
      {
        e[i].group = probe_regs[i].group;
        e[i].attr = probe_regs[i].offset;
        /* A GET ignores it; a layout that takes it for a pointer writes
         * into this entry's own zeroed slot, which the verdict sees. */
        e[i].value = (guint64) (uintptr_t) (m.scratch + 8 * i);
      }
    if (kvm_call (dev_fd, KVM_GET_DEVICE_ATTR, &get) < 0)
      {
        int err = errno;

        ret = err == EBUSY
              ? say (why, -EBUSY, "the vGIC batch group could not be verified: a vCPU is "
                     "running (EBUSY)")
              : foreign (why, "it refused a batch of reads this UAPI accepts: %s",
                         g_strerror (err));
      }
    else
      ret = judge (&m, values, why);
  }
  munmap (m.base, m.size);
  return ret;
}
