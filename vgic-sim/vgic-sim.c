/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim.c - the VgicSim handle: creating a model in a memfd, attaching
 * to one from its fd, and the knobs tests turn (batch on/off, running
 * vCPUs, fault injection, counters).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgic-shape.h"
#include "vgic-sim-private.h"

G_DEFINE_QUARK (vgic-sim-error-quark, vgic_sim_error)

static gboolean
check_config (const VgicSimConfig *c, GError **error)
{
  if (c->nr_vcpus == 0 || c->nr_vcpus > VGIC_SIM_MAX_VCPUS)
    {
      g_set_error (error, VGIC_SIM_ERROR, 0, "nr_vcpus %u is not in 1..%u",
                   c->nr_vcpus, VGIC_SIM_MAX_VCPUS);
      return FALSE;
    }
  if (c->nr_irqs < VGIC_MIN_IRQS || c->nr_irqs > VGIC_MAX_IRQS || c->nr_irqs % 32)
    {
      g_set_error (error, VGIC_SIM_ERROR, 0,
                   "nr_irqs %u is not a multiple of 32 in %u..%u",
                   c->nr_irqs, VGIC_MIN_IRQS, VGIC_MAX_IRQS);
      return FALSE;
    }
  if (c->pri_bits && (c->pri_bits < 5 || c->pri_bits > 7))
    {
      g_set_error (error, VGIC_SIM_ERROR, 0, "pri_bits %u is not 5, 6 or 7",
                   c->pri_bits);
      return FALSE;
    }
  if (c->mpidrs)
    for (guint32 i = 0; i < c->nr_vcpus; i++)
      for (guint32 j = 0; j < i; j++)
        if (c->mpidrs[i] == c->mpidrs[j])
          {
            g_set_error (error, VGIC_SIM_ERROR, 0,
                         "vCPUs %u and %u have the same mpidr 0x%x", j, i,
                         c->mpidrs[i]);
            return FALSE;
          }
  return TRUE;
}

static VgicSim *
sim_map (int fd, gsize size, GError **error)
{
  VgicSim *sim;
  void *p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

  if (p == MAP_FAILED)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "mapping the vgic-sim memfd: %s", g_strerror (errno));
      return NULL;
    }
  sim = g_new0 (VgicSim, 1);
  sim->fd = fd;
  sim->m = p;
  sim->size = size;
  return sim;
}

VgicSim *
vgic_sim_new (const VgicSimConfig *config, GError **error)
{
  gsize size;
  int fd;
  VgicSim *sim;

  if (!check_config (config, error))
    return NULL;
  size = vgic_sim_shm_size (config->nr_vcpus, config->nr_irqs);
  fd = memfd_create ("vgic-sim", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate (fd, (off_t) size) < 0)
    {
      int e = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                   "creating the vgic-sim memfd: %s", g_strerror (e));
      if (fd >= 0)
        close (fd);
      return NULL;
    }
  /* The layout is fixed: nobody may resize the model under a mapping. */
  fcntl (fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  sim = sim_map (fd, size, error);
  if (!sim)
    {
      close (fd);
      return NULL;
    }
  vgic_sim_shm_format (sim->m, config);
  return sim;
}

VgicSim *
vgic_sim_open_fd (int fd, GError **error)
{
  struct stat st;
  VgicSimShm header;
  VgicSim *sim;
  int own;

  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) ||
      (gsize) st.st_size < sizeof header ||
      pread (fd, &header, sizeof header, 0) != (ssize_t) sizeof header ||
      !vgic_sim_shm_check (&header, (gsize) st.st_size))
    {
      g_set_error (error, VGIC_SIM_ERROR, 0, "fd %d is not a vgic-sim model", fd);
      return NULL;
    }
  own = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (own < 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "dup: %s", g_strerror (errno));
      return NULL;
    }
  sim = sim_map (own, (gsize) header.total_size, error);
  if (!sim)
    close (own);
  return sim;
}

