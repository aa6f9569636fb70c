#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-vgicctl-doc.py CHECK SRCDIR VGICCTL - the documents against what the
# built vgicctl and a real vgicd say, never against a list kept here:
#
#   commands  vgicctl's commands and their flags (`vgicctl --help`, which is
#             written from its command table, and `vgicctl COMMAND --help`)
#             against man/vgicctl.1.scd (SYNOPSIS and COMMANDS; the options
#             of every command, which `vgicctl --help` lists, in OPTIONS),
#             README.md's folder-table row for vgicctl/ and debian/control's
#             description of the vgicd package;
#   status    the `vgicctl status` examples of docs/operations.md and the
#             man page against what vgicctl status prints, and the keys
#             of `vgicctl status|mode|metrics --json` against the man
#             page's JSON OUTPUT;
#   metrics   the metric families `vgicctl metrics` prints (names, types,
#             labels) against docs/operations.md's metrics table, the GetStats
#             keys that table names, and every vgicd_* name in its §6;
#   stats     the keys of a real GetStats reply against what `vgicctl stats`
#             and `vgicctl stats --json` print, the man page's stats entry and
#             docs/operations.md's stats section.
#
# status, metrics and stats run under with-vgicd (tests/docs/with-vgicd.c),
# which starts vgicd on a private system bus and puts a real GetStats reply's
# keys in VGICD_GETSTATS.  Every disagreement is one line naming the file and
# the item.
import json
import os
import re
import subprocess
import sys

check, srcdir, vgicctl = sys.argv[1], sys.argv[2], sys.argv[3]
errors = []

MAN = "man/vgicctl.1.scd"
README = "README.md"
CONTROL = "debian/control"
OPERATIONS = "docs/operations.md"


def read(rel):
    with open(os.path.join(srcdir, rel), encoding="utf-8") as f:
        return f.read()


def run(*args):
    """vgicctl's standard output; a failure is one of the errors."""
    p = subprocess.run([vgicctl, *args], capture_output=True, text=True)
    if p.returncode != 0:
        errors.append("vgicctl %s: exit status %d: %s" % (" ".join(args), p.returncode,
                                                           p.stderr.strip()))
    return p.stdout


def compare(where, what, documented, real, real_name):
    """Both directions of one set comparison, each difference an error."""
    for item in sorted(real - documented):
        errors.append("%s: %s %s is in %s but not documented" % (where, what, item, real_name))
    for item in sorted(documented - real):
        errors.append("%s: %s %s is documented but not in %s" % (where, what, item, real_name))


def section(text, heading, level="#"):
    """The lines of a section, from its heading to the next of its level."""
    m = re.search(r"^%s %s\s*$" % (re.escape(level), heading), text, re.M)
    if not m:
        return None
    rest = text[m.end():]
    end = re.search(r"^%s [^#]" % re.escape(level), rest, re.M)
    return rest[:end.start()] if end else rest


def flags_of(text):
    return set(re.findall(r"--[a-z][a-z0-9-]*", text)) - {"--help"}


def getstats():
    """The keys of a real GetStats reply, with their D-Bus types."""
    if "VGICD_GETSTATS" not in os.environ:
        sys.exit("check-vgicctl-doc.py: %s runs under with-vgicd (VGICD_GETSTATS unset)" % check)
    return dict(line.split(" ", 1) for line in os.environ["VGICD_GETSTATS"].splitlines())


# --- commands --------------------------------------------------------------

def common_flags():
    """The options every command takes, as `vgicctl --help` lists them."""
    usage = run("--help")
    listing = re.search(r"^Options of every command:\n(.*?)(?:\n\n|\Z)", usage, re.M | re.S)
    if not listing:
        sys.exit("vgicctl --help has no Options of every command: section:\n" + usage)
    return set(re.findall(r"--[a-z][a-z0-9-]*", listing.group(1)))


