"""Triton's autotuner under caliber's tune cache (docs/python.md, "Autotuning and the tune cache").

Triton's @triton.autotune object (triton.runtime.autotuner.Autotuner) keeps its choice per call
key in `.cache` ({key: Config}) and benchmarks its `.configs` on the first call of a key it has
not seen. caliber's tuner (src/tune, through the C ABI) decides per case whether that sweep runs
or a config is given; this module is the Python half:

- `find(obj)` recognizes an autotuner by its attributes (`configs`, `cache`, `keys`), so triton is
  never imported here and a test can stand in for it;
- `config_str(cfg)` spells a Triton config as caliber's name=value pairs;
- `Prepared(tuner, seed)` is a context around the provider's prepare: with a seed, the first key
  the autotuner looks up gets that config (Triton does not sweep); without one, the sweep of the
  first key runs now (an older choice of this process for that key is dropped) and `result()`
  reports what it tried and chose.
"""

from __future__ import annotations

import math
import time
from typing import Any, Dict, List, Literal, Optional, Tuple


def find(obj: Any) -> Any:
    """`obj` when it looks like a Triton autotuner (configs, a dict cache, keys), else None.
    `best_config` is not required: Triton sets it only after the first call."""
    if obj is None:
        return None
    try:
        configs = getattr(obj, "configs", None)
        cache = getattr(obj, "cache", None)
        keys = getattr(obj, "keys", None)
    except Exception:  # an object whose attribute access raises is not one
        return None
    if isinstance(configs, (list, tuple)) and configs and isinstance(cache, dict) and \
            keys is not None and not callable(keys):
        return obj
    return None


def _value(name: str, v: Any) -> Tuple[str, int]:
    """(name, int) for caliber's config: ints as they are, bools 0/1, anything else folded into
    the name (name:value=1) so different values stay different."""
    if isinstance(v, bool):
        return name, int(v)
    if isinstance(v, int):
        return name, v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return name, int(v)
    text = str(v).replace(",", "_").replace("=", "_")
    return "%s:%s" % (name, text), 1


def config_str(cfg: Any) -> str:
    """A Triton Config (kwargs, num_warps, num_stages, num_ctas, maxnreg) as
    "BLOCK=1024,num_warps=4,num_stages=3,num_ctas=1"; a plain dict as its items."""
    if isinstance(cfg, dict):
        items = list(cfg.items())
    else:
        items = list((getattr(cfg, "kwargs", None) or {}).items())
        for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            v = getattr(cfg, name, None)
            if v is not None:
                items.append((name, v))
    return ",".join("%s=%d" % _value(str(k), v) for k, v in items)


def configs(tuner: Any) -> List[str]:
    """The autotuner's configs as caliber config strings, in its order (the first is the
    default), each once."""
    out = []
    for c in tuner.configs:
        s = config_str(c)
        if s and s not in out:
            out.append(s)
    return out


def kernel_version(tuner: Any) -> str:
    """The provider version in the cache key: a hash of the kernel's source where the autotuner
    wraps a @triton.jit function (its `src`), so an edited kernel is tuned anew; else "1"."""
    import hashlib
    fn = tuner
    try:
        for _ in range(8):
            fn = getattr(fn, "fn", None)
            if fn is None:
                break
            src = getattr(fn, "src", None)
            if isinstance(src, str) and src:
                return "src-" + hashlib.sha1(src.encode()).hexdigest()[:12]
    except Exception:  # an attribute that raises: no version from the source
        pass
    return "1"


_MISSING = object()


class _Cache(dict):
    """Stands for the autotuner's cache during one prepare: the first key looked up is seeded
    (seed given) or swept afresh (no seed); later lookups are plain."""

    def __init__(self, base: Dict[Any, Any], seed: Any) -> None:
        super().__init__(base)
        self.seed = seed
        self.first: Optional[object] = None
        self.looked_up = False

    def __contains__(self, key: object) -> bool:
        if not self.looked_up:
            self.looked_up = True
            self.first = key
            if self.seed is not None:
                dict.__setitem__(self, key, self.seed)
                return True
            dict.pop(self, key, None)
            return False
        return dict.__contains__(self, key)


class Prepared:
    """with Prepared(tuner, seed): provider's prepare. seed: a config of tuner.configs, or None
    to let the autotuner sweep."""

    def __init__(self, tuner: Any, seed: Any = None) -> None:
        self.tuner = tuner
        self.seed = seed
        self.trials: List[Any] = []
        self.sweep_s = 0.0

    def __enter__(self) -> "Prepared":
        t = self.tuner
        self.base = t.cache
        self.spy = _Cache(self.base, self.seed)
        t.cache = self.spy
        self.saved = getattr(t, "__dict__", {}).get("_bench", _MISSING)
        self.counting = False
        bench: Any = getattr(t, "_bench", None)
        if callable(bench) and self.seed is None:
            self.counting = True

            def counted(*args: Any, **kwargs: Any) -> Any:
                cfg = kwargs.get("config")
                t0 = time.perf_counter()
                try:
                    r = bench(*args, **kwargs)
                except Exception as e:
                    self.sweep_s += time.perf_counter() - t0
                    self.trials.append({"config": config_str(cfg), "ms": 0.0, "rejected": True,
                                        "error": "%s: %s" % (type(e).__name__, e)})
                    raise
                self.sweep_s += time.perf_counter() - t0
                ms = r[0] if isinstance(r, (list, tuple)) and r else r
                try:
                    ms = float(ms)
                except (TypeError, ValueError):
                    ms = float("inf")
                trial = {"config": config_str(cfg), "ms": ms if math.isfinite(ms) else 0.0,
                         "rejected": not (math.isfinite(ms) and ms > 0)}
                if trial["rejected"]:
                    trial["error"] = "triton: no valid time (out of resources or a compile error)"
                self.trials.append(trial)
                return r
            t._bench = counted
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        t = self.tuner
        # The autotuner keeps its own dict object: the choices made here go into it.
        self.base.clear()
        self.base.update(dict(self.spy))
        t.cache = self.base
        if self.counting:
            if self.saved is _MISSING:
                del t._bench
            else:
                t._bench = self.saved
        return False

    def result(self) -> Dict[str, Any]:
        """The prepare reply's "tune" object (caliber_c.h): the config the autotuner will launch
        for the key it looked up, what its sweep tried, and that key."""
        key = self.spy.first
        if not self.spy.looked_up:
            return {"config": None, "trials": [], "sweep_s": 0.0,
                    "detail": "the autotuner was not called in prepare"}
        chosen = self.base.get(key)
        detail = "key %r" % (key,)
        if not self.trials:
            detail += "; chosen without a sweep here (Triton's own disk cache, or pruning " \
                      "left one config)"
        return {"config": config_str(chosen) if chosen is not None else None,
                "trials": self.trials, "sweep_s": self.sweep_s, "detail": detail}


def seed_for(tuner: Any, text: str) -> Any:
    """The autotuner's config spelled `text`, or None: one of its configs, or one it chose in
    this process (a pruning hook may make configs of its own)."""
    for c in list(tuner.configs) + list(tuner.cache.values()):
        if config_str(c) == text:
            return c
    return None
