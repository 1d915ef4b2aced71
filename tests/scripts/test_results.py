#!/usr/bin/env python3
"""caliber.results (python/caliber/results.py): run directories into dataclasses, the schema and
type checks with the file, line and field in the message, a cut last line skipped as caliber
skips it, batch and ab directories, and a script ported to it (scripts/config-diff)."""
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from caliber.results import (ResultsError, ab_rounds, parse_run_dir_name, read_run,  # noqa: E402
                             read_runs, run_dirs)

IDENTITY = {"schema": 1, "backend": "cuda", "timer": "graph", "level": "core", "tune": "off",
            "repeat": 1, "l2": "cold", "clock": "sustained", "host": "h1",
            "start_time": "2026-12-01T10:10:10Z",
            "device": {"name": "NVIDIA H200", "uuid": "GPU-1", "physical_id": "0"},
            "host_load": {"start": {"load1": 0.5, "cores": 2}, "end": {"load1": 3.5, "cores": 2}}}


def case(op="mm", **kw):
    row = {"type": "case", "op": op, "dtype": "bf16", "shape": "4096", "node": f"{op}[bf16-4096]",
           "family": "blas", "status": "ok", "latency_ms": 1.0, "latency_base_ms": 2.0,
           "speedup": 2.0, "markers": ["timer=direct"],
           "providers": [{"name": "ours", "role": "candidate", "latency_ms": 1.0,
                          "samples_ms": [1.0, 1.1], "config": {"BLOCK": 64}},
                         {"name": "vendor", "role": "baseline", "latency_ms": 2.0,
                          "samples_ms": [2.0], "config": {"BLOCK": 32}}]}
    row.update(kw)
    return row


def write_run(parent, name, rows, identity=IDENTITY, tail=""):
    d = os.path.join(parent, name)
    os.makedirs(d)
    lines = [json.dumps({"type": "header", "schema": 1, "cases": len(rows)})]
    lines += [r if isinstance(r, str) else json.dumps(r) for r in rows]
    with open(os.path.join(d, "run.log"), "w") as f:
        f.write("\n".join(lines) + "\n" + tail)
    if identity is not None:
        with open(os.path.join(d, "run_identity.json"), "w") as f:
            json.dump(identity, f)
    return d


