"""A stand-in for FlagGems' LibTuner and LibEntry (flag_gems/utils/libentry.py), for CI without
Triton or SQLAlchemy.

Shaped like the real one where caliber touches it:
- the database URL is FLAGGEMS_DB_URL, read once at import (`libcache`); unset, a file under
  ~/.flaggems/config_cache/;
- best configs live in SQLite tables named `<kernel>_<hash>-<md5 of the key column names>`, one
  row per key with columns key_0..key_N (the primary key) and the config's fields (its kwargs,
  num_warps, num_stages, num_ctas); benchmark results in `<kernel>_<cache key>_benchmark_v2-...`
  with the config fields in the key and p50/p20/p80, as FlagGems' SQLPersistantModel lays them
  out (plain sqlite3 here instead of SQLAlchemy);
- `LibTuner.run` looks the key up in `self.cache` (a ConfigCache: `in`, `[]`, `[]=`, no delete),
  sweeps a miss through `policy(bench, configs, args, kwargs)`, stores the winner (insert only:
  an existing row is never replaced), sets `benchmark_success_count`, `bench_time`,
  `best_config`, then launches `self.fn.run(..., **config)`;
- `LibEntry` caches the launch per dispatch key in `kernel_cache` / `_cpu_cache`, so LibTuner.run
  runs once per key and process; `clear_libentry_dispatch_cache(entry)` empties both.

Planted behaviour for the tests, from the environment at call time:
- STANDIN_TUNE_BEST=N (default 64): the BLOCK whose benchmark is fastest (ms = 0.01 * (1 +
  |log2(BLOCK/N)|)); STANDIN_TUNE_BEST_DEV<D>=N overrides it where CALIBER_CPU_VISIBLE_DEVICES
  (or CUDA_VISIBLE_DEVICES) is D, so shards on two devices can disagree;
- STANDIN_TUNE_FAIL=BLOCK=N: launching that config raises (as an out-of-resources launch does),
  while its benchmark still reads a time (the cache then holds a config that cannot launch);
- STANDIN_TUNE_LOG=FILE: one line per benchmarked config and per launch ("bench K CFG",
  "launch K CFG").
"""

import hashlib
import inspect
import math
import os
import sqlite3
import threading
import time
from itertools import starmap
from pathlib import Path

import triton  # the stub's Autotuner, which FlagGems' LibTuner subclasses

FLAGGEMS_DB_URL = os.getenv("FLAGGEMS_DB_URL", None)
BENCHMARK_CACHE_SCHEMA_VERSION = 2
major_version, minor_version = 3, 6