def code_commands():
    """{command: flags} from the built vgicctl's usage and its per-command
    help, without the options every command takes."""
    usage = run("--help")
    listing = re.search(r"^Commands:\n(.*?)(?:\n\n|\Z)", usage, re.M | re.S)
    if not listing:
        sys.exit("vgicctl --help has no Commands: section:\n" + usage)
    names = re.findall(r"^  ([a-z][a-z-]*)", listing.group(1), re.M)
    common = common_flags()
    commands = {}
    for name in names:
        text = run(name, "--help")
        # The synopsis (Usage: lines) and any option listing (lines that
        # start with a dash), whichever way the help is laid out.
        lines = [l for l in text.splitlines()
                 if l.startswith("Usage:") or re.match(r"\s+-", l)]
        flags = flags_of("\n".join(lines))
        for flag in sorted(common - flags - {"--help"}):
            errors.append("vgicctl %s --help does not list %s, an option of every command"
                          % (name, flag))
        commands[name] = flags - common
    return commands


def man_entries(body):
    """{command: flags} of the COMMANDS section's headings: a line starting
    with *command* that a tab-indented description follows."""
    entries = {}
    lines = body.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\*([a-z][a-z-]*)\*", line)
        if m and i + 1 < len(lines) and lines[i + 1].startswith("\t"):
            entries.setdefault(m.group(1), set()).update(flags_of(line))
    return entries


def check_commands():
    code = code_commands()
    names = set(code)
    man = read(MAN)

    compare(MAN + " OPTIONS", "option", flags_of(section(man, "OPTIONS") or "")
            - {"--connect"}, common_flags() - {"--help"},
            "vgicctl --help (Options of every command)")

    synopsis = section(man, "SYNOPSIS")
    documented = {}
    for m in re.finditer(r"^\*vgicctl\* \*([a-z][a-z-]*)\*(.*)$", synopsis or "", re.M):
        documented.setdefault(m.group(1), set()).update(flags_of(m.group(2)))
    compare(MAN + " SYNOPSIS", "command", set(documented), names, "vgicctl's command table")
    for name in sorted(names & set(documented)):
        compare(MAN + " SYNOPSIS, " + name, "flag", documented[name], code[name],
                "vgicctl %s --help" % name)

    entries = man_entries(section(man, "COMMANDS") or "")
    compare(MAN + " COMMANDS", "command", set(entries), names, "vgicctl's command table")
    for name in sorted(names & set(entries)):
        compare(MAN + " COMMANDS, " + name, "flag", entries[name], code[name],
                "vgicctl %s --help" % name)

    row = re.search(r"^\| `vgicctl/` \|(.*)\|\s*$", read(README), re.M)
    if not row:
        errors.append("%s: the folder table has no row for `vgicctl/`" % README)
    else:
        spans = re.findall(r"`([^`]+)`", row.group(1))
        listed = {part.split()[0] for span in spans for part in re.split(r"\\?\|", span)}
        compare(README + " (folder table, vgicctl/)", "command", listed, names,
                "vgicctl's command table")

    control = read(CONTROL)
    para = re.search(r"^Package: vgicd\n(.*?)(?:\n\n|\Z)", control, re.M | re.S)
    desc = " ".join(l.strip() for l in para.group(1).splitlines()) if para else ""
    m = re.search(r"vgicctl \(the operator's command line: ([^)]*)\)", desc)
    if not m:
        errors.append("%s: the vgicd package's description does not list vgicctl's commands "
                      "as \"vgicctl (the operator's command line: ...)\"" % CONTROL)
    else:
        items = re.split(r",\s*(?:and\s+)?|\s+and\s+", m.group(1))
        listed = {item.split()[0] for item in items if item.strip()}
        compare(CONTROL + " (Package: vgicd, Description)", "command", listed, names,
                "vgicctl's command table")


# --- status ----------------------------------------------------------------

# Lines whose values are the host's own (where the socket is, how long vgicd
# has run, what the kernel offers): an example shows another host's.
HOST_VALUES = {"State", "Kernel batch", "Socket", "Config file", "Uptime"}


def status_lines(lines):
    return [re.match(r"([A-Z][A-Za-z ]*):\s+(.*)$", l).groups() for l in lines
            if re.match(r"[A-Z][A-Za-z ]*:\s", l)]


def template(value):
    """A value with its figures made wildcards: the format, not the figures."""
    return "^" + re.sub(r"\d+", r"\\d+", re.escape(value)) + "$"


