"""Parallel warmup of a FlagGems run (PARALLEL_WARMUP_GPUS / --parallel-warmup N,
docs/flaggems.md "Tuning").

The parent starts N shard children before it measures anything: each is the same
`python3 -m caliber run --flaggems ...` command plus `--tune-shard i/N --shard-cache DB`, pinned to
the physical device behind the caller's i-th --devices entry (the backend's own visibility
variable, from the library), with FLAGGEMS_DB_URL on its own database. A shard runs FlagGems'
benchmark loop as the run does but only prepares its share of the cases (LibTuner sweeps
there: `owns` below says which) and measures and writes nothing. The parent merges the shards'
databases with sqlite3 into the run's (record) or the shared (live) database, warns how many keys
disagree between shards, writes <run>/warmup/result.json, and then measures serially on its own
device with every key already tuned.
"""

import json
import os
import signal
import subprocess
import sys
import time

from . import _lib
from . import flaggems_tune

SHARD_FLAG = "--tune-shard"
CACHE_FLAG = "--shard-cache"
# Not inherited by a shard: it never starts a warmup of its own, and it tunes (never replays).
_UNSET = ("PARALLEL_WARMUP_GPUS", "REPLAY_FROM")
# The database a shard starts from: a copy of the one the warmup merges into (the shared one in
# live mode, the run's own in record mode, which a resumed record has filled), so that a shard
# sweeps only the keys that one lacks.
BASE_ENV = "CALIBER_FLAGGEMS_BASE_DB"
# The pid of the process that started a shard: a shard whose parent is gone ends (die_with_parent).
PARENT_ENV = "CALIBER_WARMUP_PARENT"


def strip_shard_args(argv):
    """(argv without --tune-shard/--shard-cache, (i, n, db) or None). A malformed value raises
    flaggems_tune.TuneError naming the flag."""
    out, shard, db = [], None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        for flag in (SHARD_FLAG, CACHE_FLAG):
            if a == flag and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
                break
            if a.startswith(flag + "="):
                value = a.split("=", 1)[1]
                break
        else:
            out.append(a)
            i += 1
            continue
        if flag == SHARD_FLAG:
            shard = value
        else:
            db = value
        i += 1
    if shard is None:
        return out, None
    try:
        idx, n = (int(x) for x in shard.split("/"))
        assert 0 <= idx < n
    except (ValueError, AssertionError):
        raise flaggems_tune.TuneError("%s: '%s' is not a shard i/N with 0 <= i < N"
                                      % (SHARD_FLAG, shard))
    if not db:
        raise flaggems_tune.TuneError("%s: a shard needs %s FILE" % (SHARD_FLAG, CACHE_FLAG))
    return out, (idx, n, db)


_SHARD = None


def die_with_parent(parent):
    """A shard ends with the process that started it, however that one ends (even SIGKILL):
    the kernel sends it SIGTERM then (Linux's PR_SET_PDEATHSIG), and a shard whose parent is
    already gone exits now. Set in the shard itself, early, not in a preexec_fn: the parent may
    run threads (torch's), where a preexec_fn can deadlock."""
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return
    if str(os.getppid()) != str(parent):
        os._exit(128 + signal.SIGTERM)


class _Terminated(BaseException):
    """SIGTERM while the shards run: reap them, then end as SIGTERM would have."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def begin_shard(index, count, db):
    """In a shard child: tune into `db` (starting from a copy of the database the warmup merges
    into, BASE_ENV) and prepare only this shard's share."""
    global _SHARD
    die_with_parent(os.environ.get(PARENT_ENV))
    base = os.environ.get(BASE_ENV) or None
    flaggems_tune.shard_session(db, base)
    _SHARD = (index, count)


# A shard's share: each (op, dtype) loop of FlagGems' in blocks of BLOCK consecutive inputs, the
# loop's first block on shard g mod N for the g-th loop met (every shard meets the loops in the
# same order) and its next blocks on the shards after it. A shard that tunes any key of a
# loop's kernel first compiles every config of it (on the H200 30-190 s for one dtype of
# FlagGems' mm), so a short loop (core level: a few shapes) stays on one shard and the loops
# spread over the shards, while a long one (comprehensive level) still spreads over them all.
BLOCK = 8
_LOOPS = {}  # (op, dtype) -> the order this process met it in


