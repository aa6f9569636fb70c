#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-vgicd-options.py SRCDIR VGICD - vgicd's options, as the built vgicd
# lists them (`vgicd --help`, written by GOptionContext from its option
# table), against vgicd(8): each option has an entry in OPTIONS and a place
# in the SYNOPSIS, and the man page documents no option vgicd lacks.
import os
import re
import subprocess
import sys

srcdir, vgicd = sys.argv[1], sys.argv[2]
help_text = subprocess.run([vgicd, "--help"], capture_output=True, text=True,
                           check=True).stdout
real = set(re.findall(r"^\s+(?:-\w, )?--([\w-]+)", help_text, re.M))
man = open(os.path.join(srcdir, "man", "vgicd.8.scd"), encoding="utf-8").read()
options = man.split("# OPTIONS", 1)[1].split("\n# ", 1)[0]
synopsis = man.split("# SYNOPSIS", 1)[1].split("\n# ", 1)[0]
documented = set(re.findall(r"^(?:\*-\w\*, )?\*--([\w-]+)\*", options, re.M))
in_synopsis = set(re.findall(r"\*--([\w-]+)\*", synopsis))
errors = []
for o in sorted(real - documented):
    errors.append("man/vgicd.8.scd: --%s is an option of vgicd but not in OPTIONS" % o)
for o in sorted(documented - real):
    errors.append("man/vgicd.8.scd: --%s is in OPTIONS but vgicd has no such option" % o)
for o in sorted(real - in_synopsis - {"help", "version"}):
    errors.append("man/vgicd.8.scd: --%s is not in the SYNOPSIS" % o)
for e in errors:
    print(e)
print("%d options of vgicd, %d documented" % (len(real), len(documented)))
sys.exit(1 if errors else 0)
