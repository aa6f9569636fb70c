#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-exports.py - libvgicd exports exactly the functions its public
header declares, each in one version node of libvgicd.map.

A wildcard in the map once exported the library's internals (its step
loop, its channel, its D-Bus calls) as if they were API: a QEMU could
have linked them, and every internal rename would then have been an ABI
break.  This holds the shared object's dynamic symbols (nm -D) against
the names libvgicd.h declares, both ways.

Usage: check-exports.py NM LIBVGICD.SO LIBVGICD.H
"""
import re
import subprocess
import sys


def declared(header):
    """The functions libvgicd.h declares: a name followed by '(' that
    starts with vgicd_, on a line that is not a comment."""
    names = set()
    text = re.sub(r"/\*.*?\*/", "", open(header, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    for m in re.finditer(r"\b(vgicd_[a-z0-9_]+)\s*\(", text):
        names.add(m.group(1))
    # G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdRegs, vgicd_regs_free) names a
    # function without calling it: declared above it.
    return names


def exported(nm, lib):
    """The shared object's defined dynamic symbols: name -> version."""
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        name, _, version = fields[2].partition("@@")
        if fields[1] == "A":          # the version nodes themselves
            continue
        symbols[name] = version
    return symbols


def main():
    nm, lib, header = sys.argv[1:4]
    want = declared(header)
    have = exported(nm, lib)
    print("1..2")
    extra = sorted(set(have) - want)
    missing = sorted(want - set(have))
    if extra:
        print("not ok 1 - exported but not in libvgicd.h: " + ", ".join(extra))
    else:
        print("ok 1 - every exported function is declared in libvgicd.h (%d)" % len(have))
    if missing:
        print("not ok 2 - declared in libvgicd.h but not exported: " + ", ".join(missing))
    else:
        print("ok 2 - every function libvgicd.h declares is exported")
    unversioned = sorted(n for n, v in have.items() if not v.startswith("VGICD_"))
    for n in unversioned:
        print("# %s has no VGICD_ version" % n)
    return 1 if extra or missing or unversioned else 0


if __name__ == "__main__":
    sys.exit(main())
