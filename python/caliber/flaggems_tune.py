"""caliber's autotune modes on FlagGems' own LibTuner cache (docs/flaggems.md, "Tuning").

FlagGems tunes its Triton kernels with `LibTuner` (flag_gems/utils/libentry.py): a key missing
from its SQLite database (FLAGGEMS_DB_URL, read once when flag_gems is imported) is swept and the
winner stored. That database is not caliber's tune.db, so caliber maps its modes onto it:

| --tune | FLAGGEMS_DB_URL | a key the database lacks |
| --- | --- | --- |
| live | unchanged: the shared database (FlagGems' own default when unset) | swept, stored |
| record | sqlite:///<run>/flaggems_tune.db (new) | swept, stored in the run |
| record + REPLAY_FROM | the same, holding REPLAY_FROM's rows first (a resumed record) | swept, stored in the run |
| replay | a copy of REPLAY_FROM's flaggems_tune.db in <run> | the first config, `replay-missing`, never swept |
| off | unchanged, never read or written | the first config (`default`) |

`LibTuner.run` is wrapped on the class (`install`): each call is one event of the case being
prepared (kernel, key, source, configs benchmarked, bench time, the config launched), which the
run reads with `take_case()` for the candidate's row. A config that fails at launch: in live and
record mode its row is deleted from the database (SQL DELETE: FlagGems' cache has no delete),
FlagGems' dispatch caches cleared (`clear_libentry_dispatch_cache`) and the key retuned without
it (`evicted` on the row); in replay mode nothing may change, so the row carries
`compile_tune_no_evict` and the case fails.

Parallel warmup (`merge_shard_dbs`): shards tune into databases of their own; their config tables
are merged with sqlite3 and the keys whose winners differ between shards are counted.

Everything here works on any object shaped like FlagGems' LibTuner (`configs`, `keys`, `cache`
with `table_name`, `get_key`, `run`, `best_config`, `benchmark_success_count`, `bench_time`),
so CI runs it against the stand-in in tests/python/flaggems_standin.
"""

import gc
import hashlib
import os
import shutil
import sqlite3
import sys
import time

DB_FILE = "flaggems_tune.db"
MODES = ("off", "live", "record", "replay")
NO_EVICT = "compile_tune_no_evict"
SWEPT_BY = "libtuner"
PLAIN_SWEPT_BY = "triton"  # a kernel under plain @triton.autotune, not FlagGems' LibTuner


class TuneError(ValueError):
    """Bad input for the mapping (exit 2): the message names the knob and the value."""


def replay_db(replay_from):
    """The database a replay reads: REPLAY_FROM's flaggems_tune.db (a run directory), or the
    file itself. TuneError when there is none."""
    if os.path.isdir(replay_from):
        path = os.path.join(replay_from, DB_FILE)
    else:
        path = replay_from
    if not os.path.isfile(path):
        what = "holds no %s" % DB_FILE if os.path.exists(replay_from) else "does not exist"
        raise TuneError("--replay-from (REPLAY_FROM): '%s' %s; allowed: the run directory of a "
                        "--flaggems run made with --tune record (a live run tunes into LibTuner's "
                        "own database, not the run's), or that file" % (replay_from, what))
    try:
        with sqlite3.connect("file:%s?mode=ro" % path, uri=True) as con:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise TuneError("--replay-from (REPLAY_FROM): '%s' is not a SQLite database (%s)"
                        % (path, e))
    return path


def check(mode, replay_from):
    """Everything about the tune knobs that can refuse a run, before anything is written."""
    if mode not in MODES:
        raise TuneError("--tune: '%s' is not a mode; allowed: %s" % (mode, ", ".join(MODES)))
    if mode == "replay":
        if not replay_from:
            raise TuneError("--tune: 'replay' needs --replay-from (REPLAY_FROM)")
        replay_db(replay_from)
    elif replay_from:
        if mode != "record":
            raise TuneError("--replay-from (REPLAY_FROM): given with --tune %s; allowed with "
                            "--tune replay (replay its configs) or --tune record (resume its "
                            "record)" % mode)
        replay_db(replay_from)


def sqlite_path(url):
    """The file behind a sqlite:/// URL, else None (':memory:' and other databases)."""
    if url and url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        return path if path and path != ":memory:" else None
    return None


