/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* PLACEHOLDER: replaced by the record work. */
#include "crc32c.h"
uint32_t crc32c (uint32_t crc, const void *data, size_t len) { (void) data; (void) len; return crc; }
