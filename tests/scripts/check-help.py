#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-help.py - every script in scripts/, bench/ and tests/ that takes
# arguments answers --help: exit 0, the usage on stdout, and nothing done
# before it, the heavy-work lock least of all (HACKING.md: "every script
# ... takes --help where it has options").
#
#   check-help.py SOURCE_ROOT
#
# A script takes arguments when its header comment shows a usage line with
# some (`#   [bash ]NAME.sh ARGS`, indented) or it matches options in a case
# (`--name)`).  Sourced libraries (no #! line) do not.  Each --help runs
# with VGICD_HEAVY_LOCK pointing at a file this check holds (flock, as
# scripts/lib/heavy.sh takes it), so a script that takes the lock first
# blocks, and is named as such when the time is up; VGICD_BUILD and
# VGICD_CACHE point into a temporary folder; and, when this runs as root,
# the scripts run as nobody, so that one that does not answer --help cannot
# install packages or write outside the temporary folder; they run from a
# copy of the source tree in that folder, since nobody may not enter the
# checkout (a clone made with mktemp -d is private to root).
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = sys.argv[1]
FOLDERS = ("scripts", "bench", "tests")
TIMEOUT = 30  # seconds; a --help takes well under one

OPTION_LABEL = re.compile(r"^\s*(?:-[a-zA-Z]\s*\|\s*)?--[a-z][a-z0-9-]*(?:\s*\|\s*-[-a-z0-9]+)*\)", re.M)


def header(text):
    lines = []
    for line in text.splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def takes_arguments(path, text):
    name = re.escape(os.path.basename(path))
    # Indented, so not the purpose line ("# NAME.sh - what it does").
    usage = re.compile(r"^#\s{2,}(?:\S+=\S+\s+)*(?:bash\s+|sh\s+)?\S*" + name + r"\s+[^\s#]")
    if any(usage.match(line) for line in header(text)):
        return True
    return bool(OPTION_LABEL.search(text))


def interpreter(text):
    """The #! line's command, so that a /bin/sh script runs under sh."""
    return text.splitlines()[0][2:].split()


def scripts():
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames.sort()
            for f in sorted(filenames):
                if not f.endswith(".sh"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                if text.startswith("#!") and takes_arguments(path, text):
                    yield os.path.relpath(path, ROOT), interpreter(text)


def lock_waiters(lock_path):
    """Processes blocked on @lock_path (the '->' lines of /proc/locks)."""
    st = os.stat(lock_path)
    ident = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    with open("/proc/locks") as f:
        return [line for line in f if "->" in line and ident in line.split()]


# Top-level folders the copy leaves out: .git and what .gitignore names.
NOT_COPIED = shutil.ignore_patterns(".git", "build*", "_build*", ".cache", "out", "__pycache__")


def copy_tree(dst):
    """The source tree, without .git and build output, at @dst (0755)."""
    shutil.copytree(ROOT, dst, symlinks=True,
                    ignore=lambda d, names: NOT_COPIED(d, names) if d == ROOT else
                    shutil.ignore_patterns("__pycache__")(d, names))
    os.chmod(dst, 0o755)
    return dst


def demote():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


failures = []
checked = []
with tempfile.TemporaryDirectory(prefix="vgicd-help.") as tmp:
    os.chmod(tmp, 0o777)
    lock_path = os.path.join(tmp, "heavy.lock")
    with open(lock_path, "w") as lock:
        os.chmod(lock_path, 0o666)
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VGICD_")}
        env.update(VGICD_HEAVY_LOCK=lock_path, VGICD_BUILD=os.path.join(tmp, "build"),
                   VGICD_CACHE=os.path.join(tmp, "cache"), HOME=tmp)
        src = copy_tree(os.path.join(tmp, "src")) if os.geteuid() == 0 else ROOT
        for rel, shell in scripts():
            checked.append(rel)
            proc = subprocess.Popen(shell + [os.path.join(src, rel), "--help"], cwd=tmp, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True,
                                    preexec_fn=demote if os.geteuid() == 0 else None)
            try:
                out, err = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                blocked = lock_waiters(lock_path)
                os.killpg(proc.pid, 9)
                out, err = proc.communicate()
                if blocked:
                    failures.append(f"{rel}: takes the heavy-work lock before --help")
                else:
                    failures.append(f"{rel}: --help did not finish in {TIMEOUT} s")
                continue
            tail = "".join("\n    " + l for l in err.splitlines()[-5:])
            if proc.returncode != 0:
                failures.append(f"{rel}: --help exits {proc.returncode}{tail}")
            elif not out.strip():
                failures.append(f"{rel}: --help prints no usage on stdout{tail}")

for msg in failures:
    print(msg)
if not checked:
    sys.exit(f"no script with arguments found under {', '.join(FOLDERS)} of {ROOT}")
if failures:
    sys.exit(1)
print(f"ok: --help of {len(checked)} scripts: {', '.join(checked)}")
