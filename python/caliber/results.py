"""Reading caliber run directories from Python: runs, cases, providers and the identity as plain
dataclasses (docs/run-log.md has every field). Standard library only; it needs neither the C
library nor torch, so scripts and notebooks can use it anywhere.

    from caliber.results import read_run, read_runs
    run = read_run("runs/mm-20261201-101010")
    for case in run.cases:
        print(case.op, case.dtype, case.shape, case.speedup, case.candidate().latency_ms)

A file that is not what caliber writes raises ResultsError naming the file (and the line and
field); a cut last line of run.log (a run that died) is skipped and counted, as caliber does.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Iterator, Optional

# The newest run.log / run_identity.json schema this reader knows (core::schema_version).
SCHEMA = 1
RUN_LOG = "run.log"
IDENTITY = "run_identity.json"
_RUN_DIR_NAME = re.compile(r"^(?P<name>.+)-(?P<stamp>\d{8}-\d{6})(?:-(?P<n>\d+))?$")


class ResultsError(ValueError):
    """A run directory, run.log or run_identity.json that caliber did not write that way."""


def _schema(obj: dict[str, Any], where: str) -> int:
    s = obj.get("schema", 0)
    if not isinstance(s, int) or isinstance(s, bool) or s < 0:
        raise ResultsError(f"{where}: schema {s!r} is not a non-negative integer")
    if s > SCHEMA:
        raise ResultsError(f"{where}: schema {s} is newer than this reader reads (up to {SCHEMA})")
    return s


def _typed(obj: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    """obj[key] when present and of one of `types` (None when absent or null)."""
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) and bool not in types:
        raise ResultsError(f"{where}: '{key}' is {v!r}, not {'/'.join(t.__name__ for t in types)}")
    if not isinstance(v, types):
        raise ResultsError(f"{where}: '{key}' is {v!r}, not {'/'.join(t.__name__ for t in types)}")
    return v


_NUM = (int, float)


@dataclass
class Identity:
    """run_identity.json: the caliber of a run (backend, device model, timer, level, tune, repeat,
    l2, clock) and its provenance; `raw` holds every key as written."""

    backend: Optional[str]
    device_model: Optional[str]
    device_uuid: Optional[str]
    timer: Optional[str]
    level: Optional[str]
    tune: Optional[str]
    repeat: Optional[int]
    l2: Optional[str]
    clock: Optional[str]
    host: Optional[str]
    start_time: Optional[str]
    paired: Optional[dict[str, Any]]
    raw: dict[str, Any]

    @staticmethod
    def from_json(obj: Any, where: str) -> "Identity":
        if not isinstance(obj, dict):
            raise ResultsError(f"{where}: not a JSON object")
        _schema(obj, where)
        dev = obj.get("device") or {}
        if not isinstance(dev, dict):
            raise ResultsError(f"{where}: 'device' is not an object")
        s = lambda k: _typed(obj, k, (str,), where)  # noqa: E731
        return Identity(
            backend=s("backend"), device_model=_typed(dev, "name", (str,), where + " device"),
            device_uuid=_typed(dev, "uuid", (str,), where + " device"), timer=s("timer"),
            level=s("level"), tune=s("tune"), repeat=_typed(obj, "repeat", (int,), where),
            l2=s("l2"), clock=s("clock"), host=s("host"), start_time=s("start_time"),
            paired=_typed(obj, "paired", (dict,), where), raw=obj)

    def loaded(self) -> list[str]:
        """The recorded host-load readings above the host's cores ("end: load 3.10 on 2 cores")."""
        out = []
        hl = self.raw.get("host_load")
        for when in ("start", "end"):
            r = hl.get(when) if isinstance(hl, dict) else None
            if not isinstance(r, dict):
                continue
            load, cores = r.get("load1"), r.get("cores")
            if isinstance(load, _NUM) and isinstance(cores, _NUM) and cores > 0 and load > cores:
                out.append(f"{when}: load {load:.2f} on {cores:.0f} cores")
        return out


