/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-catalog.h - the MESSAGE_IDs of vgicd's journal records about
 * operations.  Each has an entry in data/vgicd.catalog (installed in
 * /usr/lib/systemd/catalog/, shown by `journalctl -x`), which the tests
 * check: an ID here without an entry there, or the other way, fails.
 * Select them with, e.g., `journalctl MESSAGE_ID=<id>`.
 */
#pragma once

#define VGICD_MESSAGE_SAVED "b72f7a0c89a94420b3ccee11c29d15ee"
#define VGICD_MESSAGE_LOADED "d2787ad7e4564149bd429a2942042776"
#define VGICD_MESSAGE_FAILED "9c234d8546584a59a4fb6250b5962ea3"
#define VGICD_MESSAGE_REFUSED "f660e844c17e43ffbebf5a28533e73d7"
#define VGICD_MESSAGE_DECLINED "878f730b860e4d9aaf366baad95891c8"
#define VGICD_MESSAGE_FALLBACK "b566f868fbae4809ba9af4bacd4ae519"
