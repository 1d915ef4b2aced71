"""The stand-in's conftest, shaped like FlagGems' benchmark/conftest.py: its options, the Config
bound at configure time, the op id of each test and the JSON record."""

import json
import os

import pytest

import flag_gems

from . import consts

vendor_name = flag_gems.vendor_name
Config = None
BUILTIN_MARKS = ("parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings")
TEST_RESULTS = {}
REPORT_FILE = "benchmark_result.json"


def update_result(op, data):
    if not Config.record_json:
        return
    TEST_RESULTS.setdefault(op, {}).setdefault("details", []).append(data)


def emit_record_logger(message):
    pass


class BenchConfig:
    def __init__(self):
        self.mode = consts.BenchMode.KERNEL
        self.bench_level = consts.BenchLevel.COMPREHENSIVE
        self.warm_up = consts.DEFAULT_WARMUP_TIME
        self.repetition = consts.DEFAULT_ITER_TIME
        self.record_json = False
        self.user_desired_dtypes = None
        self.shape_file = os.path.join(os.path.dirname(__file__), "core_shapes.yaml")
        self.query = False
        self.parallel = 0


def pytest_addoption(parser):
    parser.addoption("--mode", default="kernel", choices=[m.value for m in consts.BenchMode])
    parser.addoption("--level", default="comprehensive",
                     choices=[lv.value for lv in consts.BenchLevel])
    parser.addoption("--warmup", default=consts.DEFAULT_WARMUP_TIME)
    parser.addoption("--iter", default=consts.DEFAULT_ITER_TIME)
    parser.addoption("--dtypes", action="append", default=None)
    parser.addoption("--shape_file", default=os.path.join(os.path.dirname(__file__),
                                                          "core_shapes.yaml"))
    parser.addoption("--record", default="none", choices=["none", "log", "json"])
    parser.addoption("--output", default=REPORT_FILE)
    parser.addoption("--parallel", type=int, default=0)


def pytest_configure(config):
    global Config, REPORT_FILE
    Config = BenchConfig()
    Config.mode = consts.BenchMode(config.getoption("--mode"))
    Config.bench_level = consts.BenchLevel(config.getoption("--level"))
    Config.warm_up = int(config.getoption("--warmup"))
    Config.repetition = int(config.getoption("--iter"))
    names = config.getoption("--dtypes")
    import torch
    Config.user_desired_dtypes = [getattr(torch, n) for n in names] if names else None
    Config.shape_file = config.getoption("--shape_file")
    Config.record_json = config.getoption("--record") == "json"
    Config.parallel = int(config.getoption("--parallel") or 0)
    if Config.record_json:
        Config.output = config.getoption("--output")
        REPORT_FILE = Config.output


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    report = out.get_result()
    marks = [m.name for m in item.iter_markers() if m.name not in BUILTIN_MARKS]
    report.opid = marks[0] if marks else item.nodeid


def _reason(report):
    if hasattr(report.longrepr, "reprcrash"):
        return report.longrepr.reprcrash.message
    if isinstance(report.longrepr, tuple):
        return report.longrepr[2]
    return str(report.longrepr)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if not Config.record_json:
        return
    entry = TEST_RESULTS.setdefault(report.opid, {})
    if report.when == "setup" and report.outcome == "skipped":
        entry.update(result="skipped", reason=_reason(report), test_case=report.nodeid)
    elif report.when == "call":
        entry.update(result=report.outcome, test_case=report.nodeid,
                     reason=_reason(report) if report.outcome != "passed" else None)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not Config.record_json:
        return
    data = TEST_RESULTS
    if os.path.exists(REPORT_FILE):
        with open(REPORT_FILE) as f:
            data = dict(json.load(f), **TEST_RESULTS)
    with open(REPORT_FILE, "w") as f:
        json.dump(data, f, indent=2, default=str)
