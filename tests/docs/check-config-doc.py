#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-config-doc.py - vgicd.conf's keys in the documents against the code.

The keys come from the code itself: print-config-keys (linked against the
config library) prints vgicd_config_keys() and the "unknown key" message
the parser really logs.  Checked, each failure naming the file and the key:

  man/vgicd.conf.5.scd  every key has an entry under OPTIONS (`*Key=*`)
                        with `Default: *VALUE*.` (or `Default: none.`),
                        and a number `Range: *MIN* to *MAX*.`; no entry,
                        and no key in an example's [vgicd], that the code
                        lacks
  docs/operations.md    the table `| key | default | range | what it sets |`
                        has every key, its default, range and help line;
                        every "unknown key" message shown is the real one,
                        and a range error shown names the key's range
  data/vgicd.conf       every key once in [vgicd] (`#Key=default`), with
                        the code's default (empty for none), and for a
                        number the range (`MIN to MAX`) in its comment

usage: check-config-doc.py PRINT-CONFIG-KEYS SOURCE-ROOT
"""
import os
import re
import subprocess
import sys

MAN = "man/vgicd.conf.5.scd"
OPS = "docs/operations.md"
CONF = "data/vgicd.conf"
OPS_HEADER = "| key | default | range | what it sets |"


class Key:
    def __init__(self, fields):
        (self.name, self.group, self.type, default, lo, hi, self.help) = fields
        self.default = None if default == "-" else default
        self.range = None if lo == "-" else (int(lo), int(hi))


def code_table(printer):
    out = subprocess.run([printer], check=True, capture_output=True, text=True).stdout
    keys, message = {}, None
    for line in out.splitlines():
        kind, *fields = line.split("\t")
        if kind == "key":
            keys[fields[0]] = Key(fields)
        elif kind == "unknown-key-message":
            message = fields[0]
    if not keys or message is None:
        sys.exit(f"{printer} printed no keys or no message:\n{out}")
    return keys, message


def fmt_range(r):
    return f"{r[0]} to {r[1]}" if r else "none"


def check_man(text, keys, fail):
    section = re.search(r"^# OPTIONS\n(.*?)^# ", text, re.M | re.S)
    if not section:
        fail(MAN, None, "has no OPTIONS section")
        return
    entries = {}
    for m in re.finditer(r"^\*(\w+)=\*.*\n((?:\t.*\n|\n(?=\t))*)", section.group(1), re.M):
        name, body = m.group(1), " ".join(m.group(2).split())
        if name in entries:
            fail(MAN, name, "has two entries under OPTIONS")
        entries[name] = body
    for name, body in entries.items():
        key = keys.get(name)
        if not key:
            fail(MAN, name, "is documented but not in the code's table")
            continue
        d = re.findall(r"Default: (?:\*([^*]*)\*|(none))\.", body)
        if len(d) != 1:
            fail(MAN, name, "needs one 'Default: *VALUE*.' (or 'Default: none.') in its entry")
        else:
            shown = None if d[0][1] else d[0][0].replace("\\", "")
            if shown != key.default:
                fail(MAN, name, f"default is {shown or 'none'} here but "
                                f"{key.default or 'none'} in the code")
        r = re.findall(r"Range: \*(\d+)\* to \*(\d+)\*", body)
        shown = (int(r[0][0]), int(r[0][1])) if len(r) == 1 else None
        if len(r) > 1:
            fail(MAN, name, "states more than one 'Range:'")
        elif key.range and not r:
            fail(MAN, name, f"needs 'Range: *{key.range[0]}* to *{key.range[1]}*.' in its entry")
        elif shown != key.range and r:
            fail(MAN, name, f"range is {fmt_range(shown)} here but {fmt_range(key.range)} "
                            "in the code")
    for name in keys:
        if name not in entries:
            fail(MAN, name, "is in the code's table but not documented under OPTIONS")
    # Examples: a [vgicd] group in a code block names only real keys.
    for block in re.findall(r"^```\n(.*?)^```", text, re.M | re.S):
        group = None
        for line in block.splitlines():
            g = re.match(r"\[(.+)\]$", line)
            if g:
                group = g.group(1)
            k = re.match(r"(\w+)=", line)
            if k and group == "vgicd" and k.group(1) not in keys:
                fail(MAN, k.group(1), "is in an example's [vgicd] but not in the code's table")


def check_ops(text, keys, message, fail):
    lines = text.splitlines()
    if OPS_HEADER not in lines:
        fail(OPS, None, f"has no table '{OPS_HEADER}'")
    start = lines.index(OPS_HEADER) + 2 if OPS_HEADER in lines else len(lines)
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.fullmatch(r"`(\w+)=`", cells[0])
        if len(cells) != 4 or not m:
            fail(OPS, None, f"key table row is not '| `Key=` | default | range | help |': {line}")
            continue
        name, default, rng, help_ = m.group(1), cells[1], cells[2], cells[3]
        if name in rows:
            fail(OPS, name, "has two rows in the key table")
        rows[name] = True
        key = keys.get(name)
        if not key:
            fail(OPS, name, "is in the key table but not in the code's table")
            continue
        want = f"`{key.default}`" if key.default is not None else "none"
        if default != want:
            fail(OPS, name, f"default is {default} here but {want} in the code")
        want = fmt_range(key.range) if key.range else ""
        if rng != want:
            fail(OPS, name, f"range is '{rng}' here but '{want}' in the code")
        if help_ != key.help:
            fail(OPS, name, f"help is '{help_}' here but '{key.help}' in the code")
    for name in keys:
        if name not in rows:
            fail(OPS, name, "is in the code's table but not in the key table")
    # Range errors shown as examples: "[vgicd] Key=X is not a UNIT in MIN..MAX".
    for name, lo, hi in re.findall(r"\[vgicd\] (\w+)=\w+ is not an? [^`]*? in (\d+)\.\.(\d+)",
                                   text):
        key = keys.get(name)
        if not key:
            fail(OPS, name, "is in an error message shown but not in the code's table")
        elif (int(lo), int(hi)) != key.range:
            fail(OPS, name, f"error message shows the range {lo}..{hi} but the code's is "
                            f"{fmt_range(key.range)}")
    # Inline code only: a code span never crosses a line here.
    shown = re.findall(r"`([^`\n]*unknown key \[[^`\n]*)`", text)
    if not shown:
        fail(OPS, None, f"does not show the unknown key message: {message}")
    for s in shown:
        if s != message:
            fail(OPS, None, f"shows the unknown key message as\n  {s}\nbut vgicd logs\n  {message}")


def check_conf(text, keys, fail):
    group, seen, block = None, {}, []
    for line in text.splitlines():
        g = re.match(r"\[(.+)\]$", line)
        if g:
            group, block = g.group(1), []
            continue
        k = re.match(r"#?([A-Za-z]\w*)=(.*)$", line)
        if not k:
            # A key's comment: the lines since the last blank line or key.
            block = [] if not line.strip() else block + [line.lstrip("# ")]
            continue
        name, value, comment = k.group(1), k.group(2), " ".join(block)
        block = []
        if group != "vgicd":
            continue
        key = keys.get(name)
        if not key:
            fail(CONF, name, "is in [vgicd] but not in the code's table")
            continue
        if name in seen:
            fail(CONF, name, "is in [vgicd] twice")
        seen[name] = True
        if value != (key.default or ""):
            fail(CONF, name, f"shows '{value}' but the code's default is "
                             f"'{key.default or ''}'" + ("" if key.default else " (none)"))
        r = [(int(a), int(b)) for a, b in re.findall(r"\b(\d+) to (\d+)\b", comment)]
        if key.range and not r:
            fail(CONF, name, f"has no range ({fmt_range(key.range)}) in its comment")
        for shown in r:
            if shown != key.range:
                fail(CONF, name, f"range is {fmt_range(shown)} here but {fmt_range(key.range)} "
                                 "in the code")
    for name in keys:
        if name not in seen:
            fail(CONF, name, "is in the code's table but not in [vgicd]")


def main():
    printer, root = sys.argv[1], sys.argv[2]
    keys, message = code_table(printer)
    failures = []

    def fail(path, key, what):
        failures.append(f"{path}: key {key} {what}" if key else f"{path}: {what}")

    def read(path):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()

    check_man(read(MAN), keys, fail)
    check_ops(read(OPS), keys, message, fail)
    check_conf(read(CONF), keys, fail)
    for f in failures:
        print(f)
    if failures:
        return 1
    print(f"{MAN}, {OPS} and {CONF} agree with the code's {len(keys)} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
