"""python3 -m caliber: Python op suites, and the caliber CLI in this process.

    python3 -m caliber run SUITE.py [OP...] [caliber run knobs...]
        registers the suite's ops and runs them with caliber's run driver: one run directory
        (run.log, run_identity.json with the Python, torch and Triton versions, shapes.yaml)
        that caliber summary, compare, report and export read as any other.
    python3 -m caliber batch SUITE.py [knobs...]
        one child process per op into one batch directory (ops_status.csv, logs/): an op that
        kills its process (a sticky CUDA error, a crash) fails alone and every other op runs.
    python3 -m caliber summary|compare|report|export|... ARGS
        the caliber CLI itself.

Exit codes as caliber's: 0 ok, 1 the work ran and something failed, 2 bad input.
"""

import csv
import os
import subprocess
import sys
import time

from . import _lib
from .suite import SuiteError, identity_extra, register_suite

USAGE = ("usage: python3 -m caliber run SUITE.py [OP...] [knobs...]\n"
         "       python3 -m caliber batch SUITE.py [knobs...]\n"
         "       python3 -m caliber summary|compare|report|export|list|... ARGS")


def _split_suite(args, command):
    if not args or not args[0].endswith(".py"):
        raise SuiteError("%s: the first argument must be the suite file (a .py), got '%s'"
                         % (command, args[0] if args else ""))
    return args[0], args[1:]


def _has(rest, flag):
    return any(a == flag or a.startswith(flag + "=") for a in rest)


def run(args):
    suite, rest = _split_suite(args, "run")
    names = register_suite(suite)
    identity_extra(suite)
    cli_args = ["run"]
    if not _has(rest, "--node") and not _has(rest, "--op-file") and not any(
            a in names for a in rest):
        cli_args += names
    if not _has(rest, "--name"):
        cli_args += ["--name", os.path.splitext(os.path.basename(suite))[0]]
    return _lib.cli(cli_args + rest)


def _knob_value(rest, flag, default):
    for i, a in enumerate(rest):
        if a == flag and i + 1 < len(rest):
            return rest[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return default


def batch(args):
    suite, rest = _split_suite(args, "batch")
    from .suite import load
    names = [op["name"] for op, _ in load(suite)]  # bad input stops here, nothing written
    out = _knob_value(rest, "--out", "runs")
    timeout = float(os.environ.get("CALIBER_PY_BATCH_TIMEOUT", "3600"))
    stem = os.path.splitext(os.path.basename(suite))[0]
    bdir = os.path.join(out, "%s-batch-%s" % (stem, time.strftime("%Y%m%d-%H%M%S")))
    n = 2
    while os.path.exists(bdir):
        bdir = bdir.rsplit("-batch-", 1)[0] + "-batch-" + time.strftime("%Y%m%d-%H%M%S") + \
            "-%d" % n
        n += 1
    os.makedirs(os.path.join(bdir, "logs"))
    rest = [a for i, a in enumerate(rest)
            if not (a == "--out" or a.startswith("--out=") or
                    (i > 0 and rest[i - 1] == "--out"))]
    status = {name: {"op": name, "status": "pending", "backend": "", "device": "", "timer": "",
                     "rows": 0, "duration_s": 0, "reason": ""} for name in names}

    def write_status():
        tmp = os.path.join(bdir, "ops_status.csv.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["op", "status", "backend", "device", "timer",
                                              "rows", "duration_s", "reason"])
            w.writeheader()
            for name in names:
                w.writerow(status[name])
        os.replace(tmp, os.path.join(bdir, "ops_status.csv"))

    write_status()
    print("caliber batch: %s (%d ops, one process each)" % (bdir, len(names)), flush=True)
    worst = 0
    for name in names:
        status[name]["status"] = "running"
        write_status()
        t0 = time.time()
        log = os.path.join(bdir, "logs", name + ".log")
        cmd = [sys.executable, "-m", "caliber", "run", suite, name, "--out", bdir,
               "--name", name] + rest
        with open(log, "w") as f:
            try:
                rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                                    timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = None
        s = status[name]
        s["duration_s"] = round(time.time() - t0, 3)
        rows, first_fail = _rows_of(bdir, name)
        s["rows"] = rows
        if rc is None:
            s["status"], s["reason"] = "timeout", "no exit within %g s" % timeout
        elif rc == 0:
            s["status"] = "ok"
        elif rc == 1:
            s["status"], s["reason"] = "failed", first_fail
        elif rc == 2:
            s["status"], s["reason"] = "failed", "bad input (exit 2): see logs/%s.log" % name
        else:
            s["status"] = "crashed"
            s["reason"] = ("signal %d" % -rc) if rc < 0 else "exit %d: %s" % (rc, first_fail)
        worst = max(worst, 0 if s["status"] == "ok" else 1)
        write_status()
        print("  %-24s %s %s" % (name, s["status"], s["reason"]), flush=True)
    print("ops_status.csv in %s" % bdir, flush=True)
    return worst


def _rows_of(bdir, name):
    import json
    rows, first = 0, ""
    for d in sorted(os.listdir(bdir)):
        p = os.path.join(bdir, d, "run.log")
        if not d.startswith(name + "-") or not os.path.isfile(p):
            continue
        with open(p) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("type") != "case":
                    continue
                rows += 1
                if not first and r.get("status") == "failed":
                    first = "%s: %s" % (r.get("node"), r.get("error", ""))[:300]
    return rows, first


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    try:
        if argv[0] == "run":
            return run(argv[1:])
        if argv[0] == "batch":
            return batch(argv[1:])
        return _lib.cli(argv)
    except SuiteError as e:
        print("caliber: %s" % e, file=sys.stderr)
        return 2
    except _lib.CaliberError as e:
        print("%s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