class Session:
    """One run's mapping: the mode, the database and what each case's LibTuner calls did."""

    def __init__(self, mode, db_url=None, note=""):
        self.mode = mode
        self.db_url = db_url
        self.note = note
        self.events = []
        # a provider's prepare call under way (Hooks.preparing): plain Triton autotuners are
        # observed only then, so that the timers' launches pay nothing for it
        self.preparing = False
        self.totals = {"keys_tuned": 0, "cache_hits": 0, "replay_missing": 0, "evicted": 0,
                       "benchmarked": 0, "sweep_s": 0.0}

    def record(self, event):
        self.events.append(event)
        t = self.totals
        if event.get("swept_by") == PLAIN_SWEPT_BY:  # a plain Triton autotuner: its own totals
            if event.get("source") == "tuned":
                t["triton_keys_tuned"] = t.get("triton_keys_tuned", 0) + 1
                t["triton_sweep_s"] = t.get("triton_sweep_s", 0.0) + event.get("sweep_s", 0.0)
            return
        t["benchmarked"] += event.get("tried", 0)
        t["sweep_s"] += event.get("sweep_s", 0.0)
        src = event.get("source")
        if src == "tuned":
            t["keys_tuned"] += 1
        elif src in ("cache", "replay"):
            t["cache_hits"] += 1
        elif src == "replay-missing":
            t["replay_missing"] += 1
        t["evicted"] += 1 if event.get("evicted") else 0
        if event.get("compile_ahead"):  # only in runs that compile ahead (the footer's totals)
            t["compile_ahead_s"] = round(t.get("compile_ahead_s", 0.0) +
                                         event["compile_ahead"]["seconds"], 3)


_SESSION = None


def session():
    return _SESSION


def shard_session(db_path, base_db=None, environ=None):
    """A parallel-warmup shard: tunes into `db_path` (a copy of `base_db`, the shared database
    in live mode, so a shard sweeps only what that lacks)."""
    global _SESSION
    env = os.environ if environ is None else environ
    if base_db and os.path.isfile(base_db):
        shutil.copyfile(base_db, db_path)
    env["FLAGGEMS_DB_URL"] = "sqlite:///" + os.path.abspath(db_path)
    _SESSION = Session("record", env["FLAGGEMS_DB_URL"], "parallel-warmup shard")
    return _SESSION


def end_session():
    global _SESSION
    _SESSION = None


# ---- the LibTuner wrapper ------------------------------------------------------------------


def config_str(cfg):
    """A LibTuner config as caliber's name=value pairs (its kwargs, then the launch options)."""
    if cfg is None:
        return None
    items = list(cfg.all_kwargs().items()) if hasattr(cfg, "all_kwargs") else \
        list((getattr(cfg, "kwargs", None) or {}).items())
    out = []
    for k, v in items:
        if v is None:
            continue
        if isinstance(v, bool):
            v = int(v)
        out.append("%s=%s" % (k, v))
    return ",".join(out)


class _Seeded:
    """Stands for LibTuner.cache during one call: `key` maps to `config`; nothing is written and
    nothing else is looked up."""

    def __init__(self, base, key, config):
        self.base = base
        self.key = key
        self.config = config
        self.table_name = getattr(base, "table_name", "")

    def __contains__(self, key):
        return key == self.key

    def __getitem__(self, key):
        if key == self.key:
            return self.config
        raise KeyError(key)

    def get(self, key):
        return self.config if key == self.key else None

    def __setitem__(self, key, value):
        pass

    def set(self, key, value):
        pass


def _config_key(tuner, args, kwargs):
    nargs = dict(zip(tuner.arg_names, args))
    all_args = {**nargs, **kwargs}
    return tuner.get_key({k: v for k, v in all_args.items() if k in tuner.arg_names})


def _key_text(key):
    return ",".join(str(k) for k in key)


def _libentry_module(tuner):
    for cls in type(tuner).__mro__:
        mod = sys.modules.get(cls.__module__)
        if mod is not None and hasattr(mod, "libcache"):
            return mod
    return None


def _key_columns(key):
    """FlagGems' column layout of a config key: key_0..key_N, or a hash and blob past 64."""
    if len(key) > 64:
        text = "_".join(str(k) for k in key)
        return {"key_hash": hashlib.sha256(text.encode()).hexdigest()[:64]}
    out = {}
    for i, v in enumerate(key):
        out["key_%d" % i] = int(v) if isinstance(v, bool) else \
            v if isinstance(v, (int, float, str)) else str(v)
    return out


