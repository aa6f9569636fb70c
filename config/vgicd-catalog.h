/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-catalog.h - the MESSAGE_IDs of vgicd's journal records about
 * operations, and about what an operator changes or must act on (the
 * mode, refused peers, the configuration).  Each has an entry in data/vgicd.catalog (installed in
 * /usr/lib/systemd/catalog/, shown by `journalctl -x`), which the tests
 * check: an ID here without an entry there, or the other way, fails.
 * Select them with, e.g., `journalctl MESSAGE_ID=<id>`.  Here, beside the
 * configuration library, because that library logs the configuration's
 * problems too (in vgicd, and in the libvirt hook).
 */
#pragma once

#define VGICD_MESSAGE_SAVED "b72f7a0c89a94420b3ccee11c29d15ee"
#define VGICD_MESSAGE_LOADED "d2787ad7e4564149bd429a2942042776"
#define VGICD_MESSAGE_FAILED "9c234d8546584a59a4fb6250b5962ea3"
#define VGICD_MESSAGE_REFUSED "f660e844c17e43ffbebf5a28533e73d7"
#define VGICD_MESSAGE_DECLINED "878f730b860e4d9aaf366baad95891c8"
#define VGICD_MESSAGE_FALLBACK "b566f868fbae4809ba9af4bacd4ae519"
/* The operator's side: a mode change (vgicctl mode), a peer refused at the
 * door (AllowUsers=), a reload that kept the previous configuration, and a
 * problem of a configuration file (the configuration check's lines). */
#define VGICD_MESSAGE_MODE_CHANGED "f0a8cf66b90a46dab78f24adfd3ed92c"
#define VGICD_MESSAGE_PEER_REFUSED "46a48afd4c4b4ffa81d8bc39266ba86c"
#define VGICD_MESSAGE_RELOAD_FAILED "03b2ef23eb474b1a94343a8d384954dd"
#define VGICD_MESSAGE_CONFIG_PROBLEM "e7e5e78ff52744e2a1579df2e6a4a89f"
