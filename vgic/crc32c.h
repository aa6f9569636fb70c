/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * crc32c.h - CRC-32C (Castagnoli), the state record's integrity check.
 *
 * CRC-32C rather than zlib's CRC-32 because it has better error detection
 * for the record sizes we carry, it is what iSCSI/ext4/btrfs use (so tools
 * to cross-check a record exist everywhere), and both x86 (SSE4.2) and arm64
 * (FEAT_CRC32) have instructions for it should the table ever be too slow.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/**
 * crc32c() - extend @crc (0 to start) over @len bytes at @data
 * @crc: the CRC of the bytes before @data, or 0 for the first chunk
 * @data: the bytes (any alignment)
 * @len: their number
 *
 * crc32c (crc32c (0, a, na), b, nb) == crc32c (0, a‖b, na + nb).
 *
 * Return: the CRC-32C of everything so far (iSCSI / ext4 convention:
 * reflected polynomial 0x82F63B78, initial value and final XOR ~0), so
 * crc32c (0, "123456789", 9) == 0xE3069283.
 */
uint32_t crc32c (uint32_t crc, const void *data, size_t len);

/* crc32c() by the table alone, whatever the CPU has (for the tests). */
uint32_t crc32c_table (uint32_t crc, const void *data, size_t len);
