"""caliber.bench and caliber.measure: time one Python callable with caliber's timers."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import CaliberError


def _words(option: str) -> List[str]:
    """The words the library allows for a measurement option (its knob table, through the C
    ABI): timer, l2, clock, sample_method, return_mode."""
    return list(_lib.settings()["words"][option])


def _check_word(option: str, value: str) -> None:
    allowed = _words(option)
    if value not in allowed:
        raise ValueError("caliber: %s '%s'; allowed: %s" % (option, value, ", ".join(allowed)))


@dataclass
class Measurement:
    """What one measurement found (docs/python.md). Latencies in milliseconds per launch."""

    ok: bool
    latency_ms: float
    timer: str  # "graph" or "direct": what produced the number
    regime: str  # "sustained" or "burst"
    stop_reason: str
    converged: bool
    markers: List[str] = field(default_factory=list)
    samples_ms: List[float] = field(default_factory=list)
    quantiles_ms: List[float] = field(default_factory=list)
    noise: float = 0.0  # relative standard error of the median reached
    l2_method: str = ""
    launches_per_sample: int = 1
    wall_s: float = 0.0  # the cost of this measurement, warmup and capture included
    note: str = ""
    error: str = ""
    failure: str = "ok"
    backend: str = ""
    device: str = ""
    clock: Optional[Dict[str, Any]] = None
    # "kernel-trace" where the device's own activity records timed it, else the events' method;
    # with the trace, event_latency_ms is the events' figure of the same samples (a cross-check),
    # kernel_count the activities of one call and kernel_sum_ms their summed durations.
    sample_method: str = ""
    event_latency_ms: float = 0.0
    kernel_count: int = 0
    kernel_sum_ms: float = 0.0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


# Callables being timed, by id, for the one launch trampoline (a ctypes callback per call would
# be rebuilt every time; one per process is enough).
_targets: Dict[int, Callable[[], Any]] = {}
_errors: Dict[int, BaseException] = {}
_next = [1]
_lock = threading.Lock()


def _trampoline(target: int, provider: int, code_ptr: Any, msg: Any, cap: int) -> int:
    try:
        _targets[target]()
        return 0
    except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
        _errors[target] = e
        return launch_failed(e, "%s: %s" % (type(e).__name__, e), code_ptr, msg, cap)


def launch_failed(e: BaseException, text: str, code_ptr: Any, msg: Any, cap: int) -> int:
    """A launch callback's answer to the library when the callable raised (caliber_c.h): the
    message into msg, and CALIBER_C_NATIVE_ERROR (1) with the runtime's error code in code_ptr
    where the exception carries one, else CALIBER_C_RAISED (2), an error of Python itself."""
    _lib.write(msg, cap, text)
    code = _native_code(e)
    if code:
        code_ptr[0] = code
        return 1
    return 2


_LAUNCH = _lib.LAUNCH_FN(_trampoline)


def _native_code(e: BaseException) -> int:
    try:
        from . import _torch
        return _torch.native_code(e)
    except Exception:
        return 0


_devices: Dict[Tuple[str, int], Tuple[int, Dict[str, Any]]] = {}


def _device(backend: str, index: int) -> Tuple[int, Dict[str, Any]]:
    key = (backend, index)
    if key not in _devices:
        if backend != "cpu":
            _install_torch_hooks(backend)
        buf = _lib.buffer(1 << 16)
        handle = _lib.lib().caliber_c_device_open(backend.encode(), index, buf, len(buf))
        info = json.loads(_lib.text(buf))
        if handle == 0:
            raise CaliberError("caliber: backend %s, device %d: %s" %
                               (backend, index, info.get("error")))
        _devices[key] = (handle, info)
    return _devices[key]


def _install_torch_hooks(backend: str) -> None:
    from . import _torch
    if _torch.available(backend):
        _torch.install_hooks(backend)


def _backend_words() -> str:
    """What `backend` allows, in words: the package's device map's backends and cpu."""
    from . import _torch
    return "None (ZL_BACKEND, else auto), 'auto' or a backend's name (%s)" % ", ".join(
        list(_torch._MODULES) + ["cpu"])


def _resolve_backend(backend: Optional[str]) -> str:
    if backend is not None and not isinstance(backend, str):
        raise TypeError("caliber.measure: backend=%r (%s) is not allowed; allowed: %s"
                        % (backend, type(backend).__name__, _backend_words()))
    if backend is None:
        backend = os.environ.get("ZL_BACKEND") or "auto"
    if backend == "auto":
        from . import _torch
        backend = _torch.auto_backend()
    return backend


def _resolve_sample_method(value: Optional[str]) -> str:
    """The sample method asked for: the argument, else CALIBER_SAMPLE_METHOD, else auto."""
    if value is None:
        value = os.environ.get("CALIBER_SAMPLE_METHOD") or _lib.settings()["defaults"][
            "sample_method"]
    _check_word("sample_method", value)
    return value


def _resolve_repeat(value: Optional[int]) -> int:
    """The direct timer's repeat: the argument, else ZL_DIRECT_REPEAT (the run's knob of that name),
    else 1."""
    if value is not None:
        return value
    text = os.environ.get("ZL_DIRECT_REPEAT")
    if not text:
        return 1
    try:
        n = int(text.strip())
    except ValueError:
        n = 0
    if not 1 <= n <= 1000:
        raise ValueError("ZL_DIRECT_REPEAT: '%s' is not allowed; allowed: an integer from 1 to 1000"
                         % text[:200])
    return n


def _check_timer_capability(timer: str, info: Dict[str, Any]) -> None:
    """timer="graph" on a device whose backend reports no graph capture is refused, as the
    CLI's --timer graph is (plan::resolve_timer), rather than timed direct in silence."""
    caps = info.get("capabilities") or {}
    if timer == "graph" and not caps.get("graph_capture", True):
        allowed = [w for w in _words("timer") if w != "graph"]
        raise ValueError("caliber.measure: timer 'graph': backend '%s' has no graph capture; "
                         "allowed on it: %s" % (info.get("backend", "?"), ", ".join(allowed)))