class Config:
    """triton.Config's shape: kwargs plus launch options."""

    def __init__(self, kwargs, num_warps=4, num_stages=2, num_ctas=1, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.pre_hook = pre_hook

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": self.num_ctas}

    def __str__(self):
        return ", ".join("%s: %s" % kv for kv in self.all_kwargs().items())

    def __eq__(self, other):
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs()

    def __hash__(self):
        return hash(tuple(sorted(self.all_kwargs().items())))


_LAUNCH_FIELDS = ("num_warps", "num_stages", "num_ctas")


def _log(line):
    path = os.environ.get("STANDIN_TUNE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def _sql_type(v):
    if isinstance(v, bool) or isinstance(v, int):
        return "BIGINT"
    if isinstance(v, float):
        return "FLOAT"
    return "VARCHAR"


def _norm(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float, str)):
        return v
    return str(v)


class SQLPersistantModel:
    """FlagGems' table layout over sqlite3 (one connection per call, so forks and threads are
    safe)."""

    def __init__(self, db_url):
        if not db_url.startswith("sqlite:///"):
            raise ValueError("stand-in LibTuner: only sqlite URLs, not %r" % db_url)
        self.path = db_url[len("sqlite:///"):]
        self.lock = threading.Lock()

    @staticmethod
    def table(name, key_names):
        return "%s-%s" % (name, hashlib.md5("".join(key_names).encode()).hexdigest())

    def _connect(self):
        return sqlite3.connect(self.path, timeout=30)

    def _ensure(self, con, table, keys, values):
        cols = ", ".join('"%s" %s' % (k, _sql_type(v)) for k, v in {**keys, **values}.items())
        pk = ", ".join('"%s"' % k for k in keys)
        con.execute('CREATE TABLE IF NOT EXISTS "%s" (%s, PRIMARY KEY (%s))' % (table, cols, pk))

    def get_row(self, name, key_dict):
        table = self.table(name, key_dict.keys())
        with self.lock, self._connect() as con:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                               (table,)).fetchone():
                return None
            where = " AND ".join('"%s"=?' % k for k in key_dict)
            cur = con.execute('SELECT * FROM "%s" WHERE %s' % (table, where),
                              tuple(key_dict.values()))
            row = cur.fetchone()
            if row is None:
                return None
            return {d[0]: v for d, v in zip(cur.description, row) if d[0] not in key_dict}

    def put_row(self, name, key_dict, values):
        """Inserts the row; an existing key is left as it is (FlagGems' put_config)."""
        table = self.table(name, key_dict.keys())
        with self.lock, self._connect() as con:
            self._ensure(con, table, key_dict, values)
            names = list(key_dict) + list(values)
            con.execute('INSERT OR IGNORE INTO "%s" (%s) VALUES (%s)' % (
                table, ", ".join('"%s"' % n for n in names), ", ".join("?" * len(names))),
                tuple(key_dict.values()) + tuple(values.values()))

    @staticmethod
    def key_dict(keys):
        return {"key_%d" % i: _norm(v) for i, v in enumerate(keys)}

    @staticmethod
    def config_dict(config):
        return {k: _norm(v) for k, v in config.all_kwargs().items()
                if isinstance(v, (int, float, str, bool))}

    def get_config(self, name, keys):
        row = self.get_row(name, self.key_dict(keys))
        if row is None:
            return None
        launch = {k: row[k] for k in _LAUNCH_FIELDS if k in row}
        return Config({k: v for k, v in row.items() if k not in _LAUNCH_FIELDS}, **launch)

    def put_config(self, name, keys, config):
        self.put_row(name, self.key_dict(keys), self.config_dict(config))

    def get_benchmark(self, name, keys, config):
        row = self.get_row(name, {**self.key_dict(keys), **self.config_dict(config)})
        return None if row is None else (row["p50"], row["p20"], row["p80"])

    def put_benchmark(self, name, keys, config, bench):
        p50, p20, p80 = bench
        self.put_row(name, {**self.key_dict(keys), **self.config_dict(config)},
                     {"p50": p50, "p20": p20, "p80": p80})


class ConfigCache:
    """Key -> best config, backed by one table. No __delitem__, as FlagGems' has none."""

    def __init__(self, table_name, model):
        self.table_name = table_name
        self.model = model

    def __contains__(self, key):
        return self.get(key) is not None

    def __getitem__(self, key):
        ret = self.get(key)
        if ret is None:
            raise KeyError("Key %s not found in ConfigCache." % (key,))
        return ret

    def __setitem__(self, key, config):
        self.set(key, config)

    def get(self, key):
        return self.model.get_config(self.table_name, key)

    def set(self, key, config):
        return self.model.put_config(self.table_name, key, config)


class BenchmarkCache:
    def __init__(self, table_name, model, key):
        self.table_name = table_name
        self.model = model
        self.key = key

    def get(self, config):
        return self.model.get_benchmark(self.table_name, self.key, config)

    def __setitem__(self, config, bench):
        self.model.put_benchmark(self.table_name, self.key, config, bench)


class LibCache:
    _instance = None

    def __new__(cls, *args, **kwargs):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __init__(self, db_url=None):
        if db_url is None:  # FlagGems creates its default folder (config_cache_dir), no other
            cache_dir = Path(os.path.expanduser("~")) / ".flaggems" / "config_cache"
            cache_dir.mkdir(parents=True, exist_ok=True)
            name = "TunedConfig_standin_triton_%d_%d.db" % (major_version, minor_version)
            db_url = "sqlite:///%s" % (cache_dir / name)
        self.db_url = db_url
        self.model = SQLPersistantModel(db_url)
        self.config_cache_pool = {}

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.config_cache_pool:
                self.config_cache_pool[key] = ConfigCache(key, self.model)
            return self.config_cache_pool[key]
        table, bkey = key
        return BenchmarkCache(table, self.model, bkey)


libcache = LibCache(FLAGGEMS_DB_URL)


