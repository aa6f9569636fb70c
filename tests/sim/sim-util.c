/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sim-util.c - helpers for the vgic-sim tests (see sim-util.h).
 */
#include <errno.h>
#include <sys/ioctl.h>

#include "sim-util.h"
#include "vgic-plan.h"
#include "vgic-values.h"

VgicSim *
sim_new_config (const VgicSimConfig *config)
{
  g_autoptr (GError) error = NULL;
  VgicSim *sim = vgic_sim_new (config, &error);

  g_assert_no_error (error);
  return sim;
}

VgicSim *
sim_new (guint32 vcpus, guint32 irqs, gboolean its, guint pri_bits)
{
  VgicSimConfig c = {
    .nr_vcpus = vcpus, .nr_irqs = irqs, .has_its = its, .pri_bits = pri_bits,
    .batch = TRUE,
  };

  return sim_new_config (&c);
}

int
sim_ioctl (int fd, unsigned long request, guint32 group, guint64 attr, void *addr)
{
  struct kvm_device_attr a = {
    .flags = 0, .group = group, .attr = attr, .addr = (uintptr_t) addr,
  };

  return ioctl (fd, request, &a) < 0 ? -errno : 0;
}

int
sim_get32 (int fd, guint32 group, guint64 attr, guint32 *val)
{
  return sim_ioctl (fd, KVM_GET_DEVICE_ATTR, group, attr, val);
}

int
sim_set32 (int fd, guint32 group, guint64 attr, guint32 val)
{
  return sim_ioctl (fd, KVM_SET_DEVICE_ATTR, group, attr, &val);
}

int
sim_get64 (int fd, guint32 group, guint64 attr, guint64 *val)
{
  return sim_ioctl (fd, KVM_GET_DEVICE_ATTR, group, attr, val);
}

int
sim_set64 (int fd, guint32 group, guint64 attr, guint64 val)
{
  return sim_ioctl (fd, KVM_SET_DEVICE_ATTR, group, attr, &val);
}

int
sim_has (int fd, guint32 group, guint64 attr)
{
  return sim_ioctl (fd, KVM_HAS_DEVICE_ATTR, group, attr, NULL);
}

guint32
sim_read32 (int fd, guint32 group, guint64 attr)
{
  guint32 v = 0xdeadbeef;

  g_assert_cmpint (sim_get32 (fd, group, attr, &v), ==, 0);
  return v;
}

guint64
sim_read64 (int fd, guint32 group, guint64 attr)
{
  guint64 v = 0xdeadbeef;

  g_assert_cmpint (sim_get64 (fd, group, attr, &v), ==, 0);
  return v;
}

int
sim_batch (int fd, gboolean write, struct kvm_vgic_batch_entry *e, guint32 n,
           guint32 *nr_done)
{
  struct kvm_vgic_batch b = {
    .nr_entries = n, .flags = 0, .nr_done = 0xffff, .reserved = 0,
    .entries = (uintptr_t) e,
  };
  int ret = sim_ioctl (fd, write ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
                       GRP_BATCH, 0, &b);

  if (nr_done)
    *nr_done = b.nr_done;
  return ret;
}

int
sim_run_single (int fd, gboolean write, VgicList *plan)
{
  for (guint i = 0; i < plan->len; i++)
    {
      struct kvm_vgic_batch_entry *e =
        &plan->entries[i];
      int ret;

      if (e->group == GRP_SYSREG)
        {
          guint64 v = e->value;

          ret = sim_ioctl (fd, write ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
                           e->group, e->attr, &v);
          e->value = v;
        }
      else
        {
          guint32 v = (guint32) e->value;

          ret = sim_ioctl (fd, write ? KVM_SET_DEVICE_ATTR : KVM_GET_DEVICE_ATTR,
                           e->group, e->attr, &v);
          e->value = v;
        }
      if (ret)
        return ret;
    }
  return 0;
}

int
sim_run_batch (int fd, gboolean write, VgicList *plan)
{
  for (guint i = 0; i < plan->len; i += VGICD_BATCH_CHUNK)
    {
      guint32 n = MIN (plan->len - i, VGICD_BATCH_CHUNK), done;
      int ret = sim_batch (fd, write,
                           &plan->entries[i],
                           n, &done);

      if (ret)
        return ret;
      g_assert_cmpuint (done, ==, n);
    }
  return 0;
}

VgicList *
sim_plan_save (VgicSim *sim, const VgicShape *shape, gboolean batch, gboolean routes)
{
  int fd = vgic_sim_get_fd (sim);
  g_autoptr (GError) error = NULL;
  VgicList *all = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) first = NULL;

  if (routes)
    {
      g_autoptr (VgicList) r = vgic_plan_save_routes (shape);

      vgic_list_append (all, r->entries, r->len);
    }
  g_assert_cmpint (batch ? sim_run_batch (fd, FALSE, all) : sim_run_single (fd, FALSE, all), ==, 0);
  first = vgic_values_from_reads (all->entries, all->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, first, &error);
  g_assert_no_error (error);
  g_assert_cmpint (batch ? sim_run_batch (fd, FALSE, second) : sim_run_single (fd, FALSE, second),
                   ==, 0);
  vgic_list_append (all, second->entries, second->len);
  return all;
}

void
sim_assert_same_values (VgicList *a, VgicList *b)
{
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    {
      const struct kvm_vgic_batch_entry *x = &a->entries[i];
      const struct kvm_vgic_batch_entry *y = &b->entries[i];

      if (x->value != y->value || x->group != y->group || x->attr != y->attr)
        {
          g_autofree char *what = vgic_reg_describe (x->group, x->attr);

          g_error ("entry %u (%s): 0x%llx != 0x%llx", i, what,
                   (unsigned long long) x->value, (unsigned long long) y->value);
        }
      if (x->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS)
        g_assert_cmphex (x->value >> 32, ==, 0);
    }
}

void
sim_test_init (int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;

  /* Before any thread exists, and before g_test_init forks nothing yet. */
  if (!vgic_sim_supervise_self (&error))
    g_error ("vgic_sim_supervise_self: %s", error->message);
  g_test_init (argc, argv, NULL);
}