# Stays long: a dozen typed keywords one per line, then one call; splitting would scatter them.
def measure(fn: Callable[[], Any], *, backend: Optional[str] = None,
            device: Optional[int] = None, timer: str = "auto", l2: str = "cold",
            clock: str = "sustained", return_mode: str = "median",
            quantiles: Optional[Sequence[float]] = None, repeat: Optional[int] = None,
            warmup_s: Optional[float] = None, timeout_s: Optional[float] = None,
            min_samples: Optional[int] = None, min_time_s: Optional[float] = None,
            max_noise: Optional[float] = None, rng: bool = False, name: Optional[str] = None,
            grad_to_none: Optional[Iterable[Any]] = None, keep_samples: int = 200,
            per_launch: bool = True, settle_window_s: Optional[float] = None,
            sample_method: Optional[str] = None) -> Measurement:
    """Times fn() (which only enqueues work, on torch's current stream on CUDA) and returns a
    Measurement. backend: "auto" (the backend of the device torch sees: cuda, rocm, musa or
    ascend; else cpu), a backend's name, or ZL_BACKEND. On CUDA, fn runs with torch's current
    stream set to caliber's; a graph capture that fn refuses (a Python exception or a CUDA
    capture error, `.item()` included) falls back to the direct timer with
    BENCHMARK_DIRECT_NO_CUDAGRAPH. An exception fn raises outside any capture is raised here.
    per_launch=False makes the graph timer time a replay of K back-to-back launches divided by K
    (do_bench_cudagraph's method) instead of each launch between event nodes of its own
    (docs/python.md). sample_method: "auto" (the device's own
    activity records where it has them, else events), "trace" or "events", or
    CALIBER_SAMPLE_METHOD; while another activity subscriber (torch.profiler) is active the
    records cannot be had and the measurement is timed by events, marked
    SAMPLE_METHOD_EVENTS_NO_TRACE."""
    if not callable(fn):
        raise TypeError("caliber.measure: fn must be callable, got %r" % (fn,))
    _check_word("return_mode", return_mode)
    _check_word("timer", timer)
    sample_method = _resolve_sample_method(sample_method)
    repeat = _resolve_repeat(repeat)
    backend = _resolve_backend(backend)
    from . import _torch
    torch_dev = backend != "cpu" and _torch.available(backend)
    if device is None:
        device = _torch.device_api(backend).current_device() if torch_dev else 0
    handle, info = _device(backend, device)
    _check_timer_capability(timer, info)
    torch_dev = torch_dev and not info.get("host", False)
    opts = {"timer": timer, "l2": l2, "clock": clock, "return_mode": return_mode,
            "repeat": repeat, "rng": bool(rng), "op": name or getattr(fn, "__name__", "fn"),
            "max_kept_samples": keep_samples, "graph_per_launch": bool(per_launch),
            "sample_method": sample_method}
    if quantiles is not None:
        opts["quantiles"] = [float(q) for q in quantiles]
    for key, value in (("warmup_s", warmup_s), ("timeout_s", timeout_s),
                       ("min_samples", min_samples), ("min_time_s", min_time_s),
                       ("max_noise", max_noise), ("settle_window_s", settle_window_s)):
        if value is not None:
            opts[key] = value
    call = fn
    if grad_to_none is not None:
        grads = list(grad_to_none)

        def call() -> None:
            for x in grads:
                x.grad = None
            fn()
    opts_json = _lib.dumps(opts, "caliber.measure").encode()
    with _lock:
        target = _next[0]
        _next[0] += 1
    _targets[target] = call
    buf = _lib.buffer()
    try:
        if torch_dev:
            from . import _torch
            with _torch.rng_guard(backend), _torch.on_stream(info["stream"], device, backend):
                status = _lib.lib().caliber_c_measure(handle, opts_json, _LAUNCH,
                                                      target, buf, len(buf))
        else:
            status = _lib.lib().caliber_c_measure(handle, opts_json, _LAUNCH,
                                                  target, buf, len(buf))
    finally:
        _targets.pop(target, None)
        err = _errors.pop(target, None)
    reply = json.loads(_lib.text(buf))
    if status == 2:
        raise ValueError("caliber: " + reply.get("error", "bad options"))
    if status == 1:
        if err is not None:
            raise err
        raise CaliberError("caliber: " + reply.get("error", "measurement failed"))
    return Measurement(ok=reply["ok"], latency_ms=reply["latency_ms"], timer=reply["timer"],
                       regime=reply["regime"], stop_reason=reply["stop_reason"],
                       converged=reply["converged"], markers=reply["markers"],
                       samples_ms=reply["samples_ms"], quantiles_ms=reply["quantiles_ms"],
                       noise=reply["noise"], l2_method=reply["l2_method"],
                       launches_per_sample=reply["launches_per_sample"], wall_s=reply["wall_s"],
                       note=reply["note"], error=reply["error"], failure=reply["failure"],
                       backend=info.get("backend", backend), device=info.get("name", ""),
                       clock=reply.get("clock"), sample_method=reply.get("sample_method", ""),
                       event_latency_ms=reply.get("event_latency_ms", 0.0),
                       kernel_count=reply.get("kernel_count", 0),
                       kernel_sum_ms=reply.get("kernel_sum_ms", 0.0), raw=reply)