class JITFunction:
    """triton.jit's shape for a plain Python kernel: `run(*args, **meta)` launches it, compiling
    it first for a config it has not seen (STANDIN_COMPILE_S seconds, default 0; a line
    `compile NAME BLOCK=B ahead|inline START END` in STANDIN_TUNE_LOG). `run(..., warmup=True)`
    compiles and does not launch, through triton's AsyncCompileMode when one is active, as
    Triton's JIT does."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.arg_names = list(inspect.signature(fn).parameters)
        self.cache_key = hashlib.sha1(inspect.getsource(fn).encode()).hexdigest()
        self.compiled = set()

    @staticmethod
    def _config_of(meta):
        return tuple(sorted((k, v) for k, v in meta.items() if k == "BLOCK"))

    def _compile(self, key, how):
        t0 = time.time()
        time.sleep(float(os.environ.get("STANDIN_COMPILE_S") or 0))
        self.compiled.add(key)
        _log("compile %s %s %s %.4f %.4f" % (self.__name__, "BLOCK=%s" % dict(key).get("BLOCK"),
                                             how, t0, time.time()))

    def run(self, *args, warmup=False, **meta):
        key = self._config_of(meta)
        if key not in self.compiled:
            import triton
            mode = getattr(getattr(triton, "runtime", None), "_async_compile", None)
            active = mode.active_mode.get() if mode is not None else None
            if warmup and active is not None:
                active.submit((self.cache_key, key), lambda: self._compile(key, "ahead"))
            else:
                self._compile(key, "ahead" if warmup else "inline")
        if warmup:
            return None
        return self.fn(*args, **{k: v for k, v in meta.items()
                                 if k not in _LAUNCH_FIELDS})


def jit(fn):
    return JITFunction(fn)


def _device():
    return os.environ.get("CALIBER_CPU_VISIBLE_DEVICES") or os.environ.get(
        "CUDA_VISIBLE_DEVICES") or "0"


def _planted_ms(config):
    best = float(os.environ.get("STANDIN_TUNE_BEST_DEV%s" % _device()) or
                 os.environ.get("STANDIN_TUNE_BEST") or 64)
    block = float(config.kwargs.get("BLOCK", 1))
    return 0.01 * (1.0 + abs(math.log2(block / best)))


def _planted_failure(config):
    spec = os.environ.get("STANDIN_TUNE_FAIL", "")
    if "=" not in spec:
        return False
    name, value = spec.split("=", 1)
    return str(config.all_kwargs().get(name)) == value


def _dtypes(values):
    """The dtypes of the tensor arguments, in order (FlagGems' _infer_tensor_dtypes)."""
    return tuple(str(v.dtype) for v in values
                 if hasattr(v, "dtype") and hasattr(v, "shape") and not isinstance(v, type))


class LibTuner(triton.runtime.Autotuner):
    """FlagGems' LibTuner.run, line for line where caliber depends on it (a subclass of Triton's
    Autotuner that overrides run, as FlagGems' is)."""

    _dispatch_table = {}
    _strategy_table = {}

    def __init__(self, fn, arg_names, configs, key, strategy="default"):
        self.fn = fn
        self.base_fn = fn
        self.arg_names = arg_names
        self.configs = list(configs)
        self.keys = key
        self.__name__ = fn.__name__
        if isinstance(strategy, str) or strategy is None:
            strategy = [strategy] * len(key)
        self.strategy = [LibTuner._strategy_table[s] if not callable(s) else s for s in strategy]
        self.configs_hash = hashlib.md5(",".join(map(str, self.configs)).encode()).hexdigest()
        self.kernel_hash = hashlib.md5(
            ("%s%s" % (fn.cache_key, self.configs_hash)).encode()).hexdigest()
        self.config_table_name = "%s_%s" % (self.__name__, self.kernel_hash)
        self.benchmark_table_name = "%s_%s_benchmark_v%d" % (
            self.__name__, fn.cache_key, BENCHMARK_CACHE_SCHEMA_VERSION)
        self.cache = libcache[self.config_table_name]
        self.best_config = None
        self.bench_time = 0.0
        self.benchmark_success_count = 0
        self.benchmark_cache_hit_count = 0

    def get_key(self, args):
        key = tuple(starmap(lambda i, k: self.strategy[i](args[k]), enumerate(self.keys)))
        return key + _dtypes(args.values())  # FlagGems appends the tensors' dtypes

    def get_benchmark_key(self, args):
        return tuple(args[k] for k in self.keys if k in args) + _dtypes(args.values())

    def prune_configs(self, kwargs):
        return list(self.configs)

    def _bench(self, *args, config, **meta):
        key = self.fn._config_of(config.all_kwargs())
        if key not in self.fn.compiled:  # Triton's do_bench launches it once first: compiled
            self.fn._compile(key, "inline")
        ms = _planted_ms(config)
        _log("bench %s %s" % (self.__name__, config))
        return (ms, ms * 0.9, ms * 1.1)

    def policy(self, bench_fn, configs, args, kwargs):
        timings = {config: bench_fn(config) for config in configs}
        best = min(timings, key=timings.get)
        return best, timings

    def run(self, *args, **kwargs):
        self.benchmark_success_count = 0
        self.benchmark_cache_hit_count = 0
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}
            _args = {k: v for k, v in all_args.items() if k in self.arg_names}
            config_key = self.get_key(_args)
            if config_key not in self.cache:
                cache = libcache[self.benchmark_table_name, self.get_benchmark_key(_args)]
                bench_start = time.time()

                def bench(config):
                    ret = cache.get(config)
                    if ret is None:
                        ret = self._bench(*args, config=config, **kwargs)
                        if all(math.isfinite(float(v)) for v in ret):
                            self.benchmark_success_count += 1
                        cache[config] = tuple(ret)
                    else:
                        self.benchmark_cache_hit_count += 1
                    return list(ret)

                best_config, timings = self.policy(bench, self.prune_configs(kwargs), args,
                                                   kwargs)
                self.bench_time = time.time() - bench_start
                self.cache[config_key] = best_config
                config = self.cache[config_key]
                self.configs_timings = timings
            else:
                config = self.cache[config_key]
            for original in self.configs:
                if original.all_kwargs() == config.all_kwargs():
                    config = original
                    break
        else:
            config = self.configs[0]
        self.best_config = config
        _log("launch %s %s" % (self.__name__, config))
        if _planted_failure(config):
            raise RuntimeError("out of resources: the stand-in refuses to launch %s" % config)
        ret = self.fn.run(*args, **kwargs, **config.kwargs)
        self.nargs = None
        return ret

    @staticmethod
    def register_strategy(name):
        def decorator(strategy):
            LibTuner._strategy_table[name] = strategy
            return strategy
        return decorator