class Results(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.t = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_run_reads_into_dataclasses(self):
        d = write_run(self.t, "mm-20261201-101010", [case(), case("add", family="pointwise")])
        run = read_run(d)
        self.assertEqual(run.name, "mm-20261201-101010")
        self.assertEqual(len(run.cases), 2)
        self.assertEqual(run.identity.device_model, "NVIDIA H200")
        self.assertEqual(run.identity.repeat, 1)
        self.assertEqual(run.identity.loaded(), ["end: load 3.50 on 2 cores"])
        mm = run.case("mm")
        self.assertEqual(mm.candidate().samples_ms, [1.0, 1.1])
        self.assertEqual(mm.baseline().name, "vendor")
        self.assertTrue(mm.has_marker("timer="))
        self.assertEqual(run.case("add").family, "pointwise")
        self.assertIsNone(run.footer)
        self.assertEqual(run.bad_lines, 0)

    def test_bad_lines_are_counted_and_a_cut_last_line_is_skipped(self):
        d = write_run(self.t, "x-20261201-101010",
                      [case(), case(op=None), case(latency_ms="fast"), "not json"],
                      tail='{"type": "case", "op": "cu')
        run = read_run(d)
        self.assertEqual(len(run.cases), 1)
        self.assertEqual(run.bad_lines, 3)
        self.assertTrue(run.cut_last_line)
        self.assertIn("run.log:3", run.first_error)
        self.assertIn("without 'op'", run.first_error)

    def test_refusals_name_the_file_and_field(self):
        newer = write_run(self.t, "n-20261201-101010", [case()], identity=dict(IDENTITY, schema=9))
        with self.assertRaisesRegex(ResultsError, "run_identity.json: schema 9 is newer"):
            read_run(newer)
        typed = write_run(self.t, "t-20261201-101010", [case()], identity=dict(IDENTITY, repeat="1"))
        with self.assertRaisesRegex(ResultsError, "'repeat' is '1', not int"):
            read_run(typed)
        with self.assertRaisesRegex(ResultsError, "not a run directory"):
            read_run(self.t)
        with self.assertRaisesRegex(ResultsError, "neither a run directory"):
            run_dirs(os.path.join(self.t, "absent"))
        header = os.path.join(self.t, "h-20261201-101010")
        write_run(self.t, "h-20261201-101010", [case()])
        with open(os.path.join(header, "run.log"), "w") as f:
            f.write(json.dumps({"type": "header", "schema": 7}) + "\n")
        with self.assertRaisesRegex(ResultsError, "schema 7 is newer"):
            read_run(header)

    def test_a_line_too_deep_is_a_bad_line_and_an_identity_so_deep_is_refused(self):
        # json's parser recursed out of the stack (RecursionError) past the reader's ValueError
        d = write_run(self.t, "deep-20261201-101010", [case(), "[" * 100000, case("add")])
        run = read_run(d)
        self.assertEqual(len(run.cases), 2)
        self.assertEqual(run.bad_lines, 1)
        self.assertIn("nested too deeply", run.first_error)
        with open(os.path.join(d, "run_identity.json"), "w") as f:
            f.write("[" * 100000)
        with self.assertRaisesRegex(ResultsError, "run_identity.json: cannot be read"):
            read_run(d)

    def test_an_identity_that_is_no_small_regular_file_is_refused(self):
        d = write_run(self.t, "fifo-20261201-101010", [case()])
        ident = os.path.join(d, "run_identity.json")
        os.remove(ident)
        os.mkfifo(ident)
        done = []
        reader = threading.Thread(target=lambda: done.append(self._refusal(d)), daemon=True)
        reader.start()
        reader.join(20)
        if not done:
            with open(ident, "w"):  # let the hung reader go
                pass
            self.fail("read_run hung on a fifo run_identity.json")
        self.assertIn("not a regular file", done[0])
        os.remove(ident)
        with open(ident, "w") as f:
            f.write(" " * ((16 << 20) + 1))
        self.assertIn("larger than", self._refusal(d))

    def _refusal(self, d):
        try:
            read_run(d)
        except ResultsError as e:
            return str(e)
        return "read"

    def test_batches_and_ab_rounds(self):
        ab = os.path.join(self.t, "ab")
        for side in "AB":
            for i in (1, 2):
                write_run(ab, f"{side}-{i}-20261201-10101{i}", [case()])
        write_run(ab, "A-3-20261201-101013", [])  # cut short before its first case
        write_run(ab, "B-3-20261201-101014", [case()])
        self.assertEqual(len(run_dirs(ab)), 6)
        self.assertEqual(len(read_runs([ab])), 6)
        rounds = ab_rounds(ab)
        self.assertEqual(sorted(rounds), [1, 2])
        self.assertTrue(rounds[1]["B"].endswith("B-1-20261201-101011"))
        self.assertEqual(parse_run_dir_name("mm-20261201-101010-2"), ("mm", "20261201-101010", 2))
        self.assertIsNone(parse_run_dir_name("mm"))

    def test_no_script_reads_run_log_by_hand(self):
        # Every script that reads a run directory goes through caliber.results: a run.log opened
        # by name, or its lines split on '"type"', is a second reader that drifts from the schema.
        by_hand = re.compile(r'open\([^)]*run\.log|"type":\s*"case"\x27 in')
        found = []
        for name in sorted(os.listdir(os.path.join(ROOT, "scripts"))):
            path = os.path.join(ROOT, "scripts", name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for i, line in enumerate(f, 1):
                    if by_hand.search(line):
                        found.append(f"scripts/{name}:{i}: {line.strip()}")
        self.assertEqual(found, [])

    def test_the_device_scripts_read_rows_through_it(self):
        # gpu-check's phase table and the FlagGems checks' row readers, on a run written here
        # (a bad line is skipped by the reader, not fatal).
        load = importlib.machinery.SourceFileLoader
        gc = load("gpu_check", os.path.join(ROOT, "scripts", "gpu-check")).load_module()
        fc = load("flaggems_check", os.path.join(ROOT, "scripts", "flaggems-check")).load_module()
        f2 = load("flaggems_check2",
                  os.path.join(ROOT, "scripts", "flaggems-check2")).load_module()
        out = os.path.join(self.t, "out")
        os.makedirs(out)
        d = write_run(out, "mm-20261201-101010",
                      [case(inputs_s=0.5, settle_s=2.0, wall_s=3.0), "{not json",
                       case(status="failed", wall_s=1.0)])
        table, _ = gc.phase_table(d)
        self.assertIn("mm", table)
        self.assertRegex(table, r"all\s+2\s+1\s+0\.5\s+0\.0\s+0\.0\s+2\.0")
        run_dir, rows = fc.caliber_rows(out)
        self.assertEqual((run_dir, len(rows)), (d, 2))
        self.assertEqual([p["name"] for p in f2.gems_rows(d)], ["ours", "ours"])

    def test_config_diff_reads_runs_through_it(self):
        a = write_run(self.t, "a-20261201-101010", [case()])
        other = case()
        other["providers"][0]["config"] = {"BLOCK": 128}
        b = write_run(self.t, "b-20261201-101010", [other])
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "config-diff"), a, b],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("config differs: mm[bf16-4096] ours", r.stdout)
        self.assertIn("configs: 1 same, 1 different", r.stdout)


if __name__ == "__main__":
    unittest.main()