def bench(fn: Callable[[], Any], warmup: Optional[float] = None, rep: Optional[float] = None,
          grad_to_none: Optional[Iterable[Any]] = None,
          quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean",
          l2: str = "warm", per_launch: bool = False,
          **kw: Any) -> Union[float, List[float]]:
    """A drop-in for triton.testing.do_bench / do_bench_cudagraph on caliber's timers.

    Same arguments and return values: milliseconds per call of fn; with `quantiles`, the list
    of those quantiles of the samples (one value alone when one was asked); return_mode "min",
    "max", "mean" (default, as Triton's), "median", or "all" (every sample). `warmup` and `rep`
    (ms, Triton's budgets) set caliber's warmup and sampling timeout; caliber's stopping rule
    (noise target, minimum samples) decides when to stop inside them. Further keywords go to
    caliber.measure (timer, clock, backend, ...). A failed measurement raises CaliberError.

    The default regime is do_bench_cudagraph's: warm L2 and, on the graph timer, a replay of K
    launches back to back divided by K (l2="warm", per_launch=False); caliber.measure and the
    CLI default to l2="cold" and per-launch event nodes (docs/python.md)."""
    if warmup is not None:
        kw.setdefault("warmup_s", warmup / 1000.0)
    if rep is not None:
        kw.setdefault("timeout_s", max(rep / 1000.0, 1e-3))
        # A short rep (Triton's budget) shortens the minimum time too: it must fit in the timeout
        # (the CLI's rule, which measure applies).
        default_min = _lib.settings()["defaults"]["min_time_s"]
        if "min_time_s" not in kw and kw["timeout_s"] <= default_min:
            kw["min_time_s"] = kw["timeout_s"] / 2
    if return_mode == "all":
        kw.setdefault("keep_samples", 100000)
    m = measure(fn, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode,
                l2=l2, per_launch=per_launch, **kw)
    if not m.ok:
        raise CaliberError("caliber.bench: %s" % m.error)
    if quantiles is not None:
        q = list(m.quantiles_ms)
        return q[0] if len(q) == 1 else q
    if return_mode == "all":
        return list(m.samples_ms)
    return m.latency_ms
