/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-files.h - the temporary folders the tests make, removed whole.
 */
#pragma once

/* test_remove_tree() - remove @path and all below it; a symbolic link is
 * removed, never followed (a test's folder may hold links out of it) */
void test_remove_tree (const char *path);
