"""A pytest fixture in the style of pytest-benchmark's `benchmark`, on caliber's timers.

Installed with pip, the package registers this plugin through the `pytest11` entry point, so
pytest finds it with no `-p` and no conftest.py. From a PYTHONPATH checkout, enable it with
`-p caliber.pytest_plugin` or `pytest_plugins = ["caliber.pytest_plugin"]` in a conftest.py. Then:

    def test_mm(caliber_bench):
        out = caliber_bench(torch.mm, a, b)          # times torch.mm(a, b), returns its result
        assert caliber_bench.measurement.converged

`caliber_bench.options` (a dict of caliber.measure keywords: l2, clock, timer, backend, ...)
applies to the calls after it is set. At the end pytest prints one line per measurement;
`--caliber-json FILE` also writes them as JSON.

State: the measurements live on the pytest config (its stash), never in a module global, so two
sessions in one process (pytester) do not see each other's. Under pytest-xdist each worker sends
its measurements to the controller in its workeroutput, and the controller prints and writes
them all once.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from .bench import CaliberError, Measurement, measure

Row = Dict[str, Any]
_ROWS = pytest.StashKey[List[Row]]()
_WORKER_KEY = "caliber_bench_rows"


def _row(node_id: str, m: Measurement) -> Row:
    return {"test": node_id, "latency_ms": m.latency_ms, "timer": m.timer,
            "markers": list(m.markers), "samples_ms": list(m.samples_ms), "noise": m.noise,
            "converged": m.converged, "stop_reason": m.stop_reason, "regime": m.regime,
            "backend": m.backend}


def rows(config: pytest.Config) -> List[Row]:
    """The measurements this session holds (a worker's own, or on the controller everyone's)."""
    return config.stash.setdefault(_ROWS, [])


class CaliberBench:
    """The `caliber_bench` fixture's object: call it like the function it times."""

    def __init__(self, node_id: str, sink: Optional[List[Row]] = None) -> None:
        self.node_id = node_id
        self.options: Dict[str, Any] = {}
        self.measurement: Optional[Measurement] = None
        self._sink = sink if sink is not None else []

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        m = measure(lambda: fn(*args, **kwargs), name=self.node_id, **self.options)
        self.measurement = m
        self._sink.append(_row(self.node_id, m))
        if not m.ok:
            raise CaliberError("caliber_bench: %s" % m.error)
        return fn(*args, **kwargs)

    def pedantic(self, fn: Callable[..., Any], args: Tuple[Any, ...] = (),
                 kwargs: Optional[Dict[str, Any]] = None, **options: Any) -> Any:
        saved = self.options
        self.options = dict(saved, **options)
        try:
            return self(fn, *args, **(kwargs or {}))
        finally:
            self.options = saved


@pytest.fixture
def caliber_bench(request: pytest.FixtureRequest) -> CaliberBench:
    return CaliberBench(request.node.nodeid, rows(request.config))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--caliber-json", default=None,
                     help="write every caliber_bench measurement to this JSON file")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On an xdist worker: hand this worker's measurements to the controller."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out[_WORKER_KEY] = json.dumps(rows(session.config))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: a worker finished; keep what it measured."""
    out = getattr(node, "workeroutput", None) or {}
    if _WORKER_KEY in out:
        rows(node.config).extend(json.loads(out[_WORKER_KEY]))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    if getattr(config, "workeroutput", None) is not None:
        return  # a worker: the controller prints
    results = rows(config)
    if not results:
        return
    tr = terminalreporter
    tr.section("caliber_bench")
    tr.write_line("%-56s %12s %8s %7s %s" % ("test", "latency_ms", "timer", "noise", "markers"))
    for r in results:
        tr.write_line("%-56s %12.5f %8s %6.2f%% %s" % (r["test"][-56:], r["latency_ms"],
                                                     r["timer"], 100 * r["noise"],
                                                     " ".join(r["markers"])))
    path = config.getoption("--caliber-json")
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
