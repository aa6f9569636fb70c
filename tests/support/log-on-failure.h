/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log-on-failure.h - the end of a helper process's log (vgicd's, say) on
 * the test's stderr when the test fails, so that a failure in CI, whose
 * temporary folders go with its machine, says what the helper saw.
 */
#pragma once

#include <glib.h>

/**
 * log_on_failure_watch() - print the end of @path if this process dies
 * of SIGABRT (a failed assertion, g_error()) or SIGTERM (the test
 * runner's timeout) before log_on_failure_forget()
 * @path: the log file; its name is copied
 *
 * Return: a handle for log_on_failure_forget(), or -1 when all slots are
 *	taken (nothing is printed for that file then)
 */
int log_on_failure_watch (const char *path);

/* log_on_failure_forget() - no longer print the file of @handle (-1: none) */
void log_on_failure_forget (int handle);

/* log_on_failure_print() - print the end of @handle's file now (a test
 * marked failed by g_test_fail() goes on to its cleanup) */
void log_on_failure_print (int handle);