def owns(ordinal, loop=None):
    """Whether this process prepares the case of that loop with this ordinal (its position in
    the loop); outside a shard, every case. Without a loop, ordinal mod N."""
    if _SHARD is None:
        return True
    index, count = _SHARD
    if loop is None:
        return ordinal % count == index
    first = _LOOPS.setdefault(loop, len(_LOOPS))
    return (first + ordinal // BLOCK) % count == index


def in_shard():
    return _SHARD is not None


def _without(argv, flag):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(flag + "="):
            out.append(a)
    return out


def _spawn(i, n, argv, backend, device, wdir, base_db):
    db = os.path.join(wdir, "shard-%d.db" % i)
    env = dict(os.environ)
    for k in _UNSET + (BASE_ENV,):
        env.pop(k, None)
    env[PARENT_ENV] = str(os.getpid())
    if base_db:
        env[BASE_ENV] = base_db
    pin = _lib.child_env(backend, device)
    env.update(pin)
    log = open(os.path.join(wdir, "shard-%d.log" % i), "w")
    # Pinned to its one device, the shard sees it as its device 0; unpinned it uses the index.
    # The caller's devices go, however spelled (--gpus is --devices' alias).
    rest = argv
    for flag in ("--parallel-warmup", "--devices", "--gpus"):
        rest = _without(rest, flag)
    cmd = [sys.executable, "-m", "caliber"] + rest + [
        "--devices", "0" if pin else str(device), SHARD_FLAG, "%d/%d" % (i, n), CACHE_FLAG, db]
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return p, db


def run(n, argv, backend, devices, run_dir, merge_into, base_db=None, out=None, err=None):
    """Starts the N shards of `argv` (the run's own command, without the program name), each
    from a copy of `base_db` when given, waits for them (SIGINT/SIGTERM end and reap them
    first), merges their databases into `merge_into` and returns the result (also in
    <run_dir>/warmup/result.json)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if len(devices) < n:
        raise flaggems_tune.TuneError(
            "--parallel-warmup (PARALLEL_WARMUP_GPUS): '%d' exceeds the %d device(s) selected "
            "with --devices" % (n, len(devices)))
    wdir = os.path.join(run_dir, "warmup")
    os.makedirs(wdir, exist_ok=True)
    t0 = time.monotonic()
    # SIGTERM (caliber's interrupt, or the kernel's when the caliber process that started this
    # interpreter died) would end this process at once and leave the shards running.
    try:
        old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: signals are not ours to take
        old_term = None
    shards = []
    failed = []
    try:
        for i in range(n):
            shards.append(_spawn(i, n, argv, backend, devices[i], wdir, base_db))
        for i, (p, _) in enumerate(shards):
            if p.wait() != 0:
                failed.append("shard %d (device %s): exit %d, see %s" % (
                    i, devices[i], p.returncode, os.path.join(wdir, "shard-%d.log" % i)))
    except BaseException as e:
        for p, _ in shards:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p, _ in shards:
            p.wait()
        if isinstance(e, _Terminated):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    merge = flaggems_tune.merge_shard_dbs([db for _, db in shards], merge_into)
    result = {"shards": n, "failed_shards": len(failed), "failures": failed,
              "wall_s": round(time.monotonic() - t0, 3), "merged_into": merge_into, **merge}
    result["warning"] = flaggems_tune.warmup_warning(merge)
    with open(os.path.join(wdir, "result.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    for line in failed:
        print("parallel warmup: note: %s" % line, file=out)
    print("parallel warmup: %d shards, %d keys, %d disagreements, %.1f s; merged into %s" % (
        n, merge["keys"], merge["disagreements"], result["wall_s"], merge_into), file=out)
    if result["warning"]:
        print(result["warning"], file=err)
    out.flush()
    return result