@dataclass
class Provider:
    """One provider of a case row (a `providers` object)."""

    name: str
    role: Optional[str]
    latency_ms: Optional[float]
    samples_ms: list[float]
    markers: list[str]
    timer: Optional[str]
    noise: Optional[float]
    block_medians_ms: list[float]
    paired_phases: Optional[int]
    raw: dict[str, Any]

    @staticmethod
    def from_json(obj: Any, where: str) -> "Provider":
        if not isinstance(obj, dict):
            raise ResultsError(f"{where}: a provider is not an object")
        name = _typed(obj, "name", (str,), where)
        if not name:
            raise ResultsError(f"{where}: a provider without 'name'")
        where = f"{where} provider {name}"
        return Provider(
            name=name, role=_typed(obj, "role", (str,), where),
            latency_ms=_typed(obj, "latency_ms", _NUM, where),
            samples_ms=list(_typed(obj, "samples_ms", (list,), where) or []),
            markers=list(_typed(obj, "markers", (list,), where) or []),
            timer=_typed(obj, "timer", (str,), where), noise=_typed(obj, "noise", _NUM, where),
            block_medians_ms=list(_typed(obj, "block_medians_ms", (list,), where) or []),
            paired_phases=_typed(obj, "paired_phases", (int,), where), raw=obj)


@dataclass
class Case:
    """One case row of run.log."""

    op: str
    dtype: Optional[str]
    shape: Optional[str]
    node: Optional[str]
    family: Optional[str]
    status: str
    latency_ms: Optional[float]
    latency_base_ms: Optional[float]
    speedup: Optional[float]
    markers: list[str]
    providers: list[Provider]
    raw: dict[str, Any]

    @staticmethod
    def from_json(obj: dict[str, Any], where: str) -> "Case":
        op = _typed(obj, "op", (str,), where)
        if not op:
            raise ResultsError(f"{where}: a case row without 'op'")
        provs = _typed(obj, "providers", (list,), where) or []
        return Case(
            op=op, dtype=_typed(obj, "dtype", (str,), where),
            shape=_typed(obj, "shape", (str,), where), node=_typed(obj, "node", (str,), where),
            family=_typed(obj, "family", (str,), where),
            status=_typed(obj, "status", (str,), where) or "ok",
            latency_ms=_typed(obj, "latency_ms", _NUM, where),
            latency_base_ms=_typed(obj, "latency_base_ms", _NUM, where),
            speedup=_typed(obj, "speedup", _NUM, where),
            markers=list(_typed(obj, "markers", (list,), where) or []),
            providers=[Provider.from_json(p, where) for p in provs], raw=obj)

    def provider(self, role: str) -> Optional[Provider]:
        """The first provider of that role (candidate or baseline)."""
        return next((p for p in self.providers if p.role == role), None)

    def candidate(self) -> Optional[Provider]:
        return self.provider("candidate")

    def baseline(self) -> Optional[Provider]:
        return self.provider("baseline")

    def has_marker(self, marker: str) -> bool:
        """A marker equal to `marker` or starting with it, on the row or a provider."""
        every = self.markers + [m for p in self.providers for m in p.markers]
        return any(isinstance(m, str) and m.startswith(marker) for m in every)


@dataclass
class Run:
    """One run directory: its identity (None when the file is absent), run.log's header, cases and
    footer (None when the run did not finish), and the lines that could not be read."""

    dir: str
    identity: Optional[Identity]
    header: Optional[dict[str, Any]]
    cases: list[Case]
    footer: Optional[dict[str, Any]]
    bad_lines: int = 0
    cut_last_line: bool = False
    first_error: str = ""

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.dir))

    def case(self, op: str, dtype: Optional[str] = None,
             shape: Optional[str] = None) -> Optional[Case]:
        """The first case of that op (and dtype, shape where given)."""
        return next((c for c in self.cases if c.op == op and dtype in (None, c.dtype)
                     and shape in (None, c.shape)), None)


def is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, RUN_LOG))


def iter_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a run.log, without the line ends."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            yield i, line.rstrip("\n")