def evict(tuner, key):
    """Deletes `key`'s best config from the tuner's table (SQL DELETE) and clears FlagGems'
    dispatch caches that hold the tuner. Returns None, or why it could not."""
    mod = _libentry_module(tuner)
    url = getattr(getattr(mod, "libcache", None), "db_url", None)
    path = sqlite_path(url)
    if path is None:
        return "the LibTuner database %r is not a SQLite file caliber can edit" % (url,)
    cols = _key_columns(key)
    table = "%s-%s" % (tuner.cache.table_name, hashlib.md5("".join(
        ["key_%d" % i for i in range(len(key))] if "key_hash" not in cols
        else ["key_hash", "key_blob"]).encode()).hexdigest())
    where = " AND ".join('"%s"=?' % c for c in cols)
    try:
        with sqlite3.connect(path, timeout=30) as con:
            con.execute('DELETE FROM "%s" WHERE %s' % (table.replace('"', '""'), where),
                        tuple(cols.values()))
    except sqlite3.Error as e:
        return "SQL DELETE on %s failed: %s" % (path, e)
    clear = getattr(mod, "clear_libentry_dispatch_cache", None)
    if clear is not None:
        for ref in gc.get_referrers(tuner):
            if hasattr(ref, "kernel_cache") and hasattr(ref, "_cpu_cache"):
                clear(ref)
    return None


def _call_seeded(orig, tuner, key, config, args, kwargs):
    base = tuner.cache
    tuner.cache = _Seeded(base, key, config)
    try:
        return orig(tuner, *args, **kwargs)
    finally:
        tuner.cache = base


def _retune_without(orig, tuner, failed, args, kwargs):
    """The sweep again, the failed config left out of the space for this call."""
    saved = tuner.configs
    tuner.configs = [c for c in saved if config_str(c) != config_str(failed)]
    try:
        return orig(tuner, *args, **kwargs)
    finally:
        tuner.configs = saved


_COMPILE_THREADS = 0  # --tune-compile-threads: configs compiled ahead of a sweep, N at a time


def _async_compile_mode():
    """Triton's AsyncCompileMode (Triton 3.4 and later), else None."""
    try:
        import triton
    except ImportError:
        return None
    mode = getattr(triton, "AsyncCompileMode", None)
    if mode is None:
        try:
            from triton.runtime._async_compile import AsyncCompileMode as mode
        except ImportError:
            return None
    return mode


def compile_ahead(tuner, args, kwargs, threads):
    """Compiles the configs LibTuner is about to sweep for this key, `threads` at a time, into
    the kernel's own cache (Triton's asynchronous compile: each config's kernel launched with
    warmup=True, which compiles and does not run it). The sweep that follows times the same
    configs as without this, each already compiled (docs/flaggems.md, "Compiling ahead").
    Returns what it did for the row ({configs, threads, seconds[, note]}); a failure is a note
    and the sweep compiles as it goes."""
    out = {"configs": 0, "threads": threads, "seconds": 0.0}
    mode_cls = _async_compile_mode()
    fn = getattr(tuner, "fn", None)
    if mode_cls is None or not hasattr(fn, "run"):
        out["note"] = "not compiled ahead: %s" % (
            "this Triton has no AsyncCompileMode" if mode_cls is None else
            "the tuner's kernel has no run()")
        return out
    from concurrent.futures import ThreadPoolExecutor
    saved = getattr(tuner, "nargs", None)
    t0 = time.perf_counter()
    try:
        tuner.nargs = dict(zip(getattr(tuner, "arg_names", ()), args))  # what pruning reads
        prune = getattr(tuner, "prune_configs", None)
        configs = list(prune(kwargs) if prune else tuner.configs)
        with ThreadPoolExecutor(threads) as pool:
            try:
                mode = mode_cls(pool, ignore_errors=True)
            except TypeError:  # a Triton whose mode has no ignore_errors
                mode = mode_cls(pool)
            with mode:
                for config in configs:
                    meta = dict(kwargs)
                    meta.update(config.all_kwargs())
                    meta["warmup"] = True
                    fn.run(*args, **meta)
        out["configs"] = len(configs)
    except Exception as e:  # the sweep compiles what is missing, as without this
        out["note"] = "compiling ahead stopped (%s: %s); the sweep compiled the rest" % (
            type(e).__name__, str(e)[:200])
    finally:
        tuner.nargs = saved
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _run_tracked(orig, s, tuner, key, args, kwargs, event):
    """live, record and replay of a key the database holds: the original run, its sweep read
    back, and a config that fails at launch handled by the mode's rule."""
    hit = key in tuner.cache
    tuner.best_config = None
    if not hit and s.mode in ("live", "record") and _COMPILE_THREADS > 1:
        event["compile_ahead"] = compile_ahead(tuner, args, kwargs, _COMPILE_THREADS)
    t0 = time.perf_counter()
    try:
        ret = orig(tuner, *args, **kwargs)
    except Exception as e:
        failed = tuner.best_config
        if failed is None:  # the sweep itself raised: not a launch of a chosen config
            raise
        if s.mode == "replay":
            event.update(source="replay", config=config_str(failed),
                         markers=[NO_EVICT],
                         note="replayed config %s failed at launch (%s: %s) and cannot be "
                         "evicted under --tune replay" % (config_str(failed), type(e).__name__, e))
            s.record(event)
            raise
        why = evict(tuner, key)
        if why is not None:
            event.update(source="cache" if hit else "tuned", config=config_str(failed),
                         markers=[NO_EVICT], note="config %s failed at launch (%s); %s" % (
                             config_str(failed), e, why))
            s.record(event)
            raise
        event["evicted"] = config_str(failed)
        event["note"] = "config %s failed at launch (%s: %s): deleted from the LibTuner " \
            "database and the key retuned without it" % (config_str(failed), type(e).__name__, e)
        hit = False
        t0 = time.perf_counter()
        ret = _retune_without(orig, tuner, failed, args, kwargs)
    swept = not hit
    event.update(source=("replay" if s.mode == "replay" else "cache") if hit else "tuned",
                 tried=int(getattr(tuner, "benchmark_success_count", 0) or 0) if swept else 0,
                 sweep_s=float(getattr(tuner, "bench_time", 0.0) or 0.0) if swept else 0.0,
                 config=config_str(tuner.best_config))
    hits = int(getattr(tuner, "benchmark_cache_hit_count", 0) or 0) if swept else 0
    if hits:  # configs whose timing LibTuner took from its benchmark table instead of timing
        event["bench_cache_hits"] = hits
    if swept and not event["tried"]:
        event["sweep_s"] = min(event["sweep_s"], time.perf_counter() - t0)
    s.record(event)
    return ret


