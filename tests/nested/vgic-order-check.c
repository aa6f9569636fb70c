/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-order-check.c - is every interrupt a restore made deliverable queued
 * where the kernel's rules say (vgic-order-check.h)?
 *
 * KVM puts an IRQ on a vCPU's ap_list only in vgic_queue_irq_unlock(), on
 * the write that makes vgic_target_oracle() name a vCPU; a later write that
 * changes the answer (a route, GICD_CTLR) does not move it.  So a restore in
 * the wrong order leaves every register right and the IRQ on the wrong list,
 * or on none.  The oracle, the same in 6.1, 6.12 and 7.3:
 *
 *   active                                    -> irq->vcpu ?: target
 *   enabled && irq_is_pending() && dist on    -> target
 *   else                                      -> none
 *
 * irq_is_pending() is the latch for an edge IRQ, latch || line for a level
 * one; the target is the SPI's GICD_IROUTER (Aff2..Aff0 only: KVM keeps no
 * Aff3, and ignores IRM) or a private IRQ's own vCPU; "dist on" is
 * GICD_CTLR.EnableGrp1 (dist->enabled; the IRQ's group and the CPU
 * interface's group enables play no part in queueing).  On a VM restored in
 * a right order into a fresh VM, nothing was queued before its target was
 * final, so "irq->vcpu ?: target" is the target.
 *
 * The expected vCPU comes from the VM's registers read back by the caller
 * (user-space ISPENDR reads give the latch, LEVEL_INFO the line); the
 * queue from KVM's debugfs file vgic-state, whose VCPU column is irq->vcpu.
 * Its P, L (level IRQs), A, E, C and TGT_ID columns must agree with the
 * registers: that shows the file was read right, and is the right VM's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>

#include "vgic-order-check.h"
#include "vgic-plan.h"
#include "vgic-regs.h"
#include "vgicd/kvm-call.h"

#define SHOWN 8	/* IRQs named on stderr per check: misplaced ones, disagreeing ones */

/* One IRQ as vgic-state prints it. */
typedef struct {
  gboolean seen;
  int tgt;	/* TGT_ID: target_vcpu's index, -1 none */
  int vcpu;	/* VCPU_ID: irq->vcpu, the list it is on, -1 none */
  gboolean p, l, a, e, c;	/* pending_latch, line_level, active, enabled, level */
} Shown;

typedef struct {
  gboolean dist_enabled;
  guint n;		/* vCPUs */
  guint nr_irqs;
  Shown *irqs;		/* vCPU c's private IRQ i at c * 32 + i, SPI s at n * 32 + s - 32 */
} State;

static void
state_free (State *s)
{
  if (!s)
    return;
  g_free (s->irqs);
  g_free (s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (State, state_free)

char *
vgic_order_state_path (int vm_fd)
{
  return g_strdup_printf ("/sys/kernel/debug/kvm/%d-%d/vgic-state", (int) getpid (), vm_fd);
}

static Shown *
state_at (State *s, int vcpu, guint intid)
{
  if (intid < GIC_INTERNAL)
    return vcpu >= 0 && (guint) vcpu < s->n ? &s->irqs[(guint) vcpu * GIC_INTERNAL + intid]
                                            : NULL;
  return intid < s->nr_irqs ? &s->irqs[s->n * GIC_INTERNAL + intid - GIC_INTERNAL] : NULL;
}

/* parse() - vgic-state of @vm_fd.  Its layout (vgic-debug.c, the same in
 * 6.1, 6.12 and 7.3 but for vcpu_id vs vcpu_idx, equal here): a
 * "Distributor" block with "enabled:\t%d", then per vCPU a header "VCPU%2d
 * TYP ..." and its 32 private IRQs, then "SPI  0 TYP ..." and the SPIs, one
 * line each:
 *   TYP ID TGT_ID PLAEHCG HWID TARGET(mpidr, hex) SRC(hex) PRI VCPU_ID */
static State *
parse (int vm_fd, const VgicShape *shape, GError **error)
{
  g_autofree char *path = vgic_order_state_path (vm_fd);
  g_autofree char *text = NULL;
  g_autoptr (State) s = g_new0 (State, 1);
  g_auto (GStrv) lines = NULL;
  gboolean have_enabled = FALSE;
  int section = -2;	/* vCPU of the private IRQs that follow, -1 the SPIs */
  guint total = shape->nr_vcpus * GIC_INTERNAL + shape->nr_irqs - GIC_INTERNAL, seen = 0;

  s->n = shape->nr_vcpus;
  s->nr_irqs = shape->nr_irqs;
  s->irqs = g_new0 (Shown, total);
  /* debugfs files have no size: GLib reads to the end. */
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    {
      const char *ln = lines[i] + strspn (lines[i], " \t");
      char typ[8], flags[16];
      guint id, hwid, mpidr, src, pri;
      int tgt, vcpu, en;
      Shown *x;

      if (sscanf (ln, "enabled:\t%d", &en) == 1)
        {
          s->dist_enabled = en != 0;
          have_enabled = TRUE;
          continue;
        }
      if (g_str_has_prefix (ln, "VCPU") && strstr (ln, "TYP"))
        {
          if (sscanf (ln + 4, "%d", &section) != 1)
            section = -2;
          continue;
        }
      if (g_str_has_prefix (ln, "SPI ") && strstr (ln, "TYP"))
        {
          section = -1;
          continue;
        }
      if (sscanf (ln, "%7s %u %d %15s %u %x %x %u %d", typ, &id, &tgt, flags, &hwid, &mpidr,
                  &src, &pri, &vcpu) != 9)
        continue;
      if (g_str_equal (typ, "LPI"))
        continue;	/* LPIs stay off: no guest memory for their tables */
      if (strlen (flags) != 7 || strspn (flags, "01") != 7 ||
          (g_str_equal (typ, "SPI") ? section != -1 || id < GIC_INTERNAL
                                    : section < 0 || id >= GIC_INTERNAL) ||
          !(x = state_at (s, section, id)) || x->seen)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                       "%s: line %u not understood: \"%s\"", path, i + 1, lines[i]);
          return NULL;
        }
      x->seen = TRUE;
      x->tgt = tgt;
      x->vcpu = vcpu;
      x->p = flags[0] == '1';
      x->l = flags[1] == '1';
      x->a = flags[2] == '1';
      x->e = flags[3] == '1';
      x->c = flags[5] == '1';
      seen++;
    }
  if (!have_enabled || seen != total)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: %u IRQ lines%s, expected %u (%u vCPUs, %u IRQs)", path, seen,
                   have_enabled ? "" : " and no \"enabled:\" line", total, shape->nr_vcpus,
                   shape->nr_irqs);
      return NULL;
    }
  return g_steal_pointer (&s);
}

