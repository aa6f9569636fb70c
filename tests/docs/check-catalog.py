#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-catalog.py HEADER CATALOG [OPERATIONS] - every MESSAGE_ID that vgicd
# logs (#define VGICD_MESSAGE_* in HEADER) has exactly one entry in the
# journal catalog, with a Subject, and the catalog has no entry vgicd never
# logs; the operations guide's MESSAGE_ID table (OPERATIONS, "Journal
# fields") lists the same IDs, and every VGICD_MESSAGE_* is used in the code
# (SRCDIR: the HEADER's project, found from its path).
import os
import re
import shutil
import subprocess
import sys
import tempfile

header, catalog = sys.argv[1], sys.argv[2]
operations = sys.argv[3] if len(sys.argv) > 3 else None
ids = dict(re.findall(r'#define (VGICD_MESSAGE_\w+) "([0-9a-f]{32})"', open(header).read()))
text = open(catalog).read()
entries = re.findall(r'^-- ([0-9a-f]{32})\n(.*?)(?=^-- |\Z)', text, re.M | re.S)
errors = []
if not ids:
    errors.append("%s defines no VGICD_MESSAGE_*" % header)
seen = [i for i, _ in entries]
for name, mid in ids.items():
    if seen.count(mid) != 1:
        errors.append("%s (%s) has %d catalog entries" % (name, mid, seen.count(mid)))
for mid, body in entries:
    if mid not in ids.values():
        errors.append("catalog entry %s is no MESSAGE_ID vgicd logs" % mid)
    if not re.search(r'^Subject: \S', body, re.M):
        errors.append("catalog entry %s has no Subject" % mid)
if len(set(ids.values())) != len(ids):
    errors.append("two MESSAGE_IDs are the same")
# And systemd's own parser takes it: journalctl builds a catalog database
# from it in a scratch root and lists every entry (where journalctl is).
journalctl = shutil.which("journalctl")
if journalctl:
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "usr/lib/systemd/catalog"))
        os.makedirs(os.path.join(root, "var/lib/systemd/catalog"))
        shutil.copy(catalog, os.path.join(root, "usr/lib/systemd/catalog/vgicd.catalog"))
        subprocess.run([journalctl, "--root=" + root, "--update-catalog"], check=True)
        listed = subprocess.run([journalctl, "--root=" + root, "--list-catalog"], check=True,
                                capture_output=True, text=True).stdout
        for mid in ids.values():
            if not re.search(r'^%s ' % mid, listed, re.M):
                errors.append("journalctl --list-catalog lacks %s" % mid)
else:
    print("(no journalctl here: systemd's own parse of the catalog not run)")
if operations:
    doc = open(operations).read()
    table = set(re.findall(r'^\| `([0-9a-f]{32})` \|', doc, re.M))
    for name, mid in ids.items():
        if mid not in table:
            errors.append("%s: %s (%s) is not in the MESSAGE_ID table" % (operations, name, mid))
    for mid in table - set(ids.values()):
        errors.append("%s: MESSAGE_ID %s in the table is no ID vgicd logs" % (operations, mid))
# Each ID is logged somewhere, not only defined.
srcdir = os.path.dirname(os.path.dirname(os.path.abspath(header)))
code = ""
for sub in ("daemon", "config"):
    for f in sorted(os.listdir(os.path.join(srcdir, sub))):
        if f.endswith(".c"):
            code += open(os.path.join(srcdir, sub, f)).read()
for name in ids:
    if not re.search(r'\b%s\b' % name, code):
        errors.append("%s is defined but no code in daemon/ or config/ logs it" % name)
for e in errors:
    print(e)
print("%d MESSAGE_IDs, %d catalog entries" % (len(ids), len(entries)))
sys.exit(1 if errors else 0)