def json_keys(*args):
    """The top-level keys of `vgicctl ARGS --json` (of its first element, for
    an array)."""
    try:
        value = json.loads(run(*args, "--json"))
    except ValueError as e:
        errors.append("vgicctl %s --json: not JSON: %s" % (" ".join(args), e))
        return set()
    if isinstance(value, list):
        value = value[0] if value else {}
    return set(value)


def check_json_doc():
    """The man page's JSON OUTPUT against what vgicctl --json prints."""
    man = read(MAN)
    body = section(man, "JSON OUTPUT")
    if body is None:
        errors.append("%s: no JSON OUTPUT section" % MAN)
        return
    real = {"status": json_keys("status"), "mode": json_keys("mode") | {"saved"},
            "metrics": json_keys("metrics")}
    for name, keys in real.items():
        part = section(body, re.escape(name), "##")
        m = re.search(r"Keys: (.*?)(?:\n\n|\Z)", part or "", re.S)
        if not m:
            errors.append("%s JSON OUTPUT: no ## %s with a Keys: line" % (MAN, name))
            continue
        listed = set(re.findall(r"\*([a-z][a-z0-9-]*)\*", m.group(1)))
        compare("%s JSON OUTPUT, %s" % (MAN, name), "key", listed, keys,
                "vgicctl %s --json" % name)


def check_status():
    check_json_doc()
    real = status_lines(run("status").splitlines())
    version = run("--version").split()[-1]
    examples = {}
    for where in (OPERATIONS, MAN):
        # The lines after "$ vgicctl status" that look like its output,
        # whatever the markup around them (indentation, scdoc's "++").
        text = read(where)
        m = re.search(r"^\s*\$ vgicctl status(?:\+\+)?\n((?:[ \t]*[A-Z][A-Za-z ]*:.*\n)+)",
                      text, re.M)
        examples[where] = [l.strip().rstrip("+").rstrip() for l in m.group(1).splitlines()] \
            if m else None
    for where, lines in examples.items():
        if lines is None:
            errors.append("%s: no `$ vgicctl status` example found" % where)
            continue
        shown = status_lines(lines)
        labels, real_labels = [k for k, _ in shown], [k for k, _ in real]
        if labels != real_labels:
            errors.append("%s: the vgicctl status example shows the lines %s; vgicctl status "
                          "prints %s" % (where, labels, real_labels))
        values, real_values = dict(shown), dict(real)
        for label in labels:
            if label in HOST_VALUES or label not in real_values:
                continue
            if not re.match(template(real_values[label]), values[label]):
                errors.append("%s: the vgicctl status example's %s: line \"%s\" is not what "
                              "vgicctl prints (\"%s\", figures aside)"
                              % (where, label, values[label], real_values[label]))
        if "Version" in values and values["Version"] != version:
            errors.append("%s: the vgicctl status example shows Version: %s; this is %s"
                          % (where, values["Version"], version))
        if "State" in values and not re.match(r"(ok|degraded|down) \(.+\)$", values["State"]):
            errors.append("%s: the vgicctl status example's State: \"%s\" is not ok, degraded "
                          "or down (reason)" % (where, values["State"]))
        if "Kernel batch" in values and not re.match(r"(yes|no|unknown)( \(.+\))?$",
                                                     values["Kernel batch"]):
            errors.append("%s: the vgicctl status example's Kernel batch: \"%s\" is not yes, "
                          "no or unknown (source)" % (where, values["Kernel batch"]))


# --- metrics ---------------------------------------------------------------

def real_metrics():
    """{family: (type, label names)} from `vgicctl metrics`."""
    text = run("metrics")
    families = {name: [kind, set()] for name, kind in
                re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)}
    for name, labels in re.findall(r"^([a-z_:][a-z0-9_:]*)\{([^}]*)\}", text, re.M):
        base = re.sub(r"_(bucket|sum|count)$", "", name) if name not in families else name
        if base in families:
            families[base][1].update(re.findall(r"([a-z_]+)=", labels))
    for family in families.values():
        family[1].discard("le")	# the histogram's own
    return families