/* Bit @bit of the register (@group, @attr) in @state. */
static gboolean
reg_bit (const VgicValues *state, guint32 group, guint64 attr, guint bit, gboolean *out,
         GError **error)
{
  guint64 v;

  if (!vgic_values_get (state, group, attr, &v, error))
    return FALSE;
  *out = (v >> bit) & 1;
  return TRUE;
}

/* What the registers say about one IRQ. */
typedef struct {
  gboolean p, l, a, e, c;
  int target;	/* vCPU index, -1 when the route names no vCPU */
} Want;

static gboolean
want_private (const VgicValues *state, guint32 mpidr, guint vcpu, guint i, Want *w,
              GError **error)
{
  gboolean edge = TRUE;

  memset (w, 0, sizeof (*w));
  w->target = (int) vcpu;
  /* SGIs are edge-triggered and their GICR_ICFGR0 is read-only; PPIs'
   * GICR_ICFGR1 is read-only too (KVM's timers rely on level), but reads
   * back what KVM holds. */
  if (!reg_bit (state, VGIC_GRP_REDIST, vgic_attr (mpidr, GICR_ISENABLER0), i, &w->e, error) ||
      !reg_bit (state, VGIC_GRP_REDIST, vgic_attr (mpidr, GICR_ISPENDR0), i, &w->p, error) ||
      !reg_bit (state, VGIC_GRP_REDIST, vgic_attr (mpidr, GICR_ISACTIVER0), i, &w->a, error) ||
      (i >= 16 && !reg_bit (state, VGIC_GRP_REDIST, vgic_attr (mpidr, GICR_ICFGR1),
                            2 * (i - 16) + 1, &edge, error)) ||
      !reg_bit (state, VGIC_GRP_LEVEL, vgic_attr_level (mpidr, 0), i, &w->l, error))
    return FALSE;
  w->c = !edge;	/* Int_config[1]: 1 edge-triggered, 0 level-sensitive */
  return TRUE;
}