int
vgic_sim_get_fd (VgicSim *sim)
{
  return sim->fd;
}

void
vgic_sim_free (VgicSim *sim)
{
  if (!sim)
    return;
  munmap (sim->m, sim->size);
  close (sim->fd);
  g_free (sim);
}

void
vgic_sim_set_batch (VgicSim *sim, gboolean on)
{
  pthread_mutex_lock (&sim->m->vm_lock);
  sim->m->batch = on ? VGIC_SIM_BATCH_OURS : VGIC_SIM_BATCH_NONE;
  pthread_mutex_unlock (&sim->m->vm_lock);
}

void
vgic_sim_set_foreign_batch (VgicSim *sim)
{
  pthread_mutex_lock (&sim->m->vm_lock);
  sim->m->batch = VGIC_SIM_BATCH_FOREIGN;
  pthread_mutex_unlock (&sim->m->vm_lock);
}

void
vgic_sim_set_vcpu_running (VgicSim *sim, guint idx, gboolean running)
{
  g_return_if_fail (idx < sim->m->nr_vcpus);
  __atomic_store_n (&vgic_sim_slot (sim->m, idx)->running, running ? 1u : 0u,
                    __ATOMIC_RELEASE);
}

void
vgic_sim_fail_at (VgicSim *sim, guint index, int err)
{
  g_return_if_fail (err < 0);
  pthread_mutex_lock (&sim->m->vm_lock);
  sim->m->fail_armed = 1;
  sim->m->fail_index = index;
  sim->m->fail_err = err;
  sim->m->fail_seen = 0;
  pthread_mutex_unlock (&sim->m->vm_lock);
}

void
vgic_sim_fault_next (VgicSim *sim)
{
  __atomic_store_n (&sim->m->fault_next, 1u, __ATOMIC_RELEASE);
}

void
vgic_sim_stall_at (VgicSim *sim, guint n)
{
  g_return_if_fail (n > 0);
  __atomic_store_n (&sim->m->stall_state, 0u, __ATOMIC_RELEASE);
  __atomic_store_n (&sim->m->stall_left, n, __ATOMIC_RELEASE);
}

gboolean
vgic_sim_wait_stalled (VgicSim *sim, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (__atomic_load_n (&sim->m->stall_state, __ATOMIC_ACQUIRE) != 1)
    {
      if (g_get_monotonic_time () > end)
        return FALSE;
      g_usleep (200);
    }
  return TRUE;
}

void
vgic_sim_release (VgicSim *sim)
{
  guint32 stalled = 1;

  __atomic_store_n (&sim->m->stall_left, 0u, __ATOMIC_RELEASE);
  __atomic_compare_exchange_n (&sim->m->stall_state, &stalled, 2u, FALSE, __ATOMIC_ACQ_REL,
                               __ATOMIC_ACQUIRE);
}

void
vgic_sim_counters_get (VgicSim *sim, VgicSimCounters *out)
{
  const guint64 *src = (const guint64 *) &sim->m->counters;
  guint64 *dst = (guint64 *) out;

  for (gsize i = 0; i < sizeof *out / sizeof (guint64); i++)
    dst[i] = __atomic_load_n (&src[i], __ATOMIC_RELAXED);
}

void
vgic_sim_counters_reset (VgicSim *sim)
{
  guint64 *c = (guint64 *) &sim->m->counters;

  for (gsize i = 0; i < sizeof sim->m->counters / sizeof (guint64); i++)
    __atomic_store_n (&c[i], 0, __ATOMIC_RELAXED);
}

gboolean
vgic_sim_initialized (VgicSim *sim)
{
  return __atomic_load_n (&sim->m->initialized, __ATOMIC_ACQUIRE) != 0;
}

guint32
vgic_sim_get_mpidr (VgicSim *sim, guint idx)
{
  g_return_val_if_fail (idx < sim->m->nr_vcpus, 0);
  return vgic_sim_slot (sim->m, idx)->s.mpidr;
}
