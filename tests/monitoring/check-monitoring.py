#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-monitoring.py - the monitoring assets against what vgicd really
# prints: data/prometheus/vgicd.rules.yml's expressions, the Grafana
# dashboard's (data/grafana/vgicd.json) and docs/operations.md's alerts
# table.
#
#   check-monitoring.py SRCDIR VGICCTL [PROMTOOL]
#
# Run under with-vgicd (tests/docs/with-vgicd.c), so that `vgicctl metrics`
# is a real vgicd's exposition.  Every metric an expression names must be
# one vgicd prints (a histogram's _bucket/_sum/_count series included) and
# not one of the deprecated names, or one of node_exporter's that the rules
# are documented to use; every label matched on a vgicd metric must be one
# of its labels (or instance/job, which Prometheus adds).  With PROMTOOL,
# the exposition also passes `promtool check metrics`.  Every problem is one
# line naming the file and the item; exit status 1 if there is any.
import json
import os
import re
import subprocess
import sys

import yaml

srcdir, vgicctl = sys.argv[1], sys.argv[2]
promtool = sys.argv[3] if len(sys.argv) > 3 else None
errors = []

RULES = "data/prometheus/vgicd.rules.yml"
DASHBOARD = "data/grafana/vgicd.json"
OPERATIONS = "docs/operations.md"
# node_exporter's series the rules and the dashboard may use, and why:
# the textfile's age (VgicdTextfileStale) and the unit's state (VgicdDown).
NODE_EXPORTER = {"node_textfile_mtime_seconds": {"file"},
                 "node_systemd_unit_state": {"name", "state", "type"}}
TARGET_LABELS = {"instance", "job"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "atan2"}


def exposition():
    """{series name: (label names, deprecated)} from `vgicctl metrics`."""
    p = subprocess.run([vgicctl, "metrics"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("vgicctl metrics: exit status %d: %s" % (p.returncode, p.stderr.strip()))
    text = p.stdout
    series = {}
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names = [name + s for s in ("_bucket", "_sum", "_count")] if kind == "histogram" else [name]
        for n in names:
            series[n] = [set(), helps.get(name, "").startswith("Deprecated")]
    for name, labels in re.findall(r"^([a-z_:][a-z0-9_:]*)\{([^}]*)\}", text, re.M):
        if name in series:
            series[name][0].update(re.findall(r"([a-z_]+)=", labels))
    return text, series


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def check_expr(where, expr, series):
    """Each metric of @expr is vgicd's or an allowed node_exporter's."""
    e = strip_strings(expr)
    # label matchers right after a metric name: {a="x",b=~"y"}
    for name, matchers in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}", e):
        labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
        known = series[name][0] if name in series else NODE_EXPORTER.get(name)
        # A family with no sample yet (a histogram before the first
        # operation) shows no labels: nothing to compare.
        if not known:
            continue
        extra = labels - known - TARGET_LABELS - ({"le"} if name.endswith("_bucket") else set())
        for label in sorted(extra):
            errors.append("%s: %s has no label %s" % (where, name, label))
    e = re.sub(r"\{[^}]*\}", " ", e)		# matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)		# ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?[a-zA-Z_]+\}?", " ", e)	# Grafana's variables
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", e):
        name, call = m.group(1), m.group(2)
        if call or name in KEYWORDS or re.fullmatch(r"\d.*", name):
            continue
        if name in NODE_EXPORTER:
            continue
        if name not in series:
            errors.append("%s: %s is no series vgicd prints" % (where, name))
        elif series[name][1]:
            errors.append("%s: %s is a deprecated name" % (where, name))


def main():
    text, series = exposition()
    if not series:
        errors.append("vgicctl metrics printed no metric family")

    with open(os.path.join(srcdir, RULES), encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    alerts = []
    for group in rules.get("groups", []):
        for rule in group.get("rules", []):
            name = rule.get("alert") or rule.get("record")
            alerts.append(name)
            check_expr("%s: %s" % (RULES, name), rule["expr"], series)
            if rule.get("alert") and rule.get("labels", {}).get("severity") not in (
                    "critical", "warning", "info"):
                errors.append("%s: %s: no severity label (critical, warning, info)" % (RULES, name))
    if not alerts:
        errors.append("%s: no rule" % RULES)

    with open(os.path.join(srcdir, DASHBOARD), encoding="utf-8") as f:
        dash = json.load(f)
    ids = set()
    for panel in dash.get("panels", []):
        where = "%s: panel %r" % (DASHBOARD, panel.get("title"))
        if panel.get("id") in ids:
            errors.append("%s: id %s used twice" % (where, panel.get("id")))
        ids.add(panel.get("id"))
        if not panel.get("targets"):
            errors.append("%s: no query" % where)
        for target in panel.get("targets", []):
            check_expr(where, target["expr"], series)
    for var in dash.get("templating", {}).get("list", []):
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        m = re.fullmatch(r"label_values\((?:(.*),\s*)?([a-z_]+)\)", query or "")
        if var.get("type") == "query":
            if not m or not m.group(1):
                errors.append("%s: variable %s: not label_values(METRIC, LABEL)" % (DASHBOARD,
                                                                                     var["name"]))
            else:
                check_expr("%s: variable %s" % (DASHBOARD, var["name"]), m.group(1), series)

    # docs/operations.md's alerts table: the rules' alerts, no more, no less.
    with open(os.path.join(srcdir, OPERATIONS), encoding="utf-8") as f:
        ops = f.read()
    table = re.search(r"^\| Alert \| Fires when \| Severity \|\n\|[-|]+\|\n((?:\|.*\|\n)+)", ops, re.M)
    if not table:
        errors.append("%s: no alerts table (| Alert | Fires when | Severity |)" % OPERATIONS)
    else:
        documented = set(re.findall(r"`(Vgicd[A-Za-z]+)`", "\n".join(
            row.split("|")[1] for row in table.group(1).splitlines())))
        for name in sorted(set(alerts) - documented):
            errors.append("%s: alert %s is in %s but not in the alerts table" % (OPERATIONS, name,
                                                                                   RULES))
        for name in sorted(documented - set(alerts)):
            errors.append("%s: alert %s is documented but not in %s" % (OPERATIONS, name, RULES))

    if promtool:
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True)
        if p.returncode != 0:
            errors.append("promtool check metrics: %s" % (p.stdout + p.stderr).strip())

    for e in errors:
        print(e)
    print("%d rules, %d dashboard panels; %d problems" % (len(alerts), len(ids), len(errors)))
    return 1 if errors else 0


sys.exit(main())
