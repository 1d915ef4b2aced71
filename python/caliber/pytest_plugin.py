"""A pytest fixture in the style of pytest-benchmark's `benchmark`, on caliber's timers.

Enable it with `-p caliber.pytest_plugin` or `pytest_plugins = ["caliber.pytest_plugin"]` in a
conftest.py. Then:

    def test_mm(caliber_bench):
        out = caliber_bench(torch.mm, a, b)          # times torch.mm(a, b), returns its result
        assert caliber_bench.measurement.converged

`caliber_bench.options` (a dict of caliber.measure keywords: l2, clock, timer, backend, ...)
applies to the calls after it is set. At the end pytest prints one line per measurement;
`--caliber-json FILE` also writes them as JSON.
"""

import json

import pytest

from .bench import CaliberError, measure

_results = []


class CaliberBench:
    def __init__(self, node_id):
        self.node_id = node_id
        self.options = {}
        self.measurement = None

    def __call__(self, fn, *args, **kwargs):
        m = measure(lambda: fn(*args, **kwargs), name=self.node_id, **self.options)
        self.measurement = m
        _results.append((self.node_id, m))
        if not m.ok:
            raise CaliberError("caliber_bench: %s" % m.error)
        return fn(*args, **kwargs)

    def pedantic(self, fn, args=(), kwargs=None, **options):
        saved = self.options
        self.options = dict(saved, **options)
        try:
            return self(fn, *args, **(kwargs or {}))
        finally:
            self.options = saved


@pytest.fixture
def caliber_bench(request):
    return CaliberBench(request.node.nodeid)


def pytest_addoption(parser):
    parser.addoption("--caliber-json", default=None,
                     help="write every caliber_bench measurement to this JSON file")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _results:
        return
    tr = terminalreporter
    tr.section("caliber_bench")
    tr.write_line("%-56s %12s %8s %7s %s" % ("test", "latency_ms", "timer", "noise", "markers"))
    for node, m in _results:
        tr.write_line("%-56s %12.5f %8s %6.2f%% %s" % (node[-56:], m.latency_ms, m.timer,
                                                     100 * m.noise, " ".join(m.markers)))
    path = config.getoption("--caliber-json")
    if path:
        with open(path, "w") as f:
            json.dump([{"test": n, "latency_ms": m.latency_ms, "timer": m.timer,
                        "markers": m.markers, "samples_ms": m.samples_ms, "noise": m.noise,
                        "converged": m.converged, "stop_reason": m.stop_reason,
                        "regime": m.regime, "backend": m.backend} for n, m in _results], f,
                      indent=1)
