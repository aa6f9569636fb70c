#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""analyze.py - the host side of run-qemu-e2e.sh.

Reads the L1 console log: the E2E-CHECK lines of l1-init.sh, the files it
shipped (gzip + base64 between E2E-FILE-BEGIN/END), the E2E-TIME stamps.
Then:
  (a) runs the QEMU source package's scripts/analyze-migration.py on the
      streams of the compatibility chain (stock, patched with vgicd up and
      down, and with Record=true) and compares the GIC (arm_gicv3) and ITS
      (arm_gicv3_its) device sections of all but the record one; only
      that one may carry the arm_gicv3/vgicd subsection;
  (b) the stream saved with vgicd unreachable must not carry it;
  (c) reads the GIC section's save time (savevm_section_start/end) and load
      time (vmstate_load ... vmstate_load_state_end "arm_gicv3 end") from the
      QEMU trace logs, and prints stock, patched (QEMU's fields) and
      patched with the record side by side;
  (d) for each live migration of a running guest: query-migrate's downtime,
      setup-time and downtime-bytes (the source's), the source's stop to
      the destination's start (vm_state_notify in both traces, one clock),
      and the GIC section's save (source) and load (destination): the
      vGIC's share of the downtime, stock against the patched QEMU.
--results FILE writes (c)'s and (d)'s figures as JSON (bench/report.py
puts them beside the benchmark's).
Exit status 0 when everything passed (and, with --enforce-target, the
patched times at 128 vCPUs are at most 1/20 of the stock ones).
"""
import argparse
import base64
import collections
import datetime
import gzip
import json
import os
import re
import statistics
import subprocess
import sys

FAILS = []


def result(name, ok, detail=""):
    print("  %-4s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        FAILS.append(name)


def read_log(path, out):
    """Checks, time stamps and shipped files of the console log, and its
    last other lines (the kernel's: what is left to read when L1 ended
    without its E2E-DONE line, e.g. after a panic)."""
    checks, stamps, done, files = [], {}, None, {}
    other = collections.deque(maxlen=40)
    cur = None
    os.makedirs(out, exist_ok=True)
    with open(path, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
            if cur is not None:
                if line.startswith("E2E-FILE-END "):
                    name, chunks = cur
                    data = gzip.decompress(base64.b64decode("".join(chunks)))
                    with open(os.path.join(out, name), "wb") as o:
                        o.write(data)
                    files[name] = os.path.join(out, name)
                    cur = None
                elif re.fullmatch(r"[A-Za-z0-9+/=]+", line):
                    cur[1].append(line)
                # anything else (a stray kernel message) is skipped
                continue
            m = re.match(r"E2E-FILE-BEGIN (\S+) (\d+)", line)
            if m:
                cur = (m.group(1), [])
            elif line.startswith("E2E-CHECK: "):
                checks.append(line[len("E2E-CHECK: "):])
            elif line.startswith("E2E-TIME: "):
                k, v = line[len("E2E-TIME: "):].split()[:2]
                stamps[k] = float(v)
            elif line.startswith("E2E-DONE: "):
                done = line
            elif line.startswith("E2E:"):
                print("  | " + line)
            elif line.strip() and not line.startswith("E2E"):
                other.append(line)
    return checks, stamps, done, files, other


ANALYZE = {}


def analyzer(path):
    """The classes of the QEMU source package's analyze-migration.py, loaded
    without running its command line.  One fix: it finds the stream's JSON
    description by the last NUL byte and the first brace after it, which
    goes wrong when the description's 32-bit length holds 0x7b ('{') or no
    NUL; here the description is located by its length, which must reach
    the end of the file exactly."""
    if path in ANALYZE:
        return ANALYZE[path]
    with open(path) as f:
        src = f.read()
    cut = src.index("\nparser = argparse.ArgumentParser()")
    ns = {"__name__": "analyze_migration", "__file__": path}
    exec(compile(src[:cut], path, "exec"), ns)  # noqa: S102 - QEMU's own script

    def read_migration_debug_json(self):
        with open(self.filename, "rb") as f:
            f.seek(0, os.SEEK_END)
            end = f.tell()
            start = max(0, end - 10 * 1024 * 1024)
            f.seek(start)
            data = f.read()
        pos = len(data) - 5
        while pos >= 0:
            pos = data.rfind(b"\x06", 0, pos + 1)
            if pos < 0:
                break
            n = int.from_bytes(data[pos + 1:pos + 5], "big")
            if pos + 5 + n == len(data) and data[pos + 5:pos + 6] == b"{":
                return data[pos + 5:].decode("utf-8")
            pos -= 1
        raise Exception("no VM description at the end of %s" % self.filename)

    ns["MigrationFile"].read_migration_debug_json = read_migration_debug_json
    ANALYZE[path] = ns
    return ns


def sections(analyze, stream):
    """analyze-migration.py's device state: {name without ' (id)': state}."""
    ns = analyzer(analyze)
    dump = ns["MigrationDump"](stream)
    dump.read(dump_memory=False)
    state = json.loads(ns["JSONEncoder"]().encode(dump.getDict()))
    return {re.sub(r" \(\d+\)$", "", k): v for k, v in state.items()}


def desc(analyze, stream):
    """The stream's own description of its devices (-d desc)."""
    ns = analyzer(analyze)
    dump = ns["MigrationDump"](stream)
    dump.read(desc_only=True)
    return dump.vmsd_desc


def subsections_of(d, device):
    names = []
    for dev in d.get("devices", []):
        if dev.get("name") == device:
            names += [s.get("vmsd_name") for s in dev.get("subsections", [])]
    return names


def diff(a, b, path=""):
    """The first few paths where two JSON values differ."""
    if type(a) is not type(b):
        return [path or "/"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(path + "/" + k)
            else:
                out += diff(a[k], b[k], path + "/" + k)
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [path + "[len]"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else [path]


GIC = re.compile(r"^(.*/)?arm_gicv3$")
ITS = re.compile(r"^(.*/)?arm_gicv3_its$")


def section_diffs(a, b, rx):
    """The sections of state a whose names match rx, and what differs in
    b's: [] when b has the same sections with the same state."""
    ka = sorted(k for k in a if rx.match(k))
    kb = sorted(k for k in b if rx.match(k))
    if not ka or ka != kb:
        return ka, ["sections %s / %s" % (ka, kb)]
    out = []
    for k in ka:
        out += [k + p for p in diff(a[k], b[k])]
    return ka, out


CHAIN = "V V S S D D V D S V R V".split()  # l1-init.sh's (a)
KINDS = {"V": "patched, vgicd up", "S": "stock", "D": "patched, vgicd down",
         "R": "patched, vgicd up, Record=true"}


def check_sees_one_bit(analyze, files, n, orig):
    """a<n>-put-refused.mig against the stream it was made from: the GIC
    sections differ in exactly one field, ICC_CTLR_EL1, the ITS sections
    not at all."""
    name = "a%d.comparison-finds-the-put-refused-bit" % n
    bad = "a%d-put-refused.mig" % n
    if bad not in files:
        result(name, False, "no %s from L1" % bad)
        return
    try:
        st = sections(analyze, files[bad])
    except Exception as e:  # noqa: BLE001 - report and go on
        result(name, False, str(e))
        return
    _, dg = section_diffs(orig, st, GIC)
    _, di = section_diffs(orig, st, ITS)
    result(name, len(dg) == 1 and "icc_ctlr_el1" in dg[0] and not di,
           "GIC differs at %s, ITS at %s" % (dg[:6], di[:6]))


def check_a(analyze, files, n, first=False):
    """The matrix: every stream but R's holds the same GIC and ITS state
    (one stopped guest, handed along the chain); only R's carries the
    record subsection."""
    names = ["a%d-%d.mig" % (n, i) for i in range(len(CHAIN))]
    missing = [x for x in names if x not in files]
    if missing:
        result("a%d.streams" % n, False, "missing: %s" % missing)
        return
    try:
        st = [sections(analyze, files[x]) for x in names]
        ds = [desc(analyze, files[x]) for x in names]
    except Exception as e:  # noqa: BLE001 - report and go on
        result("a%d.analyze" % n, False, str(e))
        return
    plain = [i for i, t in enumerate(CHAIN) if t != "R"]
    ref = plain[0]
    for label, rx in (("GIC", GIC), ("ITS", ITS)):
        bad = []
        for i in plain[1:]:
            kr, d = section_diffs(st[ref], st[i], rx)
            if d:
                bad.append("%d (%s): differs at %s" % (i, CHAIN[i], d[:6]))
        size = sum(len(json.dumps(st[ref][k])) for k in kr)
        result("a%d.%s-sections equal in all %d streams of V, S, D" % (n, label, len(plain)), not bad,
               "; ".join(bad) if bad else "%s identical (%d chars of state; streams %s B)" % (
                   kr, size, "/".join(str(os.path.getsize(files[names[i]])) for i in plain)))
    # The comparison's own proof: l1-init.sh's put-refused stream is stream
    # 0 with one bit of vCPU 0's ICC_CTLR_EL1 flipped, and these sections
    # must differ there and nowhere else; a parse or a diff that saw nothing
    # would make "equal" above say nothing.  Only the first N makes it.
    if first:
        check_sees_one_bit(analyze, files, n, st[ref])
    # The guest really programmed them: distributor and ITS enabled.
    g, i_ = st[ref].get("arm_gicv3", {}), st[ref].get("arm_gicv3_its", {})
    programmed = int(str(g.get("gicd_ctlr", "0")), 16) != 0 and int(str(i_.get("ctlr", "0")), 16) & 1
    result("a%d.guest-programmed-GIC-and-ITS" % n, bool(programmed),
           "GICD_CTLR %s, GITS_CTLR %s, GITS_CBASER %s" % (g.get("gicd_ctlr"), i_.get("ctlr"), i_.get("cbaser")))
    gic_name = next((dev["name"] for dev in ds[ref].get("devices", []) if GIC.match(dev.get("name", ""))),
                    "arm_gicv3")
    subs = [subsections_of(d, gic_name) for d in ds]
    with_rec = [i for i, s_ in enumerate(subs) if "arm_gicv3/vgicd" in s_]
    want = [i for i, t in enumerate(CHAIN) if t == "R"]
    result("a%d.only-R-stream-has-vgicd-subsection" % n, with_rec == want,
           "streams with arm_gicv3/vgicd: %s (want %s); R: %s" % (with_rec, want, subs[want[0]]))
    # The pairs the chain covered, as a table (each load was checked in L1).
    print("    N=%d: source -> destination, each step's load, save and guest run were" % n)
    print("    checked in L1 (E2E-CHECK a%d.*); V %s, S %s, D %s, R %s" % (
        n, KINDS["V"], KINDS["S"], KINDS["D"], KINDS["R"]))
    print("    %-8s %s" % ("", "  ".join("%-3s" % d for d in "VSD")))
    for s_ in "VSDR":
        row = []
        for d in "VSD":
            steps = [i for i in range(1, len(CHAIN)) if CHAIN[i - 1] == s_ and CHAIN[i] == d]
            if s_ == "R" and d != "V":
                steps = ["refused"]
            row.append("%-3s" % (",".join(str(x) for x in steps) or "-"))
        print("    %-8s %s" % (s_ + " ->", "  ".join(row)))


def dump_text(vgicctl, path):
    """`vgicctl dump` of a stream: (exit status, its text without the first
    two lines, which name the file and the section's byte offset)."""
    p = subprocess.run([vgicctl, "dump", path], capture_output=True, text=True)
    with open(path + ".dump.txt", "w") as f:
        f.write(p.stdout + p.stderr)
    return p.returncode, "\n".join(p.stdout.splitlines()[2:]), p.stderr.strip()


def fields_only(text):
    """A dump without what QEMU's fields cannot hold and a record can (the
    TYPER registers and the LPI line from them), the title and the routes
    note, whose words differ by source."""
    out, note = [], False
    for line in text.splitlines()[1:]:
        if line.startswith("  Note:"):
            note = True
        elif note and not line.strip():
            note = False
        if note or re.match(r"^\s*(LPIs|GICD_TYPER|GICR_TYPER)\s", line):
            continue
        out.append(line)
    return "\n".join(out)


def check_dump(vgicctl, files, n):
    """`vgicctl dump` of every stream of the chain: the same state in V, S
    and D streams dumps the same; R's dumps its record, which shows the
    registers QEMU's fields hold as they do (one guest, handed along)."""
    names = ["a%d-%d.mig" % (n, i) for i in range(len(CHAIN))]
    if any(x not in files for x in names):
        return
    dumps = [dump_text(vgicctl, files[x]) for x in names]
    failed = ["%d (%s): exit %d: %s" % (i, CHAIN[i], d[0], d[2]) for i, d in enumerate(dumps) if d[0]]
    result("a%d.vgicctl-dump-of-every-stream" % n, not failed,
           "; ".join(failed) if failed else "%d streams, dumps in %s/*.dump.txt" % (
               len(names), os.path.dirname(files[names[0]])))
    if failed:
        return
    plain = [i for i, t in enumerate(CHAIN) if t != "R"]
    ref = dumps[plain[0]][1]
    bad = [str(i) for i in plain if dumps[i][1] != ref]
    result("a%d.dump-of-QEMU's-fields-same-in-V-S-D" % n, not bad and ref.startswith(
        "vGIC state from QEMU's own fields"), "differ: %s" % bad if bad else ref.splitlines()[0])
    for i in (i for i, t in enumerate(CHAIN) if t == "R"):
        rec = dumps[i][1]
        same = fields_only(rec) == fields_only(ref)
        result("a%d.dump-of-the-record-matches-QEMU's-fields" % n,
               rec.startswith("vGIC state record") and same,
               rec.splitlines()[0] + ("; every register both hold agrees" if same else
                                      "; they differ: see the .dump.txt files"))


# QEMU 11.1's names of two events the timings read, with its arguments
# (the state's name alone), put in 10.x's form ("NAME end/0", "NAME/0").
RENAMED_EVENTS = {"vmstate_load_state_success": ("vmstate_load_state_end", "%s end/0"),
                  "vmstate_save_state_pre_save_success": ("vmstate_save_state_pre_save_res", "%s/0")}


def trace_events(path):
    """(time in s, event, args) of a QEMU log-backend trace with timestamps:
    "PID@SECONDS.MICROS:EVENT ARGS" (QEMU 10.0) or, from QEMU 10.2's log
    backend, "YYYY-MM-DDTHH:MM:SS.MICROSZ EVENT ARGS" (UTC); QEMU 11.1's
    renamed events as 10.x names them (RENAMED_EVENTS)."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"\d+@(\d+)\.(\d+):(\w+) (.*)", line)
            if m:
                out.append((int(m.group(1)) + int(m.group(2)) / 1e6, m.group(3), m.group(4)))
                continue
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{6})Z (\w+) (.*)", line)
            if m:
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
                t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
                out.append((t + int(m.group(2)) / 1e6, m.group(3), m.group(4)))
    return [(t, RENAMED_EVENTS[ev][0], RENAMED_EVENTS[ev][1] % args.strip()) if ev in RENAMED_EVENTS
            else (t, ev, args) for t, ev, args in out]


def gic_save_ms(path):
    start = None
    for t, ev, args in trace_events(path):
        name = args.split(",")[0]
        if ev == "savevm_section_start" and GIC.match(name):
            start = t
        elif ev == "savevm_section_end" and GIC.match(name) and start is not None:
            return (t - start) * 1e3
    return None


def gic_load_ms(path):
    start = None
    for t, ev, args in trace_events(path):
        if ev == "vmstate_load" and GIC.match(args.split(",")[0]):
            start = t
        elif ev == "vmstate_load_state_end" and args.startswith("arm_gicv3 end/") and start is not None:
            return (t - start) * 1e3
    return None


def gic_hook_ms(path, op):
    """Time of the GIC's own hook inside the section: pre_save (the vGIC get,
    from section start to vmstate_save_state_pre_save_res) or post_load (the
    vGIC put, from the end of the last nested state to the section's end)."""
    start = last = None
    for t, ev, args in trace_events(path):
        if op == "save":
            if ev == "savevm_section_start" and GIC.match(args.split(",")[0]):
                start = t
            elif ev == "vmstate_save_state_pre_save_res" and args.startswith("arm_gicv3/") \
                    and start is not None:
                return (t - start) * 1e3
        else:
            if ev == "vmstate_load" and GIC.match(args.split(",")[0]):
                start = last = t
            elif ev == "vmstate_load_state_end" and start is not None:
                if args.startswith("arm_gicv3 end/"):
                    return (t - last) * 1e3
                last = t
    return None


def state_change_at(path, running, reason=None):
    """When the VM stopped (running 0, for @reason) or started running
    (running 1), from vm_state_notify: "running %d reason %d (%s)"."""
    for t, ev, args in trace_events(path):
        if ev != "vm_state_notify":
            continue
        m = re.match(r"running (\d+) reason \d+ \(([\w-]+)\)", args)
        if m and int(m.group(1)) == running and (reason is None or m.group(2) == reason):
            return t
    return None


def query_migrate(path):
    """The source's last query-migrate reply (qmp --wait-migrate)."""
    for line in reversed(open(path, encoding="utf-8", errors="replace").read().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line).get("return")
            except ValueError:
                continue
    return None


def report_d(files, sizes, hops):
    """(d): a row per size and path (medians over the hops)."""
    rows = []
    print("\n(d) live migration of a running guest (one vCPU online, the vGIC sized for all);")
    print("    medians over %d hops; downtime as query-migrate reports it, and from the source's" % hops)
    print("    stop to the destination's start (vm_state_notify); GIC section save + load:")
    print("  %6s %-8s | %9s %9s %9s %10s | %9s %9s | %s" % (
        "vCPUs", "path", "downtime", "stop-run", "setup", "dt bytes", "GIC save", "GIC load",
        "vGIC share of stop-run (of downtime)"))
    for n in sizes:
        for side in ("stock", "patched"):
            got = collections.defaultdict(list)
            for h in range(1, hops + 1):
                src = files.get("d%d-%s.%d.src.trace" % (n, side, h))
                dst = files.get("d%d-%s.%d.dst.trace" % (n, side, h))
                q = files.get("d%d-%s.%d.query" % (n, side, h))
                info = query_migrate(q) if q else None
                if not (src and dst and info and info.get("status") == "completed"):
                    result("d%d.%s.%d.figures" % (n, side, h), False, "no completed migration's files")
                    continue
                save, load = gic_save_ms(src), gic_load_ms(dst)
                stop, run = state_change_at(src, 0, "finish-migrate"), state_change_at(dst, 1)
                if None in (save, load, stop, run):
                    result("d%d.%s.%d.figures" % (n, side, h), False,
                           "trace events missing (save %s, load %s, stop %s, run %s)" % (
                               save, load, stop, run))
                    continue
                got["downtime"].append(info.get("downtime", 0))
                got["setup"].append(info.get("setup-time", 0))
                got["bytes"].append(info.get("ram", {}).get("downtime-bytes", 0))
                got["save"].append(save)
                got["load"].append(load)
                got["stoprun"].append((run - stop) * 1e3)
            if not got["save"]:
                continue
            med = {k: statistics.median(v) for k, v in got.items()}
            gic = med["save"] + med["load"]
            row = {"vcpus": n, "path": "stock" if side == "stock" else "vgicd (QEMU's fields)",
                   "hops": len(got["save"]), "downtime_ms": med["downtime"],
                   "stop_to_run_ms": med["stoprun"], "setup_ms": med["setup"],
                   "downtime_bytes": int(med["bytes"]), "gic_save_ms": med["save"],
                   "gic_load_ms": med["load"], "gic_share": gic / med["stoprun"],
                   "gic_share_of_downtime": gic / med["downtime"] if med["downtime"] else None,
                   "runs": {k: v for k, v in got.items()}}
            rows.append(row)
            print("  %6d %-8s | %6.0f ms %6.0f ms %6.0f ms %10d | %6.0f ms %6.0f ms | %3.0f %% (%.0f %%)" % (
                n, side, med["downtime"], med["stoprun"], med["setup"], med["bytes"], med["save"],
                med["load"], 100 * row["gic_share"],
                100 * (row["gic_share_of_downtime"] or 0)))
        by = {r["path"].split()[0]: r for r in rows if r["vcpus"] == n}
        if "stock" in by and "vgicd" in by:
            s_, v_ = by["stock"], by["vgicd"]
            print("  %6s   stop-run: stock %.0f ms, through vgicd %.0f ms (%.0f ms less); "
                  "the GIC's part %.0f -> %.0f ms" % (
                      "", s_["stop_to_run_ms"], v_["stop_to_run_ms"],
                      s_["stop_to_run_ms"] - v_["stop_to_run_ms"],
                      s_["gic_save_ms"] + s_["gic_load_ms"], v_["gic_save_ms"] + v_["gic_load_ms"]))
    return rows


def has_event(files, name, event):
    p = files.get(name)
    return p is not None and any(ev == event for _, ev, _ in trace_events(p))


def patched_kind(patched_base):
    """The (e) kind of the run's patched QEMU, as l1-init.sh names it: P10
    for 10.0, else P<base>."""
    return "P10" if patched_base == "10.0" else "P" + patched_base


def e_kinds(patched_base):
    """(e)'s QEMUs by kind, with their versions: the run's patched QEMU on a
    base other than 10.0 comes beside the patched 10.0."""
    kinds = {"S10": ("10.0", "Debian's stock QEMU 10.0"),
             "P10": ("10.0", "the patched QEMU 10.0 through vgicd"),
             "S11": ("11.1", "trixie-backports' stock QEMU 11.1")}
    kinds.setdefault(patched_kind(patched_base),
                     (patched_base, "the patched QEMU %s through vgicd" % patched_base))
    return kinds


def check_e(analyze, files, n, every, patched_base):
    """The rolling upgrade across versions: after each live migration, the
    GIC and ITS sections the source and the destination hold are equal.
    Not every: only the run's patched QEMU with each QEMU of another
    version, both ways."""
    kinds = e_kinds(patched_base)
    run = patched_kind(patched_base)
    cells = sorted({k.rsplit(".", 2)[0] for k in files
                    if k.startswith("e%d." % n) and k.endswith(".mig")})
    want = ["e%d.%s-to-%s" % (n, a, b) for a in kinds for b in kinds
            if a != b and (every or (run in (a, b) and kinds[a][0] != kinds[b][0]))]
    missing = [c for c in want if c not in cells]
    result("e%d.cells" % n, not missing,
           "missing: %s" % missing if missing else "%d cells: %s" % (len(cells), ", ".join(
               c.split(".", 1)[1] for c in cells)))
    for c in cells:
        try:
            a = sections(analyze, files[c + ".src.mig"])
            b = sections(analyze, files[c + ".dst.mig"])
        except Exception as e:  # noqa: BLE001 - report and go on
            result(c + ".analyze", False, str(e))
            continue
        bad = []
        for label, rx in (("GIC", GIC), ("ITS", ITS)):
            bad += ["%s: %s" % (label, x) for x in section_diffs(a, b, rx)[1][:6]]
        g = a.get("arm_gicv3", {})
        result(c + ".GIC-and-ITS-equal-both-sides", not bad,
               "; ".join(bad) if bad else "GICD_CTLR %s, GITS_CTLR %s" % (
                   g.get("gicd_ctlr"), a.get("arm_gicv3_its", {}).get("ctlr")))
        # A patched destination ran QEMU's own restore list through vgicd,
        # in its version's put order (10.2 and later: no pending clears),
        # batched: the L1 checks the event is there, this how it ran.
        if c.rsplit("-to-", 1)[1].startswith("P"):
            ev = [x for _, e, x in trace_events(files[c + ".dst.trace"])
                  if e == "kvm_arm_gicv3_vgicd_load_fields"] if c + ".dst.trace" in files else []
            m = re.match(r"(\d+) writes .*, (\d+) ioctls, batched (\d)", ev[-1]) if ev else None
            result(c + ".load-batched", bool(m and m.group(3) == "1"),
                   "%s writes in %s ioctls" % (m.group(1), m.group(2)) if m else
                   "no kvm_arm_gicv3_vgicd_load_fields event" if not ev else ev[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--a", default="")
    ap.add_argument("--b", default="0")
    ap.add_argument("--c", default="")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--enforce-target", action="store_true")
    ap.add_argument("--c-vmdesc", choices=("on", "off"), default="on")
    ap.add_argument("--d", default="")
    ap.add_argument("--d-hops", type=int, default=3)
    ap.add_argument("--e", type=int, default=0)
    ap.add_argument("--e-all", type=int, default=1)
    ap.add_argument("--e-patched", default="10.0", help="the patched QEMU's base (run-qemu-e2e.sh --qemu-base)")
    ap.add_argument("--results")
    ap.add_argument("--vgicctl", help="a native vgicctl: `vgicctl dump` of the (a) streams")
    args = ap.parse_args()
    sizes_a = [int(x) for x in args.a.split(",") if x]
    sizes_c = [int(x) for x in args.c.split(",") if x]
    sizes_d = [int(x) for x in args.d.split(",") if x and x != "0"]
    results = {"c": [], "d": []}

    print("L1 console:")
    checks, stamps, done, files, other = read_log(args.log, args.out)
    if done is None:
        print("\nL1 ended without its E2E-DONE line; the console's last other lines:")
        for line in other:
            print("  ! " + line)
    print("\nChecks made inside L1:")
    for c in checks:
        status, rest = c.split(" ", 1)
        name, _, detail = rest.partition(" :: ")
        result(name, status == "PASS", detail)
    result("L1 finished", done is not None and "fails=0" in done, done or "no E2E-DONE line")

    print("\n(a)/(b) streams (analyze-migration.py):")
    for n in sizes_a:
        check_a(args.analyze, files, n, first=n == sizes_a[0])
        if args.vgicctl:
            check_dump(args.vgicctl, files, n)
    if args.b != "0":
        try:
            su = subsections_of(desc(args.analyze, files["b-unreach.mig"]), "arm_gicv3")
            result("b.unreachable-stream-without-vgicd-subsection", "arm_gicv3/vgicd" not in su, "%s" % su)
        except Exception as e:  # noqa: BLE001
            result("b.unreachable-stream", False, str(e))

    if sizes_c:
        print("\n(c) GIC section (arm_gicv3) save and load, from QEMU trace events, paused VMs;")
        print("    median of %d runs per cell (each run in a fresh QEMU), all runs in brackets:" % args.reps)
        if args.c_vmdesc == "off":
            print("    DIAGNOSTIC RUN: both QEMUs ran with -machine suppress-vmdesc=on (not the default),")
            print("    so the section leaves out building the stream's JSON description of the GIC")
        # With (e), the L1 has trixie-backports' stock 11.1 too, and (c)
        # times it as a fourth side (stock11): the baseline of the newer QEMU.
        sides = ("stock", "patched", "record") + (("stock11",) if args.e else ())
        print("    stock: Debian's QEMU; fields: the patched QEMU through vgicd, QEMU's own fields in")
        print("    the stream (the default); record: the same with Record=true (vgicd's state record)")
        if args.e:
            print("    stock11: trixie-backports' stock QEMU 11.1 (a line of its own, below the row)")
        print("  %6s | %10s %12s %12s %7s %7s | %10s %12s %12s %7s %7s" % (
            "vCPUs", "stock save", "fields save", "record save", "ratio", "ratio",
            "stock load", "fields load", "record load", "ratio", "ratio"))
        for n in sizes_c:
            t, runs, hook = {}, {}, {}
            for side in sides:
                for op, fn in (("save", gic_save_ms), ("load", gic_load_ms)):
                    traces = [files.get("c%d-%s-%s.%d.trace" % (n, side, op, r))
                              for r in range(1, args.reps + 1)]
                    got = [fn(p) if p else None for p in traces]
                    hooks = [gic_hook_ms(p, op) if p else None for p in traces]
                    if any(x is None for x in got):
                        result("c%d.%s.%s-time" % (n, side, op), False,
                               "no GIC section events in %d of %d traces" % (got.count(None), len(got)))
                    ok = [x for x in got if x is not None]
                    runs[side, op] = ok
                    t[side, op] = statistics.median(ok) if ok else None
                    ok_h = [x for x in hooks if x is not None]
                    hook[side, op] = statistics.median(ok_h) if ok_h else None
            row = []
            for op in ("save", "load"):
                s_ = t["stock", op]
                row += ["%8.1f ms" % s_ if s_ is not None else "         ?"]
                row += ["%10.1f ms" % t[x, op] if t[x, op] is not None else "           ?"
                        for x in ("patched", "record")]
                row += ["%6.1fx" % (s_ / t[x, op]) if s_ and t[x, op] else "     ?"
                        for x in ("patched", "record")]
            print("  %6d | %s %s %s %s %s | %s %s %s %s %s" % (n, *row))
            if "stock11" in sides:
                print("  %6s   stock 11.1: save %s, load %s" % ("", *(
                    "%.1f ms" % t["stock11", op] if t["stock11", op] is not None else "?"
                    for op in ("save", "load"))))
            print("  %6s   runs: %s" % ("", "; ".join(
                "%s %s [%s]" % (side, op, ", ".join("%.1f" % x for x in runs[side, op]))
                for op in ("save", "load") for side in sides)))
            parts = []
            for op in ("save", "load"):
                for side in sides:
                    h, tot = hook[side, op], t[side, op]
                    parts.append("%s %s %s" % (side, op, "%.1f ms (rest of the section %.1f ms)" % (
                        h, tot - h) if h is not None and tot is not None else "?"))
            print("  %6s   of which the vGIC get (pre_save) / put (post_load), medians: %s" % (
                "", "; ".join(parts)))
            results["c"].append({"vcpus": n, **{
                name: {"save": t[side, "save"], "load": t[side, "load"],
                       "get": hook[side, "save"], "put": hook[side, "load"]}
                for side, name in (("stock", "stock"), ("patched", "fields"), ("record", "record"),
                                   ("stock11", "stock11")) if side in sides}})
            for side, op, event in (("patched", "save", "kvm_arm_gicv3_vgicd_save_fields"),
                                    ("patched", "load", "kvm_arm_gicv3_vgicd_load_fields"),
                                    ("record", "save", "kvm_arm_gicv3_vgicd_save"),
                                    ("record", "load", "kvm_arm_gicv3_vgicd_load")):
                every = all(has_event(files, "c%d-%s-%s.%d.trace" % (n, side, op, r), event)
                            for r in range(1, args.reps + 1))
                result("c%d.%s-%s-through-vgicd" % (n, side, op), every,
                       "" if every else "a run without the %s trace event" % event)
            if n == 128 and all(t[x, op] is not None for x in ("stock", "patched") for op in ("save", "load")):
                ok = all(t["patched", op] * 20 <= t["stock", op] for op in ("save", "load"))
                msg = "target patched (fields) <= stock/20 (medians): save %.1fx, load %.1fx" % (
                    t["stock", "save"] / t["patched", "save"], t["stock", "load"] / t["patched", "load"])
                if args.enforce_target:
                    result("c128.target", ok, msg)
                else:
                    print("  %s: %s (not enforced)" % ("met" if ok else "MISSED", msg))

    if sizes_d:
        results["d"] = report_d(files, sizes_d, args.d_hops)
    if args.e:
        print("\n(e) live migrations across QEMU versions, machine virt-10.0 (%s):" % "; ".join(
            "%s %s" % (k, v[1]) for k, v in e_kinds(args.e_patched).items()))
        check_e(args.analyze, files, args.e, args.e_all, args.e_patched)
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)

    if stamps:
        print("\nWhere L1's time went (guest clock, s since boot):")
        keys = sorted(stamps, key=stamps.get)
        prev = 0.0
        for k in keys:
            print("  %-24s at %8.1f  (+%.1f)" % (k, stamps[k], stamps[k] - prev))
            prev = stamps[k]

    print("\n%d failure(s)%s" % (len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
