/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-conf-file.h - a key file read with its line numbers, and the
 * problems found in it (file, line, group, key), for the configuration
 * check (`vgicd --check-config`, `vgicctl check`) and for what vgicd logs
 * when it loads vgicd.conf, its drop-ins and vms.conf.
 */
#pragma once

#include <glib.h>

typedef enum {
  VGICD_DIAG_WARNING,	/* ignored, or probably not what was meant; vgicd runs */
  VGICD_DIAG_ERROR,	/* refused: vgicd would not start, or a VM fails closed */
} VgicdDiagLevel;

/**
 * VgicdDiag - one problem
 * @file: the file it is in
 * @line: its line, from 1; 0 for the file as a whole
 * @group: the group it is in, or NULL
 * @key: the key, or NULL
 * @message: what is wrong and what happens, without the file and line
 */
typedef struct {
  VgicdDiagLevel level;
  char *file;
  guint line;
  char *group;
  char *key;
  char *message;
} VgicdDiag;

/* VgicdDiags - the problems of a check, in the order found */
typedef struct {
  GPtrArray *items;	/* of VgicdDiag */
  guint errors;
  guint warnings;
} VgicdDiags;

VgicdDiags *vgicd_diags_new (void);
void vgicd_diags_free (VgicdDiags *diags);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdDiags, vgicd_diags_free)

void vgicd_diags_add (VgicdDiags *diags, VgicdDiagLevel level, const char *file, guint line,
                      const char *group, const char *key, const char *format, ...)
  G_GNUC_PRINTF (7, 8);

const char *vgicd_diag_level_to_string (VgicdDiagLevel level);

/* vgicd_diag_to_string() - "FILE:LINE: LEVEL: MESSAGE", as compilers and
 * `sshd -t` print, which editors and CI logs jump to */
char *vgicd_diag_to_string (const VgicdDiag *diag);

/* vgicd_diags_sort() - the problems by file (in the order first met) and
 * line, as a reader of the files expects them */
void vgicd_diags_sort (VgicdDiags *diags);

/* vgicd_diags_log() - log each problem (sorted), with the file, line and
 * key as journal fields: an error at warning level, a warning at message
 * level */
void vgicd_diags_log (VgicdDiags *diags);

/* vgicd_diags_set_error() - fail with the errors of @diags: the first, and
 * how many more (the check lists them) */
gboolean vgicd_diags_set_error (const VgicdDiags *diags, GError **error);

typedef struct _VgicdConfFile VgicdConfFile;

/* What vgicd reads of a configuration file at most: a file this size is
 * not a configuration, and vgicd reads vms.conf at every attach. */
#define VGICD_CONF_FILE_MAX (4 * 1024 * 1024)

/**
 * vgicd_conf_file_read() - read the key file @path line by line
 * @orphans: what happens to a line no group owns (a key before the first
 *	group, a group header that does not parse and the lines under it),
 *	for its message: "ignored", "every VM runs with vgicd off ..."
 * @diags: where a line that does not parse is reported (an error: the
 *	line is left out, the rest of the file is read), and a key set twice
 *	in a group (a warning: the last one applies)
 * @error: G_FILE_ERROR_NOENT when there is no file (the caller decides
 *	what that means), another error when it cannot be read or is too big
 *
 * Returns: the file, whose key file holds every line that parsed.
 */
VgicdConfFile *vgicd_conf_file_read (const char *path, const char *orphans, VgicdDiags *diags,
                                     GError **error);
void vgicd_conf_file_free (VgicdConfFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdConfFile, vgicd_conf_file_free)

const char *vgicd_conf_file_path (const VgicdConfFile *file);
/* vgicd_conf_file_keys() - the key file of what parsed (owned by @file) */
GKeyFile *vgicd_conf_file_keys (const VgicdConfFile *file);
/* vgicd_conf_file_groups() - every group header, in file order, repeats
 * included; @lines: (out) (optional): the line of each */
const char *const *vgicd_conf_file_groups (const VgicdConfFile *file, const guint **lines);
/* vgicd_conf_file_group_line() - the line of @group's first header, or 0 */
guint vgicd_conf_file_group_line (const VgicdConfFile *file, const char *group);
/* vgicd_conf_file_key_line() - the line that sets @key in @group (the last
 * one, as the key file keeps the last), or 0 */
guint vgicd_conf_file_key_line (const VgicdConfFile *file, const char *group, const char *key);

/**
 * vgicd_conf_check_keys() - warn about the keys of @group that are not in
 * @known (NULL-terminated)
 */
void vgicd_conf_check_keys (const VgicdConfFile *file, const char *group,
                            const char *const *known, VgicdDiags *diags);

/* vgicd_conf_closest() - the name of @names closest to @typo when it is a
 * likely typo of it (edit distance 2 or less, case ignored), else NULL */
const char *vgicd_conf_closest (const char *typo, const char *const *names);
