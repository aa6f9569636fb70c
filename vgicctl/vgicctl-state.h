/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-state.h - `vgicctl status`'s one readiness answer: ok, degraded
 * or down, and a short reason, judged from what Manager1 tells anyone.
 */
#pragma once

#include <glib.h>

/**
 * vgicctl_state_judge() - ok or degraded, for a vgicd that answered
 * @props: Manager1's properties (GetAll)
 * @config_errors: errors CheckConfig found, or -1 when vgicctl may not ask
 * @reason: (out): a short human sentence, newly allocated
 *
 * Degraded when the mode is off (saves are declined), when the mode is
 * auto but vgicd found that the kernel has no vGIC batch group (every
 * operation runs one register per ioctl), or when the files vgicd loads
 * have an error.  Down (vgicd unreachable) is the caller's: it has no
 * properties to judge.
 *
 * Return: "ok" or "degraded" (static).
 */
const char *vgicctl_state_judge (GVariantDict *props, int config_errors, char **reason);