def read_run_log(path: str) -> tuple[Optional[dict[str, Any]], list[Case],
                                       Optional[dict[str, Any]], int, bool, str]:
    """header, cases, footer, bad lines, whether the last line was cut, the first error."""
    header = footer = None
    cases: list[Case] = []
    bad, cut, first = 0, False, ""
    lines = list(iter_lines(path))
    for i, text in lines:
        if not text.strip():
            continue
        where = f"{path}:{i}"
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict):
                raise ResultsError(f"{where}: not a JSON object")
            kind = obj.get("type")
            if kind == "header":
                _schema(obj, where)
                header = obj
            elif kind == "case":
                cases.append(Case.from_json(obj, where))
            elif kind == "footer":
                footer = obj
        except (ValueError, RecursionError, ResultsError) as e:
            # RecursionError: a line nested deeper than the parser's stack ('[' * 100000) is a bad
            # line like any other, as the CLI counts it.
            if isinstance(e, RecursionError):
                e = ResultsError(f"{where}: nested too deeply to be read")
            if i == lines[-1][0] and isinstance(e, json.JSONDecodeError):
                cut = True  # a run that died mid-line: caliber ignores it too
                continue
            if isinstance(e, ResultsError) and "newer than" in str(e):
                raise
            bad += 1
            first = first or str(e)
    return header, cases, footer, bad, cut, first


# The CLI's ceiling for run_identity.json (kMaxIdentityBytes, docs/limits.md).
MAX_IDENTITY_BYTES = 16 << 20


def read_data_file(path: str, max_bytes: int) -> str:
    """A data file's text, as the CLI reads one (records/rundir.hpp, read_data_file): opened
    without blocking and checked on the open descriptor, so a fifo never hangs the reader;
    ResultsError for anything but a regular file of at most max_bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ResultsError(f"{path}: cannot be read ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ResultsError(f"{path}: cannot be read (not a regular file)")
        if st.st_size > max_bytes:
            raise ResultsError(f"{path}: cannot be read (larger than {max_bytes} bytes)")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ResultsError(f"{path}: cannot be read (larger than {max_bytes} bytes)")
    return data.decode("utf-8", errors="replace")


def read_identity(run_dir: str) -> Optional[Identity]:
    path = os.path.join(run_dir, IDENTITY)
    if not os.path.lexists(path):
        return None
    text = read_data_file(path, MAX_IDENTITY_BYTES)
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise ResultsError(f"{path}: cannot be read ({why})") from None
    return Identity.from_json(obj, path)


def read_run(run_dir: str) -> Run:
    """One run directory; ResultsError when it holds no run.log or a file is not caliber's."""
    log = os.path.join(run_dir, RUN_LOG)
    if not os.path.isfile(log):
        raise ResultsError(f"{run_dir}: not a run directory (no {RUN_LOG})")
    header, cases, footer, bad, cut, first = read_run_log(log)
    return Run(dir=run_dir, identity=read_identity(run_dir), header=header, cases=cases,
               footer=footer, bad_lines=bad, cut_last_line=cut, first_error=first)


def parse_run_dir_name(name: str) -> Optional[tuple[str, str, int]]:
    """"<name>-YYYYmmdd-HHMMSS[-N]" -> (name, stamp, N), N 1 without a suffix."""
    m = _RUN_DIR_NAME.match(name)
    return (m["name"], m["stamp"], int(m["n"] or 1)) if m else None


def run_dirs(path: str) -> list[str]:
    """A run directory itself, or the run directories of a batch or ab directory (sorted)."""
    if is_run_dir(path):
        return [path]
    if not os.path.isdir(path):
        raise ResultsError(f"{path}: neither a run directory nor a directory of runs")
    return sorted(os.path.join(path, d) for d in os.listdir(path)
                  if is_run_dir(os.path.join(path, d)))


def read_runs(paths: list[str]) -> list[Run]:
    """Every run directory the paths name (runs, batches, ab directories)."""
    return [read_run(d) for p in paths for d in run_dirs(p)]


def ab_rounds(ab_dir: str) -> dict[int, dict[str, str]]:
    """caliber ab's rounds: round number -> {"A": run dir, "B": run dir}, only rounds with both
    sides holding at least one case row (a round cut short before its first case is left out)."""
    rounds: dict[int, dict[str, str]] = {}
    for d in run_dirs(ab_dir) if os.path.isdir(ab_dir) else []:
        m = re.match(r"([AB])-(\d+)-", os.path.basename(d))
        if m and read_run(d).cases:
            rounds.setdefault(int(m.group(2)), {})[m.group(1)] = d
    return {i: s for i, s in rounds.items() if len(s) == 2}