static gboolean
want_spi (const VgicValues *state, const VgicShape *shape, guint i, Want *w, GError **error)
{
  guint32 w32 = 4 * (i / 32), b = i % 32;
  guint64 route;
  gboolean edge;

  memset (w, 0, sizeof (*w));
  if (!reg_bit (state, VGIC_GRP_DIST, vgic_attr (0, GICD_ISENABLER + w32), b, &w->e, error) ||
      !reg_bit (state, VGIC_GRP_DIST, vgic_attr (0, GICD_ISPENDR + w32), b, &w->p, error) ||
      !reg_bit (state, VGIC_GRP_DIST, vgic_attr (0, GICD_ISACTIVER + w32), b, &w->a, error) ||
      !reg_bit (state, VGIC_GRP_DIST, vgic_attr (0, GICD_ICFGR + 4 * (i / 16)),
                2 * (i % 16) + 1, &edge, error) ||
      !reg_bit (state, VGIC_GRP_LEVEL, vgic_attr_level (0, i - b), b, &w->l, error) ||
      /* The low word at the architected offset: every SPI's is in a
       * read-back with every route (QEMU's even offsets and
       * vgic_plan_save_routes()). */
      !vgic_values_get (state, VGIC_GRP_DIST, vgic_attr (0, GICD_IROUTER + 8 * i), &route,
                        error))
    return FALSE;
  w->c = !edge;
  /* vgic_mmio_write_irouter(): target = kvm_mpidr_to_vcpu(Aff2..Aff0). */
  w->target = -1;
  for (guint c = 0; c < shape->nr_vcpus; c++)
    if ((shape->mpidrs[c] & 0xffffff) == (route & 0xffffff) && shape->mpidrs[c] >> 24 == 0)
      w->target = (int) c;
  return TRUE;
}

/* vgic_target_oracle() on the registers, for a VM whose IRQs were each
 * queued, if at all, once their target was final. */
static int
oracle (const Want *w, gboolean dist_enabled)
{
  gboolean pending = w->c ? w->p || w->l : w->p;

  if (w->a)
    return w->target;
  if (w->e && pending && dist_enabled)
    return w->target;
  return -1;
}

static void
check_one (const Want *w, const Shown *x, gboolean dist_enabled, guint intid, int owner,
           VgicOrderResult *r)
{
  int want = oracle (w, dist_enabled);
  g_autofree char *name = owner >= 0 ? g_strdup_printf ("IRQ %u of vCPU %d", intid, owner)
                                     : g_strdup_printf ("SPI %u", intid);

  /* LEVEL_INFO reads an edge IRQ's line as 0 whatever KVM holds
   * (vgic_read_irq_line_level_info()), and that line queues nothing. */
  if (w->p != x->p || (w->c && w->l != x->l) || w->a != x->a || w->e != x->e || w->c != x->c ||
      w->target != x->tgt)
    {
      if (r->disagree++ < SHOWN)
        g_printerr ("  order check: %s: vgic-state says P%dL%dA%dE%dC%d target %d, the "
                    "registers P%dL%dA%dE%dC%d target %d\n", name, x->p, x->l, x->a, x->e,
                    x->c, x->tgt, w->p, w->l, w->a, w->e, w->c, w->target);
      return;
    }
  if (want < 0)
    {
      if (x->vcpu >= 0)
        r->stray++;
      return;
    }
  r->deliverable++;
  if (owner < 0)
    {
      gboolean off0 = want != 0;

      r->spis++;
      if (w->a)
        r->spi_active++, r->off0_active += off0;
      else if (!w->c)
        r->spi_edge++, r->off0_edge += off0;
      else if (!w->p)
        r->spi_level++, r->off0_level += off0;
    }
  if (x->vcpu == want)
    return;
  if (x->vcpu < 0)
    r->unqueued++;
  else
    r->misplaced++;
  if (r->unqueued + r->misplaced <= SHOWN)
    {
      g_autofree char *on = x->vcpu < 0 ? g_strdup ("on no list")
                                        : g_strdup_printf ("on vCPU %d's", x->vcpu);

      g_printerr ("  order check: %s (%s%s, %s) must be on vCPU %d's list, is %s\n", name,
                  w->c ? "level" : "edge", w->c && w->l ? ", line high" : "",
                  w->a ? "active" : "pending", want, on);
    }
}

