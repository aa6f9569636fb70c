#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-demo.py - README's figures table against what the demo prints, and
# scripts/demo.sh's --help against the demo's options.
#
#   check-demo.py README VGICD-DEMO DEMO-SH
#
# The demo (VGICD-DEMO, at its defaults, one run: a few seconds) prints a
# table with one row per path.  README's figures row printed by
# `bash scripts/demo.sh` must name the demo's VM (vCPUs, N) and, for each
# path, give the get / put times (measured once on a quiet machine, so
# only their presence is checked) and the ioctl counts, which must be the
# demo's exactly: they do not depend on the machine.
import re
import subprocess
import sys

README, DEMO, DEMO_SH = sys.argv[1:4]

# README's column (a piece of its header) -> the demo's row of that path.
COLUMNS = {
    "one register per ioctl": "QEMU 10.0 (no vgicd), one by one",
    "(the default)": "vgicd, batched, default (fields)",
    "`Record=true`": "vgicd, batched, Record=true",
}
DEMO_ROW = "`bash scripts/demo.sh`"

failures = []


def fail(msg):
    failures.append(msg)


def number(text):
    return float(text.replace(",", ""))


# ------------------------------------------------------------- the demo
run = subprocess.run([DEMO, "--runs", "1"], capture_output=True, text=True, timeout=300)
if run.returncode != 0:
    sys.exit(f"{DEMO} --runs 1 failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")
demo_rows = {}
for line in run.stdout.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 5 and re.fullmatch(r"\d+", cells[2]) and re.fullmatch(r"\d+", cells[4]):
        demo_rows[cells[0]] = (int(cells[2]), int(cells[4]))
vm = re.search(r"with (\d+) vCPUs, (\d+) IRQs", run.stdout)
if not vm:
    sys.exit(f"{DEMO}: no 'with N vCPUs, N IRQs' line in its output:\n{run.stdout}")

# ------------------------------------------------------ README's table
with open(README, encoding="utf-8") as f:
    text = f.read()
section = re.search(r"^## Figures\n(.*?)(?=^## )", text, re.M | re.S)
if not section:
    sys.exit(f"{README}: no '## Figures' section")
table = [line for line in section.group(1).splitlines() if line.startswith("|")]
if len(table) < 3:
    sys.exit(f"{README}: the Figures section has no table")


def cells_of(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


header = cells_of(table[0])
rows = [cells_of(line) for line in table[2:]]
row = next((r for r in rows if DEMO_ROW in r[-1]), None)
if row is None:
    sys.exit(f"{README}: Figures: no row printed by {DEMO_ROW}")

label = re.search(r"(\d+) vCPUs, N = (\d+)", row[0])
if not label:
    fail(f"{README}: Figures, the demo's row: '{row[0]}' does not say 'V vCPUs, N = I'")
elif label.groups() != vm.groups():
    fail(f"{README}: Figures, the demo's row: {label.group(1)} vCPUs, N = {label.group(2)}, "
         f"but the demo runs {vm.group(1)} vCPUs, {vm.group(2)} IRQs")

for piece, demo_name in COLUMNS.items():
    col = next((i for i, h in enumerate(header) if piece in h), None)
    if col is None:
        fail(f"{README}: Figures: no column whose header has '{piece}' (the demo's '{demo_name}')")
        continue
    where = f"{README}: Figures, the demo's row, column '{header[col]}'"
    if demo_name not in demo_rows:
        fail(f"{DEMO}: no row '{demo_name}' in its table (README's column '{header[col]}'); "
             f"its rows: {', '.join(demo_rows)}")
        continue
    cell = row[col] if col < len(row) else ""
    if not re.search(r"[\d.,]+ / [\d.,]+ ms", cell):
        fail(f"{where}: no 'get / put ms' times in '{cell}'")
    ioctls = re.search(r"in ([\d,]+) / ([\d,]+) ioctls", cell)
    want = demo_rows[demo_name]
    if not ioctls:
        fail(f"{where}: no 'in G / P ioctls' in '{cell}' (the demo's '{demo_name}': "
             f"{want[0]:,} / {want[1]:,})")
    elif (number(ioctls.group(1)), number(ioctls.group(2))) != want:
        fail(f"{where}: {ioctls.group(1)} / {ioctls.group(2)} ioctls, but the demo's "
             f"'{demo_name}' prints {want[0]:,} / {want[1]:,}")

# ------------------------------------------ demo.sh --help and the options
def long_options(help_text):
    return set(re.findall(r"^\s+(--[a-z][a-z-]*)", help_text, re.M))


demo_help = subprocess.run([DEMO, "--help"], capture_output=True, text=True, timeout=60)
app = demo_help.stdout.split("Application Options:", 1)
if len(app) != 2:
    sys.exit(f"{DEMO} --help: no 'Application Options:' section:\n{demo_help.stdout}")
sh_help = subprocess.run(["bash", DEMO_SH, "--help"], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
if sh_help.returncode != 0:
    fail(f"{DEMO_SH} --help: exit {sh_help.returncode}")
for opt in sorted(long_options(app[1]) - long_options(sh_help.stdout)):
    fail(f"{DEMO_SH}: the demo's option {opt} is not in its --help")

for msg in failures:
    print(msg)
if failures:
    sys.exit(1)
print(f"ok: README's demo row matches the demo ({', '.join(f'{n}: {g} / {p}' for n, (g, p) in demo_rows.items())}), "
      f"and {DEMO_SH} --help lists the demo's options")
