# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# common.sh - the project's shell library: every script sources this file,
# and only this file, from scripts/lib.  Sourced, not run.
#
#   paths       VGICD_ROOT (the repository), VGICD_BUILD (build output,
#               ignored by git), VGICD_CACHE (downloads and caches, outside
#               the repository)
#   heavy.sh    the machine-wide heavy-work lock: heavy CMD..., heavy_script
#   steps.sh    step timing: step_begin NAME, step_end, print_step_times
#   packages.sh need_packages PKG..., enable_arm64, and every tier's package
#               list (PKGS_*), declared in one place
#   debian-apt.sh  a private apt state for other Debian suites and
#               architectures (deb_apt_init, deb_download, ...)

VGICD_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VGICD_ROOT=$(cd "$VGICD_LIB/../.." && pwd)
VGICD_BUILD=${VGICD_BUILD:-$VGICD_ROOT/_build}
VGICD_CACHE=${VGICD_CACHE:-/var/cache/vgicd}

# shellcheck source=heavy.sh
. "$VGICD_LIB/heavy.sh"
# shellcheck source=steps.sh
. "$VGICD_LIB/steps.sh"
# shellcheck source=packages.sh
. "$VGICD_LIB/packages.sh"
# shellcheck source=debian-apt.sh
. "$VGICD_LIB/debian-apt.sh"
