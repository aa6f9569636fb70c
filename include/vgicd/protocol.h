/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * channel.h - the step channel between libvgicd and vgicd (not installed).
 *
 * A SOCK_SEQPACKET socket that vgicd makes at Attach for a peer that asks
 * for it ("channel" in Attach's features).  It carries Session1's Save,
 * LoadWindow and Next without the D-Bus round trip through both sides'
 * connection threads.  One packet each way per call:
 *
 *   request: VgicdChannelHeader, then the method's arguments as a
 *            serialised GVariant: "()", "(u)" or "(a{sv})"
 *   answer:  the step as a serialised "(a{sv})" GVariant
 *
 * The GVariants are those of data/org.vgicd.Helper1.xml; a packet is at
 * most VGICD_CHANNEL_MAX bytes.  See docs/protocol.md.
 */
#pragma once

#include <stdint.h>

#define VGICD_CHANNEL_MAX 65536

typedef enum {
  VGICD_CHANNEL_SAVE = 1,
  VGICD_CHANNEL_LOAD_WINDOW = 2,
  VGICD_CHANNEL_NEXT = 3,
} VgicdChannelMethod;

/* Eight bytes, so that the GVariant after it is 8-aligned. */
typedef struct {
  uint32_t method;	/* VgicdChannelMethod, host byte order */
  uint32_t reserved;	/* 0 */
} VgicdChannelHeader;