def _wrapped_run(orig):
    def run(self, *args, **kwargs):
        s = _SESSION
        configs = getattr(self, "configs", None) or []
        if s is None or len(configs) <= 1:
            return orig(self, *args, **kwargs)
        key = _config_key(self, args, kwargs)
        event = {"kernel": getattr(self, "__name__", type(self).__name__),
                 "key": _key_text(key), "tried": 0, "sweep_s": 0.0, "swept_by": SWEPT_BY}
        if s.mode == "off" or (s.mode == "replay" and key not in self.cache):
            first = configs[0]
            event.update(source="default" if s.mode == "off" else "replay-missing",
                         config=config_str(first))
            if s.mode == "replay":
                event["note"] = "key %s is not in the replayed LibTuner database: first " \
                    "config, not swept" % _key_text(key)
            s.record(event)
            return _call_seeded(orig, self, key, first, args, kwargs)
        return _run_tracked(orig, s, self, key, args, kwargs, event)
    run.__caliber_wrapped__ = orig
    return run


def _plain_key(tuner, args, kwargs):
    """Triton's own key of a plain autotuner: the key arguments' values, then the dtypes of the
    arguments that have one (Autotuner.run)."""
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [named[k] for k in getattr(tuner, "keys", []) if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def _wrapped_plain_run(orig, libtuner_cls):
    """Autotuner.run of Triton itself, for FlagGems' kernels under plain @triton.autotune (72 of
    its op files at ed2508b: the norms, softmax, ...). Observed only: Triton keeps their choices
    in the process (no database caliber could record or replay), so every mode sweeps them and
    the row says what was swept and chosen."""
    def run(self, *args, **kwargs):
        s = _SESSION
        if s is None or not s.preparing:  # every launch comes here: the timers' pay one test
            return orig(self, *args, **kwargs)
        configs = getattr(self, "configs", None) or []
        if len(configs) <= 1 or (libtuner_cls is not None and isinstance(self, libtuner_cls)):
            return orig(self, *args, **kwargs)
        cache = getattr(self, "cache", None)
        key = _plain_key(self, args, kwargs)
        hit = isinstance(cache, dict) and key in cache
        before = getattr(self, "configs_timings", None)
        ret = orig(self, *args, **kwargs)
        timings = getattr(self, "configs_timings", None)
        swept = not hit and timings is not None and timings is not before
        event = {"kernel": getattr(getattr(self, "base_fn", None), "__name__", None) or
                 getattr(self, "__name__", type(self).__name__),
                 "key": _key_text(key), "swept_by": PLAIN_SWEPT_BY,
                 "source": "tuned" if swept else "cache",
                 "tried": len(timings) if swept else 0,
                 "sweep_s": float(getattr(self, "bench_time", 0.0) or 0.0) if swept else 0.0,
                 "config": config_str(getattr(self, "best_config", None))}
        if s.mode in ("off", "replay"):
            event["note"] = "%s: plain triton.autotune, %s in this process under --tune %s " \
                "(only LibTuner's keys are recorded and replayed)" % (
                    event["kernel"], "swept" if swept else "chosen", s.mode)
        s.record(event)
        return ret
    run.__caliber_wrapped__ = orig
    return run


def _plain_autotuner():
    """Triton's Autotuner class, or None (no Triton, or one without it)."""
    try:
        import triton
    except ImportError:
        return None
    rt = getattr(triton, "runtime", None)
    return getattr(getattr(rt, "autotuner", None), "Autotuner", None) or \
        getattr(rt, "Autotuner", None)


def install(libentry_module):
    """Wraps LibTuner.run of FlagGems' libentry module (once; subclasses inherit it), and Triton's
    own Autotuner.run for FlagGems' kernels under plain @triton.autotune."""
    tuner_cls = getattr(libentry_module, "LibTuner", None)
    plain = _plain_autotuner()
    if plain is not None:
        prun = plain.__dict__.get("run")
        if prun is not None and not hasattr(prun, "__caliber_wrapped__"):
            plain.run = _wrapped_plain_run(prun, tuner_cls)
    if tuner_cls is None:
        return False
    run = tuner_cls.__dict__.get("run")
    if run is None or hasattr(run, "__caliber_wrapped__"):
        return run is not None
    tuner_cls.run = _wrapped_run(run)
    return True


def take_case():
    """What LibTuner did since the last call, as the candidate's row reports it: {"config",
    "tune": {source, tried, bench_cache_hits, sweep_s, key, note, evicted, swept_by, kernels},
    "tune_markers"};
    None when no tuned kernel ran. Several kernels: the first one's config and key, the counts
    and times summed, the source `tuned` when any swept (`replay-missing` when any missed)."""
    s = _SESSION
    if s is None or not s.events:
        return None
    events, s.events = s.events, []
    first = events[0]
    sources = [e.get("source") for e in events]
    source = next((x for x in ("replay-missing", "tuned") if x in sources), first.get("source"))
    by = []
    for e in events:
        if e.get("swept_by", SWEPT_BY) not in by:
            by.append(e.get("swept_by", SWEPT_BY))
    tune = {"source": source, "tried": sum(e.get("tried", 0) for e in events),
            "rejected": 0, "sweep_s": sum(e.get("sweep_s", 0.0) for e in events),
            "key": first.get("key"), "swept_by": ",".join(by),
            "bench_cache_hits": sum(e.get("bench_cache_hits", 0) for e in events),
            "kernels": [{k: e[k] for k in ("kernel", "key", "source", "tried", "sweep_s",
                                          "config", "swept_by") if k in e} for e in events]}
    ahead = [e["compile_ahead"] for e in events if e.get("compile_ahead")]
    if ahead:  # the seconds before the sweeps (sweep_s is the sweeps' own)
        tune["compile_ahead"] = {"configs": sum(a["configs"] for a in ahead),
                                 "threads": ahead[0]["threads"],
                                 "seconds": round(sum(a["seconds"] for a in ahead), 3)}
    notes = [e["note"] for e in events if e.get("note")]
    notes += [a["note"] for a in ahead if a.get("note")]
    if notes:
        tune["note"] = "; ".join(notes)
    evicted = [e["evicted"] for e in events if e.get("evicted")]
    if evicted:
        tune["evicted"] = evicted[0]
    markers = sorted({m for e in events for m in e.get("markers", [])})
    return {"config": first.get("config"), "tune": tune, "tune_markers": markers}


# ---- parallel warmup: merging the shards' databases ----------------------------------------


def _tables(con):
    return {name: sql for name, sql in con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")}


def _columns(con, table):
    return [r[1] for r in con.execute('PRAGMA table_info("%s")' % table.replace('"', '""'))]


def _is_key_column(name):
    return name in ("key_hash", "key_blob") or (name.startswith("key_") and name[4:].isdigit())


def _is_config_table(cols):
    """A LibTuner config table (key -> winner), not a benchmark table (p50/p20/p80 per config)."""
    return not {"p50", "p20", "p80"} & set(cols)


def count_keys(db):
    """The tuned keys (config rows) LibTuner's database `db` holds; 0 when there is no file."""
    if not os.path.isfile(db):
        return 0
    with sqlite3.connect("file:%s?mode=ro" % db, uri=True) as con:
        return sum(con.execute('SELECT count(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0]
                   for t in _tables(con) if _is_config_table(_columns(con, t)))


def dump_winners(db, path):
    """Writes the winners of LibTuner's database `db` (its config tables, key -> chosen config)
    as SQL text to `path`, replaced whole; returns the rows written. The benchmark tables (every
    config's p50/p20/p80, 28097 rows for mm's first 191 keys at comprehensive level, 10 MB of
    text) stay out: a lookup, a resumed sweep and a replay read the winners alone. Tables and
    rows come sorted, so the text of a sweep resumed later differs by the keys it added: a form
    git keeps well between sessions (docs/flaggems.md)."""
    rows = 0
    with sqlite3.connect("file:%s?mode=ro" % db, uri=True) as con, \
            open(path + ".part", "w") as f:
        tables = _tables(con)
        for table in sorted(tables):
            cols = _columns(con, table)
            if not _is_config_table(cols):
                continue
            f.write("%s;\n" % tables[table])
            names = ['"%s"' % c.replace('"', '""') for c in cols]
            q = table.replace('"', '""')
            for (values,) in con.execute('SELECT %s FROM "%s" ORDER BY %s' % (
                    " || ',' || ".join("quote(%s)" % n for n in names), q, ", ".join(names))):
                f.write('INSERT INTO "%s" VALUES(%s);\n' % (q, values))
                rows += 1
    os.replace(path + ".part", path)
    return rows


def load_sql(path, db):
    """Builds LibTuner's database `db` from dump_winners' text at `path` (one transaction)."""
    with open(path) as f:
        text = f.read()
    with sqlite3.connect(db) as con:
        con.executescript("BEGIN;\n%s\nCOMMIT;" % text)


def merge_shard_dbs(shard_dbs, into):
    """Merges every shard database's tables into `into` (created when missing; rows it already
    has are kept). A config table's key tuned by several shards keeps the first shard's winner
    (in shard order) and counts as a disagreement when another shard chose differently.
    Benchmark tables (p50/p20/p80) are merged as they are. Shards are only read.
    Returns {"keys", "disagreements", "disagreeing_keys", "warnings"}."""
    winners = {}  # (table, key values) -> (config values, shard index)
    out = {"keys": 0, "disagreements": 0, "disagreeing_keys": [], "warnings": []}
    disagreeing = set()
    with sqlite3.connect(into, timeout=30) as dst:
        have = _tables(dst)
        for idx, db in enumerate(shard_dbs):
            if not os.path.isfile(db):
                continue  # a shard with nothing to tune writes nothing
            try:
                src = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
                tables = _tables(src)
            except sqlite3.DatabaseError as e:
                out["warnings"].append("shard %d: %s is unreadable (%s)" % (idx, db, e))
                continue
            with src:
                for table, sql in tables.items():
                    _merge_table(src, dst, table, sql, have, idx, winners, disagreeing)
            src.close()
    out["keys"] = len(winners)
    out["disagreements"] = len(disagreeing)
    out["disagreeing_keys"] = sorted("%s[%s]" % (t, ",".join(map(str, k)))
                                     for t, k in disagreeing)
    return out


def _merge_table(src, dst, table, sql, have, idx, winners, disagreeing):
    q = table.replace('"', '""')
    if table not in have:
        dst.execute(sql)
        have[table] = sql
    cols = _columns(src, table)
    keys = [i for i, c in enumerate(cols) if _is_key_column(c)]
    is_config = _is_config_table(cols)
    placeholders = ", ".join("?" * len(cols))
    names = ", ".join('"%s"' % c.replace('"', '""') for c in cols)
    for row in src.execute('SELECT %s FROM "%s"' % (names, q)):
        if is_config and keys:
            k = (table, tuple(row[i] for i in keys))
            value = tuple(v for i, v in enumerate(row) if i not in keys)
            prev = winners.get(k)
            if prev is None:
                winners[k] = (value, idx)
            elif prev[0] != value and prev[1] != idx:
                disagreeing.add(k)
        dst.execute('INSERT OR IGNORE INTO "%s" (%s) VALUES (%s)' % (q, names, placeholders),
                    row)


def warmup_warning(merge):
    """The WARNING a run prints when shards disagreed (empty when none did)."""
    if not merge.get("disagreements"):
        return ""
    return ("WARNING: parallel warmup: %d of %d tuned keys have winners that differ between "
            "shards (LibTuner; the first shard's winner is kept): %s" % (
                merge["disagreements"], merge["keys"], ", ".join(merge["disagreeing_keys"][:5])))


# ---- the hooks of a FlagGems run (python/caliber/flaggems.py calls them) -------------------


class Hooks:
    """--tune, REPLAY_FROM and --parallel-warmup for `caliber run --flaggems`, at the points of
    the session where each must happen:

    - environment(knobs, env): before flag_gems is imported. Refusals (exit 2, nothing written);
      FLAGGEMS_DB_URL for the mode. The run directory does not exist yet, so record and replay
      point the URL through a symbolic link (a fresh temporary name) that `opened` aims at the
      run directory: SQLAlchemy opens the file on first use, which comes after that.
    - installed(flag_gems): LibTuner.run and Triton's own Autotuner.run wrapped.
    - opened(run_dir): the link aimed, the replayed database copied in, and the parallel warmup
      (shards, merge, warning) before the first case.
    - preparing(on): a provider's prepare call starts or ends (plain Triton autotuners are
      observed inside it only).
    - provider(case, role): what LibTuner (and plain Triton autotuners) did in the provider's
      prepare call ({"config", "tune", "tune_markers"} for its row), or None.
    - in_shard() / owns(ordinal, loop): a warmup shard prepares only its share and measures
      nothing.
    """

    def __init__(self):
        self.knobs = {}
        self.link = None
        self.staging = None
        self.libentry = None
        self.warmup = None

    def _refuse(self, message):
        try:
            from .flaggems import FlagGemsError
        except ImportError:  # pragma: no cover - flaggems is what calls us
            raise TuneError(message)
        raise FlagGemsError(message)

    def environment(self, knobs, env):
        self.knobs = dict(knobs)
        global _COMPILE_THREADS
        _COMPILE_THREADS = int(knobs.get("tune_compile_threads") or 0)
        shard = knobs.get("tune_shard")
        if shard:
            from . import flaggems_warmup
            idx, n = (int(x) for x in str(shard).split("/"))
            flaggems_warmup.begin_shard(idx, n, knobs.get("shard_cache"))
            return
        mode = knobs.get("tune") or "live"
        replay_from = knobs.get("replay_from") or None
        try:
            check(mode, replay_from)
        except TuneError as e:
            self._refuse(str(e))
        n = int(knobs.get("parallel_warmup") or 0)
        devices = knobs.get("devices") or [0]
        if n > len(devices):
            self._refuse("--parallel-warmup (PARALLEL_WARMUP_GPUS): '%d' exceeds the %d device(s) "
                         "selected with --devices (%s)" % (n, len(devices),
                                                          ",".join(map(str, devices))))
        global _SESSION
        if mode in ("record", "replay"):
            from . import _staging
            # The link points at a staging folder until the run directory exists, so that a
            # FlagGems that opened its database at import would still find a folder.
            base = _staging.mkdtemp("caliber-flaggems-tune-")
            self.staging = os.path.join(base, "staging")
            os.mkdir(self.staging)
            self.link = os.path.join(base, "run")
            os.symlink(self.staging, self.link)
            import atexit
            atexit.register(self._unlink)  # however the run ends
            env["FLAGGEMS_DB_URL"] = "sqlite:///" + os.path.join(self.link, DB_FILE)
            if mode == "replay":
                note = "a copy of %s" % os.path.abspath(replay_db(replay_from))
            elif replay_from:
                note = "the run's own LibTuner database, resumed from %s" % os.path.abspath(
                    replay_db(replay_from))
            else:
                note = "the run's own LibTuner database"
            _SESSION = Session(mode, env["FLAGGEMS_DB_URL"], note)
        else:
            _SESSION = Session(mode, env.get("FLAGGEMS_DB_URL"),
                               "no LibTuner database: every tuned kernel launches its first config"
                               if mode == "off" else
                               "the shared LibTuner database (%s)" % (
                                   env.get("FLAGGEMS_DB_URL") or "FlagGems' default"))
        self._identity(mode, replay_from)

    @staticmethod
    def _identity(mode, replay_from):
        """run_identity.json's "flaggems_tune": the mode and where LibTuner's configs came from."""
        import json
        from . import _lib
        info = {"mode": mode, "database": _SESSION.note,
                "file": DB_FILE if mode in ("record", "replay") else None,
                "replay_from": os.path.abspath(replay_from) if replay_from else None}
        try:
            _lib.lib().caliber_c_identity_extra(b"flaggems_tune", json.dumps(info).encode())
        except Exception:  # no library in a unit test of the mapping alone: nothing to record
            pass

    def installed(self, flag_gems):
        try:
            import importlib
            self.libentry = importlib.import_module(flag_gems.__name__ + ".utils.libentry")
        except ImportError:
            self.libentry = None  # a FlagGems without LibTuner: nothing is tuned through it
            return
        install(self.libentry)

    def opened(self, run_dir):
        s = _SESSION
        if s is None or self.in_shard():
            return
        run_dir = os.path.abspath(run_dir)
        if self.link:
            self._aim(run_dir)
            # The row's database is the run's file, whatever path SQLAlchemy opened it by.
            s.db_url = "sqlite:///" + os.path.join(run_dir, DB_FILE)
        if s.mode == "replay":
            shutil.copyfile(replay_db(self.knobs.get("replay_from")),
                            os.path.join(run_dir, DB_FILE))
        elif s.mode == "record" and self.knobs.get("replay_from"):
            self._resume(run_dir)
        n = int(self.knobs.get("parallel_warmup") or 0)
        if n > 1 and s.mode in ("live", "record"):
            self._warmup(n, run_dir)

    def _aim(self, run_dir):
        """The link to the run directory (atomically), with whatever reached the staging folder
        first, and SQLAlchemy's pooled connections dropped so that the next one opens the run's
        file."""
        for name in os.listdir(self.staging):
            shutil.copy2(os.path.join(self.staging, name), os.path.join(run_dir, name))
        tmp = self.link + ".new"
        os.symlink(run_dir, tmp)
        os.replace(tmp, self.link)
        engine = getattr(getattr(getattr(self.libentry, "libcache", None), "model", None),
                         "engine", None)
        if engine is not None and hasattr(engine, "dispose"):
            engine.dispose()

    def _resume(self, run_dir):
        """A resumed record: the earlier record's rows merged into the run's database (what
        FlagGems made of it at import stays: a copy over it could drop a table SQLAlchemy
        already knows), so that LibTuner sweeps only the keys that record lacks."""
        src = replay_db(self.knobs.get("replay_from"))
        merged = merge_shard_dbs([src], os.path.join(run_dir, DB_FILE))
        for w in merged["warnings"]:
            print("caliber: note: --tune record --replay-from: %s" % w, file=sys.stderr)
        print("caliber: resuming the LibTuner record of %s: %d keys already tuned" % (
            os.path.abspath(src), merged["keys"]), file=sys.stderr)

    def _unlink(self):
        shutil.rmtree(os.path.dirname(self.link), ignore_errors=True)

    def _warmup(self, n, run_dir):
        from . import flaggems_warmup
        s = _SESSION
        if s.mode == "record":
            into = os.path.join(run_dir, DB_FILE)
        else:
            into = sqlite_path(getattr(getattr(self.libentry, "libcache", None), "db_url", None))
            if into is None:
                print("parallel warmup: note: the shared LibTuner database is not a SQLite "
                      "file; no warmup, each key is tuned when measured", file=sys.stderr)
                return
        devices = self.knobs.get("devices") or [0]
        self.warmup = flaggems_warmup.run(n, sys.argv[1:], self.knobs.get("backend") or "auto",
                                          devices, run_dir, into, base_db=into)

    def provider(self, case, role):
        return take_case()

    @staticmethod
    def preparing(on):
        """A provider's prepare call starts (on) or ends: plain Triton autotuners are observed
        only inside it."""
        if _SESSION is not None:
            _SESSION.preparing = bool(on)

    def finished(self, run):
        """The footer's tune object: LibTuner's totals over the run (keys swept, configs
        benchmarked, sweep time, keys taken from the database, replay misses, evictions), the
        database, and the parallel warmup's result."""
        s = _SESSION
        if s is None:
            return
        t = s.totals
        request = {"call": "tune", "mode": s.mode, "keys_tuned": t["keys_tuned"],
                   "sweep_s": round(t["sweep_s"], 6), "cache": sqlite_path(s.db_url) or s.db_url,
                   "cache_hits": t["cache_hits"], "replay_missing": t["replay_missing"],
                   "evicted": t["evicted"], "benchmarked": t["benchmarked"],
                   "swept_by": SWEPT_BY}
        if "compile_ahead_s" in t:
            request["compile_ahead_s"] = t["compile_ahead_s"]
        if "triton_keys_tuned" in t:  # kernels under plain @triton.autotune (not LibTuner's)
            request["triton_keys_tuned"] = t["triton_keys_tuned"]
            request["triton_sweep_s"] = round(t["triton_sweep_s"], 6)
        if self.warmup is not None:
            request["warmup"] = self.warmup
        try:
            run.call(request)
        except Exception as e:  # the rows are written; a footer without totals is still a footer
            print("caliber: note: LibTuner totals not recorded: %s" % e, file=sys.stderr)

    @staticmethod
    def in_shard():
        from . import flaggems_warmup
        return flaggems_warmup.in_shard()

    @staticmethod
    def owns(ordinal, loop=None):
        from . import flaggems_warmup
        return flaggems_warmup.owns(ordinal, loop)
