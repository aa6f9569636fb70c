/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* crc32c.h - CRC-32C (Castagnoli), the state record's integrity check. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/**
 * crc32c() - extend @crc (0 to start) over @len bytes at @data
 * Return: the CRC-32C of everything so far (iSCSI / ext4 convention).
 */
uint32_t crc32c (uint32_t crc, const void *data, size_t len);