@LibTuner.register_strategy(None)
@LibTuner.register_strategy("default")
def default_strategy(key):
    return key


@LibTuner.register_strategy("log")
def log2_strategy(key):
    return 2 ** math.ceil(math.log2(key))


def libtuner(configs, key, strategy="default", **_ignored):
    def decorator(fn):
        return LibTuner(fn, fn.arg_names, configs, key, strategy=strategy)
    return decorator


class LibEntry:
    """Caches the tuned launch per dispatch key, as FlagGems' LibEntry does: LibTuner.run runs on
    a key's first call only."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        self.kernel_cache = tuple(dict() for _ in range(1))
        self._cpu_cache = dict()
        self.lock = threading.Lock()

    def run(self, *args, **kwargs):
        # FlagGems' dispatch key: a tensor by its dtype (and alignment), a scalar by its value.
        entry_key = tuple((type(a).__name__, str(getattr(a, "dtype", "")),
                           a if isinstance(a, (int, float, str)) else None) for a in args)
        cache = self.kernel_cache[0]
        if entry_key not in cache:
            with self.lock:
                ret = self.fn.run(*args, **kwargs)
                tuner = self.fn
                while not isinstance(tuner, LibTuner) and hasattr(tuner, "fn"):
                    tuner = tuner.fn
                cache[entry_key] = tuner.best_config if isinstance(tuner, LibTuner) else None
                return ret
        config = cache[entry_key]
        jit_fn = self.fn
        while not isinstance(jit_fn, JITFunction):
            jit_fn = jit_fn.fn
        return jit_fn.run(*args, **kwargs, **(config.kwargs if config else {}))


def libentry():
    def decorator(fn):
        return LibEntry(fn)
    return decorator


def clear_libentry_dispatch_cache(entry):
    for cache in entry.kernel_cache:
        cache.clear()
    entry._cpu_cache.clear()
