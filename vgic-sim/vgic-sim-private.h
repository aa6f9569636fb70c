/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-private.h - what the sim's own files share beyond the model:
 * the VgicSim handle and the supervisor's pieces, which vgic-sim-run reuses.
 */
#pragma once

#include <linux/seccomp.h>

#include "vgic-sim-shm.h"

struct _VgicSim {
  int fd;		/* the memfd: the "device fd" */
  VgicSimShm *m;	/* our mapping of it */
  gsize size;
};

/* Set in the environment by vgic-sim-run: a supervisor already serves this
 * process, so vgic_sim_supervise_self() has nothing to do. */
#define VGIC_SIM_SUPERVISED_ENV "VGIC_SIM_SUPERVISED"

/**
 * vgic_sim_filter_install() - install the seccomp filter that sends
 * KVM_{GET,SET,HAS}_DEVICE_ATTR to a user-space supervisor
 * @all_threads: synchronise the filter onto every thread (TSYNC)
 * Return: the listener fd, or -1 with @error set.
 */
int vgic_sim_filter_install (gboolean all_threads, GError **error);

typedef struct _VgicSimServer VgicSimServer;

VgicSimServer *vgic_sim_server_new (int listener, GError **error);
void vgic_sim_server_free (VgicSimServer *server);

/**
 * vgic_sim_server_handle() - receive one notification and answer it
 * Return: FALSE when the listener is unusable (no more filtered tasks).
 */
gboolean vgic_sim_server_handle (VgicSimServer *server);
