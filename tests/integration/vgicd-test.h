/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-test.h - what the test-vgicd-*.c programs share: they play QEMU
 * against a real vgicd (tests/support's harness: its own system
 * dbus-daemon with the project's policy) with vgic-sim VMs behind real
 * ioctls, one program a concern, each case on a vgicd of its own.
 */
#pragma once

#include <gio/gio.h>

#include "libvgicd.h"
#include "sim-vm.h"
#include "vgic-exec.h"
#include "vgic-list.h"
#include "vgic-sim.h"
#include "vgicd-harness.h"

typedef VgicEntry Entry;

/*
 * The wall-clock bounds of a functional test.  QEMU's client gives vgicd
 * 250 ms over a save's steps (libvgicd.h); a test whose subject is not
 * that bound must not fail when it is missed because the machine is busy
 * (under ASan, 17 VMs saving at once beside a CI run on two cores once
 * missed it).  The tests of the bound itself (a stuck, killed or gone
 * vgicd) choose their own timeouts and keep their own assertions.
 *  - VGICD_TEST_BUDGET_MS: the client's wait budget (vgicd_client_connect()'s
 *    timeout: every save and load, and the connect and attach);
 *  - VGICD_TEST_PATIENCE_MS: how long a test polls for something vgicd
 *    does in its own time (a reload, a session closed, a file written);
 *    a poll ends as soon as it sees it, so a healthy run never waits this.
 */
#define VGICD_TEST_BUDGET_MS 10000
#define VGICD_TEST_PATIENCE_MS 20000

/* The vgicd binary and the bus policy (VGICD_BIN, VGICD_POLICY), for the
 * cases that start a harness of their own. */
extern const char *vgicd_test_bin;
extern const char *vgicd_test_policy;

/* vgicd_test_init() - in main(): vgic-sim's supervisor for this process,
 * g_test_init(), the environment */
void vgicd_test_init (int *argc, char ***argv);

/* A VM's shape as the tests choose it. */
typedef struct {
  guint32 vcpus, irqs;
  gboolean its;
  guint pri_bits;
} Shape;

/* 1 vCPU without an ITS up to 64 vCPUs with 992 IRQs: each differs from
 * the one before in its LPIs or its APRs. */
extern const Shape shapes[4];

/* make_sim() - a sim of @s's shape, with the batch group or without */
VgicSim *make_sim (const Shape *s, gboolean batch);

/* harness() - a vgicd of @mode that root may use; fails the test if it
 * does not start */
VgicdHarness *harness (const char *mode);

/* harness_accepting_fds() - a vgicd on @conf (harness()'s "auto" if NULL)
 * as on a kernel before Linux 6.16, whose peers may send it descriptors
 * (VGICD_TEST_ACCEPT_FDS: SO_PASSRIGHTS left on): for the tests of
 * vgicd's own defence against them, the peek and the reaper, which newer
 * kernels leave unused */
VgicdHarness *harness_accepting_fds (const char *conf);

/* vgicd_test_connect() - connect to @h's vgicd as a functional test's
 * QEMU: its calls wait for vgicd up to VGICD_TEST_BUDGET_MS, not QEMU's
 * 250 ms */

VgicdClient *vgicd_test_connect (VgicdHarness *h, GError **error);

/* try_attach_uuid() - connect and attach @sim (of shape @s) as @name;
 * NULL and @error set if either fails */
VgicdClient *try_attach_uuid (VgicdHarness *h, VgicSim *sim, const Shape *s,
                              const char *name, const char *uuid, GError **error);

/* attach(), attach_uuid() - connect and attach @sim (of shape @s) as
 * @name; fail the test if either fails */
VgicdClient *attach_uuid (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
                          const char *uuid);
VgicdClient *attach (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name);

/* history() - GetHistory (@vm, @limit) of @h's vgicd, as a list of
 * GVariantDicts; hstr(), hnum() - the @key of its entry @i (a number of
 * any of its types; the test fails when the key is missing) */
GPtrArray *history (VgicdHarness *h, const char *vm, guint limit);
const char *hstr (GPtrArray *a, guint i, const char *key);
guint64 hnum (GPtrArray *a, guint i, const char *key);
/* wait_sessions() - until @h's vgicd has @n sessions (GetStats), within
 * VGICD_TEST_PATIENCE_MS; fails the test otherwise */
void wait_sessions (VgicdHarness *h, guint64 n);

/* copy_for_everyone() - copy @src to @dir/@name, readable and executable
 * by everyone: what a test runs as another user runs from the harness's
 * folder (which everyone may enter), not from the build tree, which may be
 * in a private folder (a clone made with mktemp -d); the copy's path */
char *copy_for_everyone (const char *src, const char *dir, const char *name);

/* What a save for vgicd's record can see of @sim, every SPI's route
 * included, as a record (one-by-one reads, bypassing vgicd);
 * visible_state_n() also gives the number of reads that save makes. */
GBytes *visible_state (VgicSim *sim, const Shape *s);
GBytes *visible_state_n (VgicSim *sim, const Shape *s, guint *accesses);
/* The same, as QEMU's accesses see it (no route of an SPI above
 * nr_irqs / 2). */
GBytes *qemu_visible_state (VgicSim *sim, const Shape *s);

/* assert_untouched() - @sim holds what it held at @before */
void assert_untouched (VgicSim *sim, VgicSimState *before);

/* assert_regs_read() - @regs holds every read of @reads (QEMU's get, read
 * one by one) with its value */
void assert_regs_read (const VgicdRegs *regs, const VgicList *reads);

/* A peer of protocol 1 (libvgicd before guards, the record in the window
 * and the step channel): plain D-Bus calls, no features.  vgicd must serve
 * it as before: the record in the done step, the destination's TYPER
 * reads as a step of their own.  The steps run here one register per
 * ioctl, through the executor, on the sims. */
typedef struct {
  GDBusConnection *conn;
  char *path;
  Entry *window;
  gsize size;
  guint32 entries;
  int channel;		/* the step channel, when asked for */
  /* When not 0, old_peer_run() reports this error for the first step
   * instead of running it (done 0): a peer that says anything. */
  gint32 report_error;
} OldPeer;

/* peer_attach() - attach @sim as a protocol 1 peer asking for @features
 * (NULL: none); the step channel is asked for and checked */
void peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
                  const char *const *features);
void old_peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s,
                      const char *name);
void old_peer_clear (OldPeer *p);
/* old_peer_run() - call @method, then run steps until done; the last step
 * is returned, *@steps says how many ran */
GVariant *old_peer_run (OldPeer *p, VgicSim *sim, const char *method, GVariant *args,
                        guint *steps);