gboolean
vgic_order_check (int vm_fd, const VgicShape *shape, const VgicValues *state,
                  VgicOrderResult *result, GError **error)
{
  g_autoptr (State) s = NULL;
  gboolean dist_enabled;
  guint64 ctlr;

  memset (result, 0, sizeof (*result));
  if (!vgic_values_get (state, VGIC_GRP_DIST, vgic_attr (0, GICD_CTLR), &ctlr, error))
    return FALSE;
  dist_enabled = (ctlr & GICD_CTLR_ENABLE_G1) != 0;
  s = parse (vm_fd, shape, error);
  if (!s)
    return FALSE;
  if (s->dist_enabled != dist_enabled)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "vgic-state says the distributor is %s, GICD_CTLR 0x%" G_GINT64_MODIFIER
                   "x says %s", s->dist_enabled ? "enabled" : "disabled", ctlr,
                   dist_enabled ? "enabled" : "disabled");
      return FALSE;
    }
  for (guint c = 0; c < shape->nr_vcpus; c++)
    for (guint i = 0; i < GIC_INTERNAL; i++)
      {
        Want w;

        if (!want_private (state, shape->mpidrs[c], c, i, &w, error))
          return FALSE;
        check_one (&w, state_at (s, (int) c, i), dist_enabled, i, (int) c, result);
      }
  for (guint i = GIC_INTERNAL; i < shape->nr_irqs; i++)
    {
      Want w;

      if (!want_spi (state, shape, i, &w, error))
        return FALSE;
      check_one (&w, state_at (s, -1, i), dist_enabled, i, -1, result);
    }
  if (result->disagree)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "vgic-state disagrees with the registers on %u IRQs (misread, or not this "
                   "VM's file)", result->disagree);
      return FALSE;
    }
  if (result->misplaced || result->unqueued)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "%u of %u deliverable IRQs misplaced: %u on another vCPU's list, %u on none",
                   result->misplaced + result->unqueued, result->deliverable, result->misplaced,
                   result->unqueued);
      return FALSE;
    }
  return TRUE;
}

gboolean
vgic_order_fresh (int vm_fd, const VgicShape *shape, GError **error)
{
  g_autoptr (State) s = parse (vm_fd, shape, error);
  guint total = shape->nr_vcpus * GIC_INTERNAL + shape->nr_irqs - GIC_INTERNAL, queued = 0;

  if (!s)
    return FALSE;
  for (guint i = 0; i < total; i++)
    queued += s->irqs[i].vcpu >= 0;
  if (s->dist_enabled || queued)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                   "the vgic-state at its path is not a fresh VM's (distributor %s, %u IRQs "
                   "queued): an earlier VM with the same fd number is still alive",
                   s->dist_enabled ? "enabled" : "disabled", queued);
      return FALSE;
    }
  return TRUE;
}

static gboolean
moved (const VgicEntry *e, VgicOrderBreak brk)
{
  guint32 low = vgic_attr_low (e->attr);

  if (e->group != VGIC_GRP_DIST)
    return FALSE;
  switch (brk)
    {
    case VGIC_ORDER_BREAK_R3:	/* QEMU's 4-byte stride and the routes it misses */
      return low >= GICD_IROUTER && low < GICD_IROUTER + 8 * VGIC_MAX_IRQS;
    case VGIC_ORDER_BREAK_R2:	/* the SPIs' only: KVM ignores private ones' */
      return low >= GICD_ICFGR && low < GICD_ICFGR + VGIC_MAX_IRQS / 4;
    case VGIC_ORDER_BREAK_R0:
    default:
      return low == GICD_CTLR;
    }
}

gboolean
vgic_order_restore_broken (int gic_fd, const VgicShape *shape, const VgicValues *state,
                           VgicOrderBreak brk, guint *writes, GError **error)
{
  g_autoptr (VgicList) plan = vgic_plan_restore_write (shape, state, TRUE, error);
  g_autoptr (VgicList) order = NULL;
  guint n_moved = 0;

  *writes = 0;
  if (!plan)
    return FALSE;
  /* A stable partition: the plan's order, but for the moved writes, which
   * keep theirs among themselves after all the others. */
  order = vgic_list_new (plan->len);
  for (int pass = 0; pass < 2; pass++)
    for (guint i = 0; i < plan->len; i++)
      if (moved (&plan->entries[i], brk) == (pass == 1))
        {
          vgic_list_append (order, &plan->entries[i], 1);
          n_moved += pass;
        }
  if (!n_moved)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the plan has no write to move");
      return FALSE;
    }
  return vgic_order_write (gic_fd, order, writes, error);
}

gboolean
vgic_order_write (int gic_fd, const VgicList *list, guint *writes, GError **error)
{
  *writes = 0;
  for (guint i = 0; i < list->len; i++)
    {
      const VgicEntry *e = &list->entries[i];
      guint64 v64 = e->value;
      guint32 v32 = (guint32) e->value;

      if (kvm_device_set (gic_fd, e->group, e->attr,
                          vgic_entry_group_is_wide (e->group) ? (void *) &v64 : (void *) &v32) < 0)
        {
          int err = errno;
          g_autofree char *what = vgic_reg_describe (e->group, e->attr);

          g_set_error (error, G_IO_ERROR, g_io_error_from_errno (err), "write %u (%s): %s",
                       i + 1, what, g_strerror (err));
          return FALSE;
        }
      (*writes)++;
    }
  return TRUE;
}
