#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""report.py - bench-scaling's figures as a reader wants them.

    report.py --in bench.json --out DIR [--nested DIR] [--qemu-e2e DIR]
    report.py --check DIR [--sizes 8,16,...]

From bench-scaling's JSON (every run's time) it writes into DIR:
  bench.md      the table at 160 vCPUs in the shape of the reference
                measurement, the sweep (median, min, max, ioctls, round
                trips, record bytes, vgicd's own share), the fitted
                exponents, the fleet, each target met or missed, and the
                nested tiers' tables when their results are there;
  bench.json    the same figures, summarised, with the raw runs;
  bench.png     two panels (gnuplot, pngcairo): time against vCPUs,
                log-log, a line per path and direction with min-max
                bars, each line's fitted exponent k in its legend, the
                reference measurement at 160 vCPUs and the nested tiers'
                real-kernel points when there; and the speed-up over
                QEMU's one by one against vCPUs.  Colours and markers
                tell the paths apart, dash types the directions; the
                caption says machine, runs, date and version.
--check DIR verifies that shape (every path and direction at every size,
the targets judged, a PNG that is a PNG) and exits 1 when it is not: CI
runs it on the quick mode's output.  Only Python's standard library.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import struct
import subprocess
import sys

PATHS = ("qemu", "single", "fields", "record")
DIRS = ("save", "restore")
# "fields" is the default (QEMU's own GIC fields in the stream): what a user
# gets without Record=true.  The targets are judged on it.
DEFAULT = "fields"
PATH_LABEL = {
    "qemu": "QEMU 10.0, one by one (no vgicd)",
    "single": "vgicd, one by one (default path)",
    "fields": "vgicd, batched, default (QEMU's fields)",
    "record": "vgicd, batched, Record=true",
}
# The reference measurement (160 vCPUs, real arm64 host): README, docs/design.md.
SEED = {"save": (120.0, 19.0), "restore": (158.0, 40.0)}
DEFAULT_SIZES = (8, 16, 32, 64, 128, 160, 256, 512)


def fit_exponent(points):
    """Least-squares slope of log(t) against log(n): t ~ n^k."""
    pts = [(math.log(n), math.log(t)) for n, t in points if t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def summarise(raw):
    sizes = []
    for s in raw["sizes"]:
        row = {"vcpus": s["vcpus"], "paths": {}}
        for p in PATHS:
            row["paths"][p] = {}
            for d in DIRS:
                c = s["paths"][p][d]
                cell = {
                    "median_ms": statistics.median(c["ms"]),
                    "min_ms": min(c["ms"]),
                    "max_ms": max(c["ms"]),
                    "ioctls": c["ioctls"],
                    "calls": c["calls"],
                    "registers": c["registers"],
                    "bytes": c["bytes"],
                    "own_ms": statistics.median(c["own_ms"]) if c["own_ms"] else None,
                    "qemu_ms": statistics.median(c["qemu_ms"]) if c.get("qemu_ms") else None,
                    "vgicd_ms": statistics.median(c["vgicd_ms"]) if c.get("vgicd_ms") else None,
                    "runs": c["ms"],
                }
                if cell["own_ms"] is not None and c["registers"]:
                    cell["own_us_per_register"] = 1000 * cell["own_ms"] / c["registers"]
                row["paths"][p][d] = cell
        sizes.append(row)
    fits = {}
    for p in PATHS:
        for d in DIRS:
            fits[f"{p}/{d}"] = fit_exponent(
                [(r["vcpus"], r["paths"][p][d]["median_ms"]) for r in sizes])
    f = raw["fleet"]
    fleet = dict(f)
    fleet["alone_median_ms"] = statistics.median(f["alone_ms"])
    fleet["busy_median_ms"] = statistics.median(f["busy_ms"])
    fleet["busy_max_ms"] = max(f["busy_ms"])
    return sizes, fits, fleet


def at(sizes, n):
    for r in sizes:
        if r["vcpus"] == n:
            return r
    return None


def targets(sizes, fleet):
    """Each target, judged on the default path with the record path's figure
    beside it: (what, figure text, met: True/False/None when not measured)."""
    out = []

    def med(r, p, d):
        return r["paths"][p][d]["median_ms"]

    # (the path it is divided by, its name, the limit): the default against
    # QEMU's one by one, and against the record path.
    for base, name, limit in (("qemu", "QEMU's one by one", 0.02), ("record", "record", 1.25)):
        for n in (160, 512):
            r = at(sizes, n)
            for d in DIRS:
                what = f"default (fields) / {name} at {n} vCPUs, {d} <= {limit}"
                if not r:
                    out.append((what, f"not measured ({n} vCPUs not in the sweep)", None))
                    continue
                ratio = med(r, DEFAULT, d) / med(r, base, d)
                figure = f"{ratio:.4f}" if limit < 0.1 else f"{ratio:.2f}"
                figure += f" ({med(r, DEFAULT, d):.2f} / {med(r, base, d):.2f} ms"
                if base == "qemu":
                    figure += f"; record: {med(r, 'record', d) / med(r, base, d):.4f}"
                out.append((what, figure + ")", ratio <= limit))
    r = at(sizes, 160)
    for d in DIRS:
        what = f"vgicd's own share at 160 vCPUs, default (fields) {d} <= 0.5 ms"
        if not r:
            out.append((what, "not measured", None))
            continue
        c, rec = r["paths"][DEFAULT][d], r["paths"]["record"][d]
        out.append((what, f"{c['own_ms']:.3f} ms of {c['median_ms']:.3f} ms, "
                          f"{c.get('own_us_per_register', 0):.3f} µs a register, "
                          f"{c['vgicd_ms']:.3f} ms of it in vgicd's handlers "
                          f"(record: {rec['own_ms']:.3f} ms, {rec['vgicd_ms']:.3f} in vgicd)",
                    c["own_ms"] <= 0.5))
    lo, hi = at(sizes, 64), at(sizes, 512)
    for d in DIRS:
        what = f"default (fields) {d}: t(512) / t(64) <= 10.4"
        if not (lo and hi):
            out.append((what, "not measured", None))
            continue
        ratio = med(hi, DEFAULT, d) / med(lo, DEFAULT, d)
        out.append((what, f"{ratio:.2f} ({med(hi, DEFAULT, d):.2f} / {med(lo, DEFAULT, d):.2f} ms;"
                          f" record: {med(hi, 'record', d) / med(lo, 'record', d):.2f})",
                    ratio <= 10.4))
    mib = fleet["rss_kib"] / 1024
    what = f"vgicd's RSS with {fleet['vms']} sessions of {fleet['vcpus']} vCPUs <= 64 MiB"
    if fleet["vms"] < 64:
        what += f" (quick mode: {fleet['vms']} sessions, not the target's 64)"
    out.append((what, f"{mib:.1f} MiB attached (peak {fleet['peak_rss_kib'] / 1024:.1f} MiB "
                      f"while all saved at once)", mib <= 64 if fleet["vms"] >= 64 else None))
    return out


def verdict(met):
    return "**met**" if met else ("not measured" if met is None else "**missed**")


def kfmt(k):
    """A fitted exponent, or '-' when the sweep had one size."""
    return "-" if k is None else f"{k:.2f}"


def ms(v):
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def split_table(nested_dir):
    """Where a one-by-one access's time goes (the nested tier's
    NESTED-SPLIT line: vgicd's calibrated line a + b x n ns, and c, an
    access's own cost inside a batch), at 8 to 512 vCPUs (markdown lines).
    The patched kernel's when it ran, which has c; else the stock one's."""
    for role in ("patched", "stock"):
        path = os.path.join(nested_dir or "", f"{role}-split.json")
        if not nested_dir or not os.path.exists(path):
            continue
        sp = json.load(open(path))
        a, b, c = sp["base_ns"], sp["per_vcpu_ns"], min(sp["register_ns"], sp["base_ns"])
        lines = [
            "",
            f"**Where a one-by-one access's time goes** ({role} kernel of the nested tier; "
            f"vgicd's start-up calibration: {a:.0f} ns + {b:.1f} ns per vCPU an access"
            + (f"; the register's own work, {c:.0f} ns, is an access's kernel time inside a "
               "batch" if c > 0 else "") + "). A batch pays the vCPU locks and the call once "
            "per ioctl instead of once per register.",
            "",
            "| vCPUs | ns an access | all-vCPU lock | call (syscall, copy, kvm->lock) | register |"
            if c > 0 else "| vCPUs | ns an access | all-vCPU lock | call and register |",
            "|---|---|---|---|---|" if c > 0 else "|---|---|---|---|",
        ]
        for n in (8, 16, 32, 64, 128, 256, 512):
            lock, total = b * n, a + b * n
            if c > 0:
                lines.append(f"| {n} | {total:.0f} | {100 * lock / total:.0f} % | "
                             f"{100 * (a - c) / total:.0f} % | {100 * c / total:.0f} % |")
            else:
                lines.append(f"| {n} | {total:.0f} | {100 * lock / total:.0f} % | "
                             f"{100 * a / total:.0f} % |")
        return lines
    return []


def nested_rows(nested_dir, role):
    """The nested tier's rows for the @role kernel and the key of its vgicd
    column ("batch", or "auto" where the kernel has no batch group), or
    ([], None) when no run left them."""
    path = os.path.join(nested_dir or "", f"{role}-rows.jsonl")
    if not nested_dir or not os.path.exists(path):
        return [], None
    rows = [json.loads(x) for x in open(path) if x.strip()]
    if not rows:
        return [], None
    return rows, "batch" if "batch" in rows[0]["save_ms"] else "auto"


def nested_tables(nested_dir, qemu_dir):
    """The nested tiers' results, when a run left them (markdown lines)."""
    lines = []
    for role in ("patched", "stock"):
        rows, first = nested_rows(nested_dir, role)
        if not rows:
            continue
        lines += [
            "",
            f"**Nested tier, {role} kernel** (real arm64 KVM, Linux 6.12, TCG; "
            f"`tests/nested/run-nested.sh`, best of its runs; {first}: "
            + ("the kernel's batch group" if role == "patched" else
               "no batch group here, so vgicd falls back to one by one") + ")",
            "",
            "| vCPUs | save: vgicd ms | one by one ms | ratio | restore: vgicd ms | one by one ms | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['vcpus']} | {r['save_ms'][first]:.1f} | {r['save_ms']['qemu']:.1f} | "
                f"{r['save_ms']['qemu'] / max(r['save_ms'][first], 1e-9):.1f}x | "
                f"{r['restore_ms'][first]:.1f} | {r['restore_ms']['qemu']:.1f} | "
                f"{r['restore_ms']['qemu'] / max(r['restore_ms'][first], 1e-9):.1f}x |")
    lines += split_table(nested_dir)
    path = os.path.join(qemu_dir or "", "results.json")
    if qemu_dir and os.path.exists(path):
        res = json.load(open(path))
        c = res.get("c") or []
        if c:
            lines += [
                "",
                "**QEMU end-to-end tier** (QEMU 10.0 with `-accel kvm` in the nested "
                "machine; `tests/nested/run-qemu-e2e.sh`, medians): the GIC section and, "
                "inside it, the vGIC get (pre_save) and put (post_load), ms",
                "",
                "| vCPUs | what | stock | vgicd, QEMU's fields | vgicd, record |",
                "|---|---|---|---|---|",
            ]
            for row in c:
                for key, label in (("save", "GIC section save"), ("load", "GIC section load"),
                                   ("get", "vGIC get"), ("put", "vGIC put")):
                    vals = [row.get(side, {}).get(key) for side in ("stock", "fields", "record")]
                    if all(v is None for v in vals):
                        continue
                    cells = " | ".join("-" if v is None else f"{v:.0f}" for v in vals)
                    lines.append(f"| {row['vcpus']} | {label} | {cells} |")
        d = res.get("d") or []
        if d:
            lines += [
                "",
                "**The vGIC's share of a live migration's downtime** (a running guest, one "
                "vCPU online, the vGIC sized for all; medians over the hops): `query-migrate`'s "
                "downtime, setup time and downtime bytes on the source, the guest's real pause "
                "(the source's stop to the destination's start, from the trace events), and the "
                "GIC section's save and load",
                "",
                "| vCPUs | path | downtime ms | stop to start ms | setup ms | downtime bytes | "
                "GIC save ms | GIC load ms | GIC share of the pause (of downtime) |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for row in d:
                of_dt = row.get("gic_share_of_downtime")
                lines.append(
                    f"| {row['vcpus']} | {row['path']} | {row['downtime_ms']:.0f} | "
                    f"{row['stop_to_run_ms']:.0f} | {row['setup_ms']:.0f} | {row['downtime_bytes']} | "
                    f"{row['gic_save_ms']:.0f} | {row['gic_load_ms']:.0f} | "
                    f"{100 * row['gic_share']:.0f} % ({'-' if of_dt is None else f'{100 * of_dt:.0f} %'}) |")
    return lines


def markdown(raw, sizes, fits, fleet, judged, extra):
    runs = raw["runs"]
    out = [
        f"### vgicd {raw['version']}: the vGIC's save and restore against vCPUs",
        "",
        f"vgic-sim (real `ioctl(2)` round trips, a lock per vCPU around every access as "
        f"KVM's `lock_all_vcpus()`), {raw['irqs']} IRQs, an ITS (PLPIS on), random state; "
        f"{runs} interleaved runs of each path at each size, every destination compared "
        f"with its source; {raw['cpus']} CPUs ({raw.get('cpu') or 'unknown'}), "
        f"{raw['seconds']:.0f} s, "
        + ("idle CPUs polling (`/dev/cpu_dma_latency` held at 0: a one-by-one access is a "
           "round trip between two threads, which otherwise waits on CPUs waking from halt)"
           if raw.get("pm_qos") else
           "**idle CPUs allowed to halt** (`/dev/cpu_dma_latency` was not writable): the "
           "one-by-one figures vary with the machine's idle states")
        + ". **default** is the path a user gets (QEMU's own GIC fields in the stream, "
        "vgicd batched; `fields` below); `record` is `Record=true` (vgicd's state record in "
        "the stream); `single` is the default path on a kernel without the batch group.",
        "",
    ]
    r = at(sizes, 160)
    if r:
        out += [
            "At 160 vCPUs, in the shape of the reference measurement (a real 160-vCPU "
            "arm64 host; its figures beside ours):",
            "",
            "| Metric | one register per ioctl | batched, default (vgicd) | Improvement | "
            "batched, Record=true | reference: one by one | reference: batched | "
            "reference improvement |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for d, label in (("save", "VGIC get (save)"), ("restore", "VGIC put (restore)")):
            one = r["paths"]["qemu"][d]["median_ms"]
            bat = r["paths"][DEFAULT][d]["median_ms"]
            rec = r["paths"]["record"][d]["median_ms"]
            s1, sb = SEED[d]
            out.append(f"| {label} | {one:.1f} ms | {bat:.2f} ms | {100 * (1 - bat / one):.1f}% | "
                       f"{rec:.2f} ms | {s1:.0f} ms | {sb:.0f} ms | {100 * (1 - sb / s1):.0f}% |")
        out.append("")
    out += [
        "The sweep (median, with min-max; ioctls; calls: QEMU's calls to vgicd, each a "
        "round trip but the last of a restore and of a default save whose guessed round 2 "
        "held, whose answer QEMU does not wait for; own: vgicd's share, the libvgicd call's time outside the executor's kernel "
        "calls (vgicd, libvgicd and the transport; not the kernel, not QEMU's own loop), and "
        "per register; vgicd: the part of it in vgicd's handlers; QEMU: the fields paths' own "
        "loop in QEMU, its lookups on save and the collection of its writes on restore):",
        "",
        "| vCPUs | path | save ms (min-max) | ioctls | calls | own ms (µs/reg) | vgicd ms | QEMU ms "
        "| restore ms (min-max) | ioctls | calls | own ms (µs/reg) | vgicd ms | QEMU ms | record bytes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sizes:
        for p in PATHS:
            s, t = row["paths"][p]["save"], row["paths"][p]["restore"]
            # QEMU's own path has no vgicd: no calls, no share, no record.
            own = (lambda c: "-" if c["own_ms"] is None else
                   f"{c['own_ms']:.3f} ({c.get('own_us_per_register', 0):.3f})")
            qemu = (lambda c: "-" if c.get("qemu_ms") is None else f"{c['qemu_ms']:.3f}")
            vgicd = (lambda c: "-" if c.get("vgicd_ms") is None else f"{c['vgicd_ms']:.3f}")
            calls = (lambda c: "-" if p == "qemu" else str(c["calls"]))
            out.append(
                f"| {row['vcpus']} | {p} | {ms(s['median_ms'])} ({ms(s['min_ms'])}-{ms(s['max_ms'])}) "
                f"| {s['ioctls']} | {calls(s)} | {own(s)} | {vgicd(s)} | {qemu(s)} "
                f"| {ms(t['median_ms'])} ({ms(t['min_ms'])}-{ms(t['max_ms'])}) "
                f"| {t['ioctls']} | {calls(t)} | {own(t)} | {vgicd(t)} | {qemu(t)} | {s['bytes'] or '-'} |")
    out += ["", "Fitted exponents (t ~ vCPUs^k, least squares over the sweep's medians):", "",
            "| path | save k | restore k |", "|---|---|---|"]
    for p in PATHS:
        out.append(f"| {PATH_LABEL[p]} | {kfmt(fits[p + '/save'])} | {kfmt(fits[p + '/restore'])} |")
    out += [
        "",
        f"The fleet: {fleet['vms']} VMs of {fleet['vcpus']} vCPUs attached to one vgicd: "
        f"RSS {fleet['idle_rss_kib'] / 1024:.1f} MiB idle, **{fleet['rss_kib'] / 1024:.1f} MiB** "
        f"attached ({fleet['shmem_kib'] / 1024:.1f} MiB of it the shared windows), peak "
        f"{fleet['peak_rss_kib'] / 1024:.1f} MiB; descriptors {fleet['idle_fds']} idle, "
        f"{fleet['fds']} attached. A save alone: median {fleet['alone_median_ms']:.2f} ms; "
        f"all {fleet['vms']} saving at once: median {fleet['busy_median_ms']:.2f} ms, max "
        f"{fleet['busy_max_ms']:.2f} ms ({fleet['correct']} of {fleet['saves']} records correct).",
        "",
        "| target | figure | |",
        "|---|---|---|",
    ]
    for what, figure, met in judged:
        out.append(f"| {what} | {figure} | {verdict(met)} |")
    out += extra
    return "\n".join(out) + "\n"


# Okabe-Ito colours, readable by colour-blind readers; each path also has its
# own marker (filled for save, hollow for restore) so that the plot reads in
# grey too.
STYLE = {
    "qemu": ("#D55E00", 5, 4),     # vermillion, square
    "single": ("#E69F00", 9, 8),   # orange, triangle
    "fields": ("#0072B2", 7, 6),   # blue, circle
    "record": ("#009E73", 13, 12),  # bluish green, diamond
}


def nested_points(nested_dir):
    """The nested tier's patched-kernel rows as points: (vcpus, dir,
    one-by-one ms, batched ms), when a run left them."""
    rows, key = nested_rows(nested_dir, "patched")
    return [(r["vcpus"], d, r[field]["qemu"], r[field][key])
            for r in rows for d, field in (("save", "save_ms"), ("restore", "restore_ms"))]


def plot(raw, sizes, fits, outdir, nested_dir=None):
    data = os.path.join(outdir, "bench.dat")
    series = []
    with open(data, "w") as f:
        # One block per path and direction: vcpus median min max speed-up.
        for p in PATHS:
            for d in DIRS:
                f.write(f"# {p}/{d}: vcpus median min max speedup\n")
                for r in sizes:
                    c = r["paths"][p][d]
                    up = r["paths"]["qemu"][d]["median_ms"] / c["median_ms"]
                    f.write(f"{r['vcpus']} {c['median_ms']:.6f} {c['min_ms']:.6f} "
                            f"{c['max_ms']:.6f} {up:.6f}\n")
                f.write("\n\n")
                series.append((p, d))
        f.write("# the reference measurement: vcpus one-by-one batched (save, restore)\n")
        for d in DIRS:
            f.write(f"160 {SEED[d][0]} {SEED[d][1]}\n")
        f.write("\n\n")
        # The last block, written only when there are points to plot.
        nested = nested_points(nested_dir)
        if nested:
            f.write("# nested tier, patched kernel: vcpus one-by-one batched\n")
            for n, _, one, bat in nested:
                f.write(f"{n} {one} {bat}\n")
    ref_idx, nested_idx = len(series), len(series) + 1
    timing, speed = [], []
    for i, (p, d) in enumerate(series):
        colour, filled, hollow = STYLE[p]
        pt = filled if d == "save" else hollow
        dash = 1 if d == "save" else 2
        k = fits[f"{p}/{d}"]
        timing.append(f"'{data}' index {i} using 1:2:3:4 with yerrorlines lw 2 pt {pt} ps 1.1 "
                      f"dt {dash} lc rgb '{colour}' title \"{PATH_LABEL[p]}, {d} (k = {kfmt(k)})\"")
        if p != "qemu":
            speed.append(f"'{data}' index {i} using 1:5 with linespoints lw 2 pt {pt} ps 1.1 "
                         f"dt {dash} lc rgb '{colour}' title \"{PATH_LABEL[p]}, {d}\"")
    timing.append(f"'{data}' index {ref_idx} using 1:2 with points pt 2 ps 2 lw 2 lc rgb 'black' "
                  "title 'reference, real 160-vCPU host: one by one (save, restore)'")
    timing.append(f"'{data}' index {ref_idx} using 1:3 with points pt 3 ps 2 lw 2 lc rgb 'black' "
                  "title 'reference: batched (save, restore)'")
    if nested:
        timing.append(f"'{data}' index {nested_idx} using 1:2 with points pt 10 ps 1.4 lw 2 "
                      "lc rgb '#555555' title 'nested, real arm64 KVM under TCG: one by one'")
        timing.append(f"'{data}' index {nested_idx} using 1:3 with points pt 11 ps 1.4 lw 2 "
                      "lc rgb '#555555' title 'nested: through vgicd, batched'")
    when = raw.get("date") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    caption = (f"vgicd {raw['version']}, bench/run-bench.sh on vgic-sim ({raw['irqs']} IRQs, an ITS), "
               f"{raw['runs']} runs a point (line: median; bars: min-max), "
               f"{raw['cpus']} CPUs ({raw.get('cpu') or 'unknown'}), {when}")
    xr = f"[{min(r['vcpus'] for r in sizes) * 0.8}:{max(r['vcpus'] for r in sizes) * 1.25}]"
    xt = f"({', '.join(str(r['vcpus']) for r in sizes)})"
    script = "\n".join([
        "set terminal pngcairo size 1600,760 font 'sans,10'",
        f"set output '{os.path.join(outdir, 'bench.png')}'",
        "set encoding utf8",
        "set multiplot layout 1,2 margins 0.06,0.98,0.17,0.93 spacing 0.06,0",
        f"set label 1 \"{caption}\" at screen 0.5,0.03 center font 'sans,10'",
        "set label 2 \"k: the fitted exponent of t ∝ vCPUs^k (least squares over the medians): "
        "k = 1 grows as the vCPUs, k = 2 as their square (an access that locks every vCPU, once "
        "per register)\" at screen 0.5,0.075 center font 'sans,10'",
        "set logscale xy", "set grid",
        f"set xrange {xr}", f"set xtics {xt}", "set xlabel 'vCPUs'",
        "set ylabel 'wall time, ms'",
        # Room above the one-by-one lines for the key, so that it hides no point.
        "set yrange [0.1:1e6]",
        "set key inside left top Left reverse box opaque spacing 1.05 font 'sans,8'",
        "set title 'vGIC save and restore against vCPUs'",
        "plot " + ", \\\n     ".join(timing),
        "unset label 1", "unset label 2",
        "set autoscale y",
        "set ylabel 'speed-up over QEMU 10.0 one by one (×)'",
        "set key inside right center Left reverse box opaque spacing 1.05 font 'sans,8'",
        "set title 'Speed-up against vCPUs (QEMU one by one ÷ path, medians)'",
        "plot " + ", \\\n     ".join(speed),
        "unset multiplot",
        "",
    ])
    gp = os.path.join(outdir, "bench.gp")
    with open(gp, "w") as f:
        f.write(script)
    subprocess.run(["gnuplot", gp], check=True)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check(outdir, sizes_wanted):
    problems = []
    summary = json.load(open(os.path.join(outdir, "bench.json")))
    got = [r["vcpus"] for r in summary["sizes"]]
    if sorted(got) != sorted(sizes_wanted):
        problems.append(f"sizes {got}, expected {list(sizes_wanted)}")
    for r in summary["sizes"]:
        for p in PATHS:
            for d in DIRS:
                c = r["paths"].get(p, {}).get(d)
                if not c or not c["median_ms"] > 0 or not c["ioctls"] > 0:
                    problems.append(f"{r['vcpus']} vCPUs, {p} {d}: no figure")
                elif p != "qemu" and (not c["calls"] or c["own_ms"] is None):
                    problems.append(f"{r['vcpus']} vCPUs, {p} {d}: no calls or share")
                elif p == "record" and not c["bytes"]:
                    problems.append(f"{r['vcpus']} vCPUs, {p} {d}: no record bytes")
                elif p in ("single", "fields") and c.get("qemu_ms") is None:
                    problems.append(f"{r['vcpus']} vCPUs, {p} {d}: no QEMU loop time")
    for key in (f"{p}/{d}" for p in PATHS for d in DIRS):
        if summary["fits"].get(key) is None:
            problems.append(f"no fitted exponent for {key}")
    if len(summary["targets"]) < 13:
        problems.append(f"{len(summary['targets'])} targets judged, expected 13")
    md = open(os.path.join(outdir, "bench.md")).read()
    for p in PATHS:
        for n in sizes_wanted:
            if f"| {n} | {p} |" not in md:
                problems.append(f"bench.md has no row for {n} vCPUs, {p}")
    size = png_size(os.path.join(outdir, "bench.png"))
    if not size or size[0] < 200 or size[1] < 200:
        problems.append("bench.png is not a PNG of a plot")
    for line in problems:
        print(f"report.py --check: {line}", file=sys.stderr)
    if not problems:
        print(f"report.py --check: {outdir}: {len(got)} sizes x {len(PATHS)} paths x "
              f"{len(DIRS)} directions, {len(summary['targets'])} targets judged, "
              f"bench.png {size[0]}x{size[1]}")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--in", dest="inp")
    ap.add_argument("--out")
    ap.add_argument("--nested")
    ap.add_argument("--qemu-e2e")
    ap.add_argument("--check")
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    a = ap.parse_args()
    if a.check:
        return check(a.check, [int(x) for x in a.sizes.split(",")])
    if not (a.inp and a.out):
        ap.error("--in and --out, or --check")
    raw = json.load(open(a.inp))
    sizes, fits, fleet = summarise(raw)
    judged = targets(sizes, fleet)
    os.makedirs(a.out, exist_ok=True)
    extra = nested_tables(a.nested, a.qemu_e2e)
    with open(os.path.join(a.out, "bench.md"), "w") as f:
        f.write(markdown(raw, sizes, fits, fleet, judged, extra))
    summary = {k: raw.get(k) for k in ("version", "runs", "irqs", "cpus", "seconds", "pm_qos")}
    summary.update({"cpu": raw.get("cpu"), "sizes": sizes, "fits": fits, "fleet": fleet,
                    "targets": [{"what": w, "figure": f, "met": m} for w, f, m in judged]})
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump(summary, f, indent=1)
    plot(raw, sizes, fits, a.out, a.nested)
    return 0


if __name__ == "__main__":
    sys.exit(main())