def check_metrics():
    real = real_metrics()
    keys = getstats()
    if not real:
        errors.append("vgicctl metrics printed no metric family")
    ops = read(OPERATIONS)
    table = re.search(r"^\| Metric \| Type \| GetStats key \| Meaning \|\n\|[-|]+\|\n"
                      r"((?:\|.*\|\n)+)", ops, re.M)
    if not table:
        errors.append("%s: no metrics table (| Metric | Type | GetStats key | Meaning |)"
                      % OPERATIONS)
        return
    documented = {}
    for row in table.group(1).splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        for name, labels in re.findall(r"`([a-z_:][a-z0-9_:]*)(?:\{([^}]*)\})?`", cells[0]):
            documented[name] = name
            where = "%s: metric %s" % (OPERATIONS, name)
            if name not in real:
                continue
            if cells[1] != real[name][0]:
                errors.append("%s: documented as %s, vgicctl metrics says %s"
                              % (where, cells[1], real[name][0]))
            shown = set(filter(None, (labels or "").split(",")))
            if real[name][1] and shown != real[name][1]:
                errors.append("%s: documented labels {%s}, vgicctl metrics has {%s}"
                              % (where, ",".join(sorted(shown)), ",".join(sorted(real[name][1]))))
            for key in re.findall(r"`([^`]+)`", cells[2]):
                if key not in keys:
                    errors.append("%s: its GetStats key %s is not in a real GetStats reply"
                                  % (where, key))
    compare(OPERATIONS + " (metrics table)", "metric", set(documented), set(real),
            "vgicctl metrics")
    # Any vgicd_* name elsewhere in §6 (the examples, the alerts) is a real
    # family or one of a histogram's series.
    metrics = section(ops, r"6\. Metrics", "##") or ""
    series = set(real) | {n + s for n, (kind, _) in real.items() if kind == "histogram"
                          for s in ("_bucket", "_sum", "_count")}
    for name in sorted(set(re.findall(r"\bvgicd_[a-z0-9_]+", metrics)) - series):
        errors.append("%s §6: %s is no metric vgicctl metrics prints" % (OPERATIONS, name))


# --- stats -----------------------------------------------------------------

def check_stats():
    keys = getstats()
    numbers = {k for k, t in keys.items() if t in ("y", "n", "q", "i", "u", "x", "t", "d")}
    text = set(re.findall(r"^([a-z][a-z0-9-]*):\s", run("stats"), re.M))
    compare("vgicctl stats", "number", text, numbers, "a real GetStats reply")
    try:
        as_json = set(json.loads(run("stats", "--json")))
    except ValueError as e:
        errors.append("vgicctl stats --json: not JSON: %s" % e)
        as_json = set()
    compare("vgicctl stats --json", "key", as_json, set(keys), "a real GetStats reply")

    # The man page's stats entry names every key (the numbers, and what
    # --json adds), and nothing else but flags.
    man = read(MAN)
    body = section(man, "COMMANDS") or ""
    m = re.search(r"^\*stats\*.*\n((?:\t.*\n|\n)*)", body, re.M)
    if not m:
        errors.append("%s: COMMANDS has no *stats* entry" % MAN)
    else:
        listed = {w for w in re.findall(r"\*([a-z][a-z0-9-]*)\*", m.group(1))}
        compare(MAN + " (stats)", "key", listed, set(keys), "a real GetStats reply")

    # operations.md's stats section: its table's keys are real, and every
    # key of the reply is named in it (the table, or the --json paragraph).
    ops = read(OPERATIONS)
    part = section(ops, r"`vgicctl stats` \(GetStats\).*", "###")
    if part is None:
        errors.append("%s: no ### `vgicctl stats` (GetStats) section" % OPERATIONS)
        return
    table = set()
    for row in re.findall(r"^\| (`.*?`) \|", part, re.M):
        table.update(re.findall(r"`([^`]+)`", row))
    for key in sorted(table - set(keys)):
        errors.append("%s (vgicctl stats): key %s is documented but not in a real GetStats "
                      "reply" % (OPERATIONS, key))
    for key in sorted(set(keys) - set(re.findall(r"`([^`]+)`", part))):
        errors.append("%s (vgicctl stats): key %s is in a real GetStats reply but not "
                      "documented" % (OPERATIONS, key))


{"commands": check_commands, "status": check_status, "metrics": check_metrics,
 "stats": check_stats}[check]()
for e in errors:
    print(e)
print("%s: %s" % (check, "%d disagreement(s)" % len(errors) if errors else "the documents agree"))
sys.exit(1 if errors else 0)
