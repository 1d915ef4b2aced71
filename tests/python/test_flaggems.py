"""caliber run --flaggems (docs/flaggems.md) on a stand-in of FlagGems' benchmark tree
(tests/python/flaggems_standin: no GPU, torch or Triton; a tiny torch, a Triton whose do_bench
raises), on the cpu backend: the rows, the knobs of the old runner, level and shape mode, the MUSA
compat rule, failures isolated, FlagGems' own record beside run.log, and every bad input (exit 2,
nothing written)."""

import json
import math
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CALIBER_BIN, ENV, HERE, rows, run_dirs, tmpdir  # noqa: E402

ROOT = os.path.join(HERE, "flaggems_standin")
STUBS = os.path.join(ROOT, "stubs")
QUICK = ["--backend", "cpu", "--timeout", "0.2", "--peaks", "off", "--min-samples", "5"]


def standin_copy(dest):
    """A copy of the stand-in tree at `dest`, without Python's and pytest's caches, for a test
    that edits its files or needs two trees; returns dest."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest*"))
    return dest


def interpreter():
    """A python3 with pytest and PyYAML (FlagGems needs both): this one, else Debian's."""
    for cand in (sys.executable, "/usr/bin/python3"):
        if cand and os.path.exists(cand) and subprocess.run(
                [cand, "-c", "import pytest, yaml"], capture_output=True).returncode == 0:
            return cand
    raise RuntimeError("no python3 with pytest and PyYAML: install python3-pytest and "
                       "python3-yaml (scripts/quickstart test does)")


PYTHON = interpreter()


# The stand-in's LibTuner database for live mode (FlagGems' default is under ~/.flaggems).
SHARED_DB = "sqlite:///" + os.path.join(tmpdir(), "flaggems-shared.db")


def env(extra=None):
    e = dict(ENV, CALIBER_PYTHON=PYTHON, PYTHONDONTWRITEBYTECODE="1", FLAGGEMS_DB_URL=SHARED_DB,
             PYTHONPATH=STUBS + os.pathsep + ENV.get("PYTHONPATH", ""))
    for k in ("GEMS_VENDOR", "STANDIN_FORCE_VENDOR", "STANDIN_BREAK_IMPORT",
              "STANDIN_ADD_RAISES_AT", "STANDIN_CONVERT_RAISES", "OP", "OP_FILE", "TEST_NODE",
              "BENCH_LEVEL", "SHAPE_MODE",
              "ZL_DIRECT_REPEAT", "STANDIN_OWN_DO_BENCH", "STANDIN_DETECT_VENDOR"):
        e.pop(k, None)
    e.update(extra or {})
    return e


def run(*args, extra_env=None, python=False):
    """caliber run --flaggems ROOT ARGS (the executable, or python3 -m caliber)."""
    cmd = ([PYTHON, "-m", "caliber"] if python else [CALIBER_BIN]) + ["run", "--flaggems", ROOT]
    p = subprocess.run(cmd + list(args) + QUICK, capture_output=True, text=True,
                       env=env(extra_env), timeout=900)
    return p.returncode, p.stdout, p.stderr


def one_run(out):
    (d,) = run_dirs(out)
    cases, header, footer = rows(d)
    with open(os.path.join(d, "run_identity.json")) as f:
        ident = json.load(f)
    return d, cases, header, ident


def by_op(cases, op):
    return [c for c in cases if c["op"] == op]


def provider(case, role):
    (p,) = [p for p in case["providers"] if p["role"] == role]
    return p


class FullRun(unittest.TestCase):
    """One run of every stand-in benchmark at core level, read many ways."""

    @classmethod
    def setUpClass(cls):
        cls.out = tmpdir()
        cls.rc, cls.so, cls.se = run("--out", cls.out)
        cls.dir, cls.cases, cls.header, cls.ident = one_run(cls.out)

    def test_exit_code_says_a_case_failed(self):
        # broken_iter's input maker raises: its test stops, a failed row says so
        self.assertEqual(self.rc, 1, self.so + self.se)

    def test_one_row_per_op_dtype_shape_with_torch_and_gems(self):
        add = by_op(self.cases, "add")
        self.assertEqual(len(add), 9, [c["node"] for c in add])  # 3 dtypes x 3 core shapes
        self.assertEqual({c["dtype"] for c in add}, {"f16", "bf16", "f32"})
        self.assertEqual({c["shape"] for c in add},
                         {"64x64_64x64", "1024x1024_1024x1024", "4096x1024_4096x1024"})
        for c in add:
            self.assertEqual(c["status"], "ok", c)
            base, cand = provider(c, "baseline"), provider(c, "candidate")
            self.assertEqual((base["name"], cand["name"]), ("torch", "gems"))
            self.assertAlmostEqual(c["speedup"], base["latency_ms"] / cand["latency_ms"])
            self.assertEqual(c["latency_base_ms"], base["latency_ms"])
            # FlagGems' own byte count (gbps x latency) gives caliber's GB/s
            self.assertGreater(c["gbps"], 0)
            self.assertGreater(c["host_ms"], 0)
            self.assertGreater(c["host_base_ms"], 0)
            self.assertIn("shape_detail", c["params"])
            self.assertTrue(c["params"]["test"].endswith("test_add.py::test_add"), c["params"])
        # the stand-in's gems ops do three times torch's work (speedup about 0.33 on the larger
        # shapes). The cpu backend reads wall time, so a loaded machine can stretch a row's
        # torch samples: the median of the six larger rows is what must show the effect (it
        # takes three rows' torch figures stretched 2.4x to hide it).
        big = sorted(c["speedup"] for c in add if c["shape"] != "64x64_64x64")
        self.assertEqual(len(big), 6)
        self.assertLess((big[2] + big[3]) / 2, 0.8, big)

    def test_pytests_own_report_stays_out_real_errors_stay_in(self):
        # no progress dots or summary of pytest's among caliber's lines; a failed test's
        # traceback (broken_iter's) on stderr
        self.assertRegex(self.so, r"(?m)^\[1\] ")
        self.assertNotRegex(self.so, r"(?m)^\.|passed in|failed in|=====")
        self.assertIn("caliber: flaggems: benchmark/test_failures.py::test_broken_iter failed in its call:",
                      self.se)
        self.assertIn('raise RuntimeError("stand-in input maker broke on its third input")', self.se)

    def test_rows_say_where_the_time_went(self):
        # a fed row's phases: FlagGems' loop (inputs), the first calls (prepare), settling and
        # timing from caliber's measurements, the host cost runs; wall_s covers them all
        # (the host cost comes from the timer's warmup: no host cost runs, no host_s)
        keys = ("inputs_s", "prepare_s", "settle_s", "timing_s", "other_s")
        for c in by_op(self.cases, "add"):
            for k in keys + ("wall_s",):
                self.assertIn(k, c, (k, c["node"]))
                self.assertGreaterEqual(c[k], 0, (k, c["node"]))
            self.assertNotIn("host_s", c)
            self.assertGreater(c["timing_s"], 0, c["node"])
            self.assertGreater(c["prepare_s"], 0, c["node"])
            self.assertAlmostEqual(sum(c[k] for k in keys), c["wall_s"], places=6)
        self.assertIn("time: cases", self.so)

    def test_the_footer_says_where_the_start_up_went(self):
        # the interpreter and pytest, FlagGems' import, the collection and the run's opening,
        # each measured by the plugin; the closing line names them
        _, _, footer = rows(self.dir)
        st = footer["startup"]
        self.assertEqual(set(st), {"interpreter_s", "flag_gems_import_s", "collection_s",
                                   "open_s"}, st)
        for k, v in st.items():
            self.assertGreaterEqual(v, 0, k)
            self.assertLess(v, 120, k)
        # the interpreter started before the plugin loaded: never nothing
        self.assertGreater(st["interpreter_s"], 0, st)
        self.assertRegex(self.so, r"start-up before the run [0-9.]+ s \(collection [0-9.]+, "
                         r"flag_gems_import [0-9.]+, interpreter [0-9.]+, open [0-9.]+\)")

    def test_blas_backward_custom_run_and_override(self):
        mm = by_op(self.cases, "mm")
        self.assertEqual(len(mm), 4)  # 2 dtypes x 2 core shapes, no transposed pass at core
        self.assertTrue(all(c["tflops"] > 0 for c in mm), mm)
        self.assertFalse(any(c["shape"].endswith("t") for c in mm))
        bwd = by_op(self.cases, "softmax_backward")
        self.assertEqual(len(bwd), 2)
        self.assertTrue(all(c["status"] == "ok" for c in bwd), bwd)
        custom = by_op(self.cases, "custom_add")
        self.assertEqual([(c["dtype"], c["shape"]) for c in custom],
                         [("f16", "128x128_128x128"), ("f16", "512x512_512x512")])
        self.assertEqual(len(by_op(self.cases, "index_fill")), 3)

    def test_skip_guard_is_a_skipped_row_with_flaggems_reason(self):
        (fft,) = by_op(self.cases, "fft")
        self.assertEqual(fft["status"], "skipped")
        self.assertEqual(fft["reason"], "CUDA is not available")

    def test_a_broken_input_maker_keeps_the_rows_before_it(self):
        rows_ = by_op(self.cases, "broken_iter")
        self.assertEqual([c["status"] for c in rows_], ["ok", "ok", "failed"], rows_)
        self.assertIn("stand-in input maker broke", rows_[-1]["error"])
        # A backward benchmark's (op broken_grad_backward, marker broken_grad): the failed row is
        # the benchmark's op, in the dtype its loop was in, not the test's marker.
        rows_ = by_op(self.cases, "broken_grad_backward")
        self.assertEqual([(c["status"], c.get("dtype")) for c in rows_],
                         [("ok", "f32"), ("ok", "f32"), ("failed", "f32")], rows_)
        self.assertIn("the benchmark stopped", rows_[-1]["error"])
        self.assertEqual(by_op(self.cases, "broken_grad"), [])

    def test_own_op_on_both_sides_is_torch_then_gems(self):
        """FlagGems' test_linear_backward.py times flag_gems.linear_backward as torch_op and as
        gems_op (no native op): run() calls it first as the baseline, then as gems'. One row an
        input with both, a speedup, no second row."""
        rows_ = by_op(self.cases, "linear_backward")
        self.assertEqual([c["shape"] for c in rows_],
                         ["64x512_64x1024_1024x512_(True,True,True)",
                          "128x1024_128x2048_2048x1024_(True,True,True)"])
        for c in rows_:
            self.assertEqual(c["status"], "ok", c)
            self.assertEqual([(p["role"], p["name"]) for p in c["providers"]],
                             [("baseline", "torch"), ("candidate", "gems")])
            self.assertIsNotNone(c.get("speedup"), c)

    def test_paired_inputs_of_one_input_are_one_case(self):
        """FlagGems' test_convert_weight_to_int4pack.py yields (torch's args, gems' args) of
        different shapes per input: one row each, shaped as FlagGems records it (gems'
        arguments), both providers on it."""
        rows_ = by_op(self.cases, "convert_weight_to_int4pack")
        self.assertEqual([(c["dtype"], c["shape"]) for c in rows_],
                         [("u8", "16x128_2"), ("u8", "16x128_8"), ("u8", "32x256_2"),
                          ("u8", "32x256_8")])
        for c in rows_:
            self.assertEqual(c["status"], "ok", c)
            self.assertEqual([p["role"] for p in c["providers"]], ["baseline", "candidate"])
            self.assertIsNotNone(c.get("speedup"), c)
            self.assertEqual(c["dims"], [int(d) for d in c["shape"].split("_")[0].split("x")])
        with open(os.path.join(self.dir, "flaggems_result.json")) as f:
            (text,) = json.load(f)["convert_weight_to_int4pack"]["details"]
        self.assertIsInstance(text, str)  # as FlagGems' file records it: result.to_json()
        record = json.loads(text)
        self.assertEqual([str(m["shape_detail"]) for m in record["result"]],
                         [c["params"]["shape_detail"].replace("torch.Size(", "").replace(")", "")
                          for c in rows_])
        self.assertEqual([m["latency_base"] for m in record["result"]],
                         [c["latency_base_ms"] for c in rows_])

    def test_a_fixture_that_raises_is_a_failed_row(self):
        (setup,) = by_op(self.cases, "setup_error")  # the test never ran: the marker's row
        self.assertEqual(setup["status"], "failed")
        self.assertIn("the test's setup failed: RuntimeError: stand-in fixture broke in setup",
                      setup["error"])
        self.assertEqual([c["status"] for c in by_op(self.cases, "teardown_add")], ["ok"] * 3)
        (teardown,) = by_op(self.cases, "teardown_error")
        self.assertEqual(teardown["status"], "failed")
        self.assertIn("the test's teardown failed: RuntimeError: stand-in fixture broke in "
                      "teardown", teardown["error"])

    def test_identity_and_header(self):
        fg = self.ident["flaggems"]
        self.assertEqual(fg["version"], "0.0.0+standin")
        # not caliber's own commit, though the stand-in sits in caliber's repository
        self.assertEqual(fg["commit"], "standin")
        self.assertEqual(fg["vendor"], "nvidia")
        # the package's code as it was imported; no git checkout of its own: dirty unknown
        self.assertRegex(fg["source"]["sha256"], r"^[0-9a-f]{64}$")
        self.assertGreater(fg["source"]["files"], 0)
        self.assertIsNone(fg["source"]["dirty"])
        self.assertEqual(fg["triton"], "3.6.0+standin")
        self.assertEqual(fg["level"], "core")
        self.assertIn("--level", fg["pytest_args"])
        self.assertEqual(fg["pytest_args"][fg["pytest_args"].index("--level") + 1], "core")
        self.assertEqual(self.ident["level"], "core")
        self.assertEqual(self.header["level"], "core")
        self.assertIn("add", self.ident["ops"])
        self.assertTrue(self.ident["python"]["executable"])

    def test_shapes_yaml_records_flaggems_shapes(self):
        with open(os.path.join(self.dir, "shapes.yaml")) as f:
            text = f.read()
        self.assertIn("level: core", text.replace('"', ""))
        self.assertIn("4096x1024_4096x1024", text)
        self.assertIn("shape_desc", text)

    def test_flaggems_record_beside_run_log_agrees(self):
        with open(os.path.join(self.dir, "flaggems_result.json")) as f:
            record = json.load(f)
        details = record["add"]["details"]
        self.assertEqual(len(details), 3)  # one per dtype
        got = {}
        for d in details:
            for i, m in enumerate(d["result"]):
                got[(d["dtype"], i)] = m
        add = by_op(self.cases, "add")
        names = {"f16": "torch.float16", "bf16": "torch.bfloat16", "f32": "torch.float32"}
        for c in add:
            m = got[(names[c["dtype"]], int(c["params"]["ordinal"]))]
            self.assertEqual(m["latency_base"], c["latency_base_ms"])
            self.assertEqual(m["latency"], c["latency_ms"])
        self.assertEqual(record["fft"]["result"], "skipped")

    def test_flaggems_log_export_is_flaggems_own_record_and_its_summary_reads_it(self):
        """`caliber export --format flaggems-log`: for every (op, dtype) FlagGems' own record
        holds, the same record (dtype text, shape detail as FlagGems' JSON holds it, both
        latencies); the broken input maker's dtype, which FlagGems' record loses, with its
        error_msg; the stand-in's summary_for_plot.py (run as FlagGems runs its own) reads the
        log, and its --compare against the same log keys every input (each ratio 1)."""
        log = os.path.join(tmpdir(), "caliber.log")
        p = subprocess.run([CALIBER_BIN, "export", self.dir, "--format", "flaggems-log", "--out",
                            log], capture_output=True, text=True, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        # broken_iter's and broken_grad_backward's stopped loops, a setup and a teardown error
        self.assertIn("4 failed case(s) written with their error_msg", p.stderr)
        with open(log) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines and all(x.startswith("[INFO] {") for x in lines), lines[:3])
        mine = [json.loads(x[len("[INFO] "):]) for x in lines]
        with open(os.path.join(self.dir, "flaggems_result.json")) as f:
            record = json.load(f)
        theirs = [json.loads(d) if isinstance(d, str) else d
                  for entry in record.values() for d in entry.get("details") or []]
        self.assertGreater(len(theirs), 5)
        for d in theirs:
            (m,) = [r for r in mine if (r["op_name"], r["dtype"]) == (d["op_name"], d["dtype"])]
            self.assertEqual((m["mode"], m["level"]), (d["mode"], d["level"]))
            self.assertEqual([x["shape_detail"] for x in m["result"]],
                             [x["shape_detail"] for x in d["result"]], d["op_name"])
            for a, b in zip(m["result"], d["result"]):
                self.assertAlmostEqual(a["latency"], b["latency"], places=12)
                self.assertAlmostEqual(a["latency_base"], b["latency_base"], places=12)
        (broken,) = [r for r in mine if r["op_name"] == "broken_iter"]
        self.assertIn("broke on its third input", broken["result"][-1]["error_msg"])
        self.assertFalse(any(d["op_name"] == "broken_iter" for d in theirs))

        def summary(*extra):
            q = subprocess.run([PYTHON, "-m", "benchmark.summary_for_plot", log, *extra],
                               capture_output=True, text=True, env=env(), cwd=ROOT)
            self.assertEqual(q.returncode, 0, q.stderr)
            lines = q.stdout.splitlines()
            return {x.split()[0]: dict(zip(lines[0].split(), x.split())) for x in lines[1:]}

        plain = summary()
        self.assertEqual(plain["broken_iter"]["all_tests_passed"], "no")
        self.assertEqual(plain["add"]["all_tests_passed"], "yes")
        # FlagGems' reader averages the speedups of add's f16 inputs: those of caliber's rows
        # (the planted effect itself is checked on the rows, not again through this mean)
        f16 = [c["speedup"] for c in by_op(self.cases, "add") if c["dtype"] == "f16"]
        self.assertAlmostEqual(float(plain["add"]["float16"]), sum(f16) / len(f16), places=3)
        # --compare divides by every input's latency, as FlagGems' own does: a failed input's
        # is NaN (Python's json reads it), so the whole log, failures and all, compared with
        # itself reads 1 wherever an input passed.
        self.assertIn('"latency":NaN', "\n".join(lines))
        compared = summary("--compare", log)
        for op in ("add", "softmax", "mm", "broken_iter"):
            comp = {float(v) for k, v in compared[op].items() if k.startswith("comp_")}
            self.assertEqual(comp - {0.0}, {1.0}, compared[op])

    def test_summary_export_identity_read_it(self):
        for args in (["summary", self.dir], ["export", self.dir, "--format", "csv"],
                     ["identity", self.dir]):
            p = subprocess.run([CALIBER_BIN] + args, capture_output=True, text=True, env=env())
            self.assertEqual(p.returncode, 0, args + [p.stdout, p.stderr])
        p = subprocess.run([CALIBER_BIN, "export", self.dir, "--format", "json"],
                           capture_output=True, text=True, env=env())
        self.assertIn("add", p.stdout)
        # summary's second table: device time beside the host cost of one eager call
        p = subprocess.run([CALIBER_BIN, "summary", self.dir, "--format", "json"],
                           capture_output=True, text=True, env=env())
        host = json.loads(p.stdout)["host_cost"]["rows"]
        (add_f16,) = [r for r in host if r["op"] == "add" and r["dtype"] == "f16"]
        self.assertEqual(add_f16["rows"], 3)
        self.assertGreater(add_f16["host_ms"], 0)
        self.assertGreater(add_f16["device_ms"], add_f16["device_base_ms"])  # gems: 3x the work


class Knobs(unittest.TestCase):
    def test_level_comprehensive_doubles_blas_with_distinct_keys(self):
        out = tmpdir()
        rc, so, se = run("mm", "--out", out, extra_env={"BENCH_LEVEL": "comprehensive"})
        self.assertEqual(rc, 0, so + se)
        _, cases, header, ident = one_run(out)
        self.assertEqual(header["level"], "comprehensive")
        self.assertEqual(len(cases), 8, [c["node"] for c in cases])
        self.assertEqual(len({(c["dtype"], c["shape"]) for c in cases}), 8)
        self.assertEqual(sum(c["shape"].endswith("t") for c in cases), 4)

    def test_node_op_and_op_file(self):
        out = tmpdir()
        rc, so, se = run("--out", out,
                         extra_env={"TEST_NODE": "test_softmax.py::test_softmax_backward"})
        self.assertEqual(rc, 0, so + se)
        _, cases, _, _ = one_run(out)
        self.assertEqual({c["op"] for c in cases}, {"softmax_backward"})
        # OP as a marker (no test_softmax_backward.py): -m's meaning
        out = tmpdir()
        rc, so, se = run("--out", out, extra_env={"OP": "softmax_backward"})
        self.assertEqual(rc, 0, so + se)
        self.assertEqual({c["op"] for c in one_run(out)[1]}, {"softmax_backward"})
        # OP_FILE naming a test file (the old runner's meaning) and a list of ops (caliber's)
        out = tmpdir()
        rc, so, se = run("--out", out, extra_env={"OP_FILE": "benchmark/test_softmax.py"})
        self.assertEqual(rc, 0, so + se)
        self.assertEqual({c["op"] for c in one_run(out)[1]}, {"softmax", "softmax_backward"})
        lst = os.path.join(tmpdir(), "ops.txt")
        with open(lst, "w") as f:
            f.write("# ops\nadd\ncustom_op\n")
        out = tmpdir()
        rc, so, se = run("--out", out, "--dtypes", "f32", extra_env={"OP_FILE": lst})
        self.assertEqual(rc, 0, so + se)
        self.assertEqual({c["op"] for c in one_run(out)[1]}, {"add", "custom_add"})

    def test_repeat_mode_and_shape_mode(self):
        out = tmpdir()
        rc, so, se = run("softmax", "--mode", "cudagraph", "--out", out,
                         extra_env={"ZL_DIRECT_REPEAT": "3", "SHAPE_MODE": "upstream"})
        self.assertEqual(rc, 0, so + se)
        _, cases, header, ident = one_run(out)
        self.assertEqual(header["repeat"], 3)
        # the cpu backend times with the direct timer, which takes the median of 3 calls
        self.assertTrue(all(p["repeat"] == 3 for c in cases for p in c["providers"]), cases)
        self.assertEqual(ident["l2"], "warm")  # cudagraph: do_bench_cudagraph's warm L2
        args = ident["flaggems"]["pytest_args"]
        self.assertEqual(args[args.index("--mode") + 1], "cudagraph")
        self.assertNotIn("--shape_file", args)  # upstream: FlagGems' own core_shapes.yaml
        self.assertEqual({c["shape"] for c in by_op(cases, "softmax")},
                         {"64x64_dim=-1", "1024x256_dim=-1"})
        # file: caliber's shapes overlaid on FlagGems' (an op of caliber's file replaces its own)
        mine = os.path.join(tmpdir(), "shapes.yaml")
        with open(mine, "w") as f:
            f.write("ops:\n  softmax: [[32, 48]]\n")
        out = tmpdir()
        rc, so, se = run("softmax", "--shapes", mine, "--out", out)
        self.assertEqual(rc, 0, so + se)
        _, cases, _, ident = one_run(out)
        self.assertIn("--shape_file", ident["flaggems"]["pytest_args"])
        self.assertEqual({c["shape"] for c in by_op(cases, "softmax")}, {"32x48_dim=-1"})
        self.assertEqual(ident["shapes_file"], mine)  # the file the run read (it was "")
        # the overlay as shapes.yaml records it: the file's absolute path, whatever the cwd
        out = tmpdir()
        p = subprocess.run([CALIBER_BIN, "run", "--flaggems", ROOT, "softmax", "--shapes", "shapes.yaml",
                            "--out", out] + QUICK, capture_output=True, text=True, env=env(),
                           cwd=os.path.dirname(mine), timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(one_run(out)[0], "shapes.yaml")) as f:
            self.assertIn('overlay: "%s"' % mine, f.read())

    def test_leftover_batch_variables_reach_no_interpreter(self):
        """CALIBER_BATCH_* left in a shell (no batch.json in the folder, another parent): said
        once, and the interpreter never sees them: its temporary folders stay out of the folder."""
        folder = tmpdir()
        out = tmpdir()
        rc, so, se = run("add", "--out", out, extra_env={
            "CALIBER_BATCH_DIR": folder, "CALIBER_BATCH_PARENT": "1", "CALIBER_BATCH_OP": "add"})
        self.assertEqual(rc, 0, so + se)
        self.assertEqual((so + se).count("were ignored"), 1, so + se)
        self.assertEqual(os.listdir(folder), [])  # no staging/ there
        self.assertEqual(len(run_dirs(out)), 1)

    def test_musa_compat_drops_the_exact_guard_on_mthreads_only(self):
        out = tmpdir()
        rc, so, se = run("fft", "fft_other", "--out", out, extra_env={"GEMS_VENDOR": "mthreads"})
        self.assertEqual(rc, 0, so + se)
        _, cases, _, ident = one_run(out)
        self.assertEqual(ident["flaggems"]["vendor"], "mthreads")
        self.assertEqual([c["status"] for c in by_op(cases, "fft")], ["ok"])
        # a guard with another reason stays
        self.assertEqual([c["status"] for c in by_op(cases, "fft_other")], ["skipped"])

    def test_a_backend_of_several_vendors_lets_flaggems_detect_which(self):
        """--backend rocm is FlagGems' amd or hygon: GEMS_VENDOR (which would win over FlagGems'
        own detection) stays unset, and what FlagGems detects must be one of the two; a backend
        of one vendor (musa) still sets it. The session's set-up alone (no ROCm device here)."""
        script = (
            "import json, os, sys\n"
            "from caliber import flaggems\n"
            "s = flaggems.Session(None, {'backend': sys.argv[1], 'flaggems': sys.argv[2],\n"
            "    'host': True, 'level': 'core', 'mode': 'kernel', 'shape_mode': 'upstream',\n"
            "    'tune': 'off'})\n"
            "try:\n"
            "    s.prepare()\n"
            "    print(json.dumps([s.flag_gems.vendor_name, os.environ.get('GEMS_VENDOR')]))\n"
            "except flaggems.FlagGemsError as e:\n"
            "    print(json.dumps(['refused', str(e)]))\n")

        def prepare(backend, detected):
            p = subprocess.run([PYTHON, "-c", script, backend, ROOT], capture_output=True,
                               text=True, env=env({"STANDIN_DETECT_VENDOR": detected}))
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout.splitlines()[-1])

        self.assertEqual(prepare("rocm", "hygon"), ["hygon", None])
        self.assertEqual(prepare("rocm", "amd"), ["amd", None])
        self.assertEqual(prepare("rocm", "nvidia"),
                         ["refused", "--backend (ZL_BACKEND): 'rocm' expects FlagGems vendor "
                          "amd/hygon, but FlagGems dispatches to 'nvidia'"])
        self.assertEqual(prepare("musa", "nvidia"), ["mthreads", "mthreads"])

    def test_list_names_the_trees_ops_for_a_batch(self):
        # one rule for a tree's ops (the C++ side's), as batch --flaggems runs them
        p = subprocess.run([CALIBER_BIN, "list", "--flaggems", ROOT, "--names"],
                           capture_output=True, text=True, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("add", p.stdout.split())
        self.assertNotIn("conftest", p.stdout)
        self.assertIn("custom", p.stdout.split())  # the tree's, not the built-in corpus
        self.assertNotIn("sort", p.stdout.split())
        p = subprocess.run([CALIBER_BIN, "list", "--flaggems", ROOT, "--json"],
                           capture_output=True, text=True, env=env())
        self.assertIn({"op": "add", "file": "benchmark/test_add.py"}, json.loads(p.stdout)["ops"])
        # the ops given, each refused unless the tree has its file (as batch refuses it); a file
        # in a folder of benchmark/ listed where it is
        tree = os.path.join(tmpdir(), "tree")
        standin_copy(tree)
        os.makedirs(os.path.join(tree, "benchmark", "test_sub"))
        shutil.copy(os.path.join(tree, "benchmark", "test_softmax.py"),
                    os.path.join(tree, "benchmark", "test_sub", "test_subsoftmax.py"))
        p = subprocess.run([CALIBER_BIN, "list", "--flaggems", tree, "add", "subsoftmax", "--json"],
                           capture_output=True, text=True, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["ops"],
                         [{"op": "add", "file": "benchmark/test_add.py"},
                          {"op": "subsoftmax", "file": "benchmark/test_sub/test_subsoftmax.py"}])
        p = subprocess.run([CALIBER_BIN, "list", "--flaggems", ROOT, "nosuchop", "--names"],
                           capture_output=True, text=True, env=env())
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("'nosuchop' is not a benchmark of the FlagGems tree", p.stderr)
        for bad in (["--flaggems", STUBS], ["--flaggems", ROOT, "--cases"]):
            p = subprocess.run([CALIBER_BIN, "list", *bad], capture_output=True, text=True,
                               env=env())
            self.assertEqual(p.returncode, 2, p.stdout)
            self.assertEqual(p.stdout, "")

    def test_python_entry_point(self):
        out = tmpdir()
        rc, so, se = run("add", "--dtypes", "f16", "--out", out, python=True)
        self.assertEqual(rc, 0, so + se)
        self.assertEqual(len(one_run(out)[1]), 3)


# Two more files for a copy of the stand-in tree, after FlagGems' benchmark/test_tril.py (two
# tests of one op, `tril_out`, that yield the same sizes: a transposed and a sliced `out`) and its
# test_blas_perf_parallel.py (mm again, beside test_mm.py). test_tril yields its first input twice
# (a within-test duplicate, as mm's B=2 and B=16 at FlagGems' core level).
TRIL = """import pytest
import torch

from . import base


def _pair(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device), torch.randn(shape, dtype=dtype,
                                                                       device=device)


def _twice_first(shape, dtype, device):
    yield _pair(shape, dtype, device)
    if shape == (64, 64):
        yield _pair(shape, dtype, device)


def _out_transposed(shape, dtype, device):
    yield (*_pair(shape, dtype, device), {"alpha": 1})


def _out_sliced(shape, dtype, device):
    yield (*_pair(shape, dtype, device), {"alpha": 1})


def _bench(op, fn):
    base.GenericBenchmark(op_name=op, input_fn=fn, torch_op=torch.add,
                          dtypes=[torch.float32]).run()


@pytest.mark.tril
def test_tril():
    _bench("tril", _twice_first)


@pytest.mark.tril_out
def test_tril_out_transposed():
    _bench("tril_out", _out_transposed)


@pytest.mark.tril_out
def test_tril_out_sliced():
    _bench("tril_out", _out_sliced)
"""
BLAS_PARALLEL = """import pytest
import torch

from . import base
from .test_mm import mm_inputs


@pytest.mark.parametrize("op_name", [pytest.param("mm", marks=pytest.mark.mm)])
def test_blas_benchmark(op_name):
    base.BlasBenchmark(op_name=op_name, input_fn=mm_inputs, torch_op=torch.Tensor.mm,
                       dtypes=[torch.float32]).run()
"""


class RowKeys(unittest.TestCase):
    """A row's key (op, dtype, shape) is the same whatever else the run selected: two tests of
    one op are told apart by the test's name, not by the order they ran in (docs/flaggems.md)."""

    @classmethod
    def setUpClass(cls):
        cls.root = os.path.join(tmpdir(), "tree")
        standin_copy(cls.root)
        # a second file whose first test is tril_out's too: neither file is the op's own
        again = TRIL.replace("def test_tril_out_transposed", "def test_tril_out_again")
        for name, text in (("test_tril.py", TRIL), ("test_blas_parallel.py", BLAS_PARALLEL),
                           ("test_tril_again.py", again)):
            with open(os.path.join(cls.root, "benchmark", name), "w") as f:
                f.write(text)

    def keys(self, *selection):
        """{(op, dtype, shape): the pytest node} of a run of the copy, and its stderr."""
        out = tmpdir()
        p = subprocess.run([PYTHON, "-m", "caliber", "run", "--flaggems", self.root, *selection,
                            "--out", out, "--dtypes", "f32"] + QUICK, capture_output=True,
                           text=True, env=env(), timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cases = one_run(out)[1]
        keys = {(c["op"], c["dtype"], c["shape"]): c["params"]["test"].split("::", 1)[1]
                for c in cases}
        self.assertEqual(len(keys), len(cases), [c["node"] for c in cases])
        return keys, p.stderr

    def test_an_inputs_key_does_not_depend_on_the_selection(self):
        full, err = self.keys("test_tril.py", "test_mm.py", "test_blas_parallel.py")
        self.assertNotIn("depends on what else is selected", err)
        f32 = lambda op: sorted(s for o, d, s in full if o == op)  # noqa: E731
        # test_tril is tril's home test: no suffix; its second 64x64 input is #2
        self.assertEqual(f32("tril"), ["1024x1024_1024x1024", "64x64_64x64", "64x64_64x64#2"])
        # tril_out's first test in the file keeps the plain key, the other carries its name
        self.assertEqual(f32("tril_out"), ["1024x1024_1024x1024_alpha=1",
                                           "1024x1024_1024x1024_alpha=1@test_tril_out_sliced",
                                           "64x64_64x64_alpha=1",
                                           "64x64_64x64_alpha=1@test_tril_out_sliced"])
        # mm has a file of its own (test_mm.py): another file's mm rows carry their test's name
        self.assertEqual(f32("mm"), ["256x512_512x128", "256x512_512x128@test_blas_benchmark",
                                     "64x64_64x64", "64x64_64x64@test_blas_benchmark"])
        for selection in (["test_tril.py::test_tril_out_sliced"],
                          ["test_blas_parallel.py"],
                          ["test_tril.py::test_tril_out_transposed", "test_mm.py"]):
            with self.subTest(selection=selection):
                part, err = self.keys(*selection)
                self.assertTrue(part)
                self.assertNotIn("depends on what else is selected", err)
                for key, test in part.items():
                    self.assertEqual(full.get(key), test, (key, sorted(full)))

    def test_a_key_two_home_tests_share_is_counted_and_said(self):
        # Two files that both hold tril_out's first test, and no test_tril_out.py: the rule
        # cannot tell them apart, so the later gets #2, and the run says that this key depends
        # on the selection.
        keys, err = self.keys("test_tril.py::test_tril_out_transposed",
                              "test_tril_again.py::test_tril_out_again")
        self.assertEqual(keys[("tril_out", "f32", "64x64_64x64_alpha=1#2")], "test_tril_out_again")
        self.assertIn("test_tril_again.py::test_tril_out_again gives tril_out[f32-64x64_64x64_"
                      "alpha=1] as ", err)
        self.assertIn("depends on what else is selected", err)
        self.assertEqual(err.count("depends on what else is selected"), 1, err)


# A generative op after FlagGems' benchmark/test_rand.py: its input is one dict of keyword
# arguments, which record_shapes records as an object in the order of its keys (not sorted).
RAND = """import pytest
import torch

from . import base


def _input_fn(shape, dtype, device):
    yield {"size": shape, "dtype": dtype, "device": device},


@pytest.mark.rand
def test_rand():
    base.GenericBenchmark(op_name="rand", input_fn=_input_fn, torch_op=torch.rand,
                          dtypes=[torch.float32]).run()
"""


class ObjectShapeDetail(unittest.TestCase):
    """A shape detail that is an object keeps FlagGems' key order through the flaggems-log
    export: FlagGems' --compare keys an input by str() of the object (docs/flaggems.md)."""

    def test_the_export_keeps_flaggems_key_order(self):
        root = os.path.join(tmpdir(), "tree")
        standin_copy(root)
        with open(os.path.join(root, "benchmark", "test_rand.py"), "w") as f:
            f.write(RAND)
        out = tmpdir()
        p = subprocess.run([PYTHON, "-m", "caliber", "run", "--flaggems", root, "test_rand.py",
                            "--out", out] + QUICK, capture_output=True, text=True, env=env(),
                           timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        run_dir, cases = one_run(out)[:2]
        self.assertTrue(cases)
        log = os.path.join(tmpdir(), "caliber.log")
        q = subprocess.run([CALIBER_BIN, "export", run_dir, "--format", "flaggems-log", "--out",
                            log], capture_output=True, text=True, env=env())
        self.assertEqual(q.returncode, 0, q.stderr)
        with open(log) as f:
            mine = [json.loads(x[len("[INFO] "):]) for x in f.read().splitlines()]
        with open(os.path.join(run_dir, "flaggems_result.json")) as f:
            record = json.load(f)
        theirs = [json.loads(d) if isinstance(d, str) else d
                  for d in record["rand"]["details"]]
        key = lambda d: [(d["op_name"], d["dtype"], str(r["shape_detail"]))  # noqa: E731
                         for r in d["result"]]
        self.assertEqual([list(r["shape_detail"]) for r in theirs[0]["result"]][0],
                         ["size", "dtype", "device"])
        self.assertEqual([k for d in mine for k in key(d)], [k for d in theirs for k in key(d)])


class Failures(unittest.TestCase):
    def test_a_setup_or_teardown_error_fails_the_run(self):
        for marker, ops in (("setup_error", ["setup_error"]),
                            ("teardown_error", ["teardown_add"] * 3 + ["teardown_error"])):
            out = tmpdir()
            rc, so, se = run(marker, "--out", out)
            self.assertEqual(rc, 1, so + se)  # pytest's "1 error"
            _, cases, _, _ = one_run(out)
            self.assertEqual([c["op"] for c in cases], ops)
            self.assertEqual(cases[-1]["status"], "failed", cases[-1])

    def test_a_failing_shape_fails_its_case_alone(self):
        out = tmpdir()
        rc, so, se = run("flaky_add", "--out", out,
                         extra_env={"STANDIN_ADD_RAISES_AT": str(1024 * 1024)})
        self.assertEqual(rc, 1, so + se)
        d, cases, _, _ = one_run(out)
        self.assertEqual(len(cases), 6, [c["node"] for c in cases])  # 2 dtypes x 3 shapes
        failed = [c for c in cases if c["status"] == "failed"]
        self.assertEqual({(c["dtype"], c["shape"]) for c in failed},
                         {("f16", "1024x1024_1024x1024"), ("f32", "1024x1024_1024x1024")})
        self.assertTrue(all("stand-in gems add fails" in c["error"] for c in failed))
        self.assertEqual(sum(c["status"] == "ok" for c in cases), 4)
        with open(os.path.join(d, "flaggems_result.json")) as f:
            record = json.load(f)
        # the test's own entry says failed, as FlagGems' own run (its loop's pytest.fail) says
        self.assertEqual(record["flaky_add"]["result"], "failed", record["flaky_add"])
        self.assertRegex(record["flaky_add"]["reason"], r"^Failed: ValueError: stand-in gems add fails on "
                         r"1048576 elements \(and 1 more failed shapes\)$")
        metrics = [m for det in record["flaky_add"]["details"] for m in det["result"]]
        self.assertEqual(len(metrics), 6)  # FlagGems' loop would have lost both dtypes
        bad = [m for m in metrics if m["error_msg"]]
        self.assertEqual(len(bad), 2)
        self.assertTrue(all(m["latency"] is None for m in bad))
        self.assertTrue(all(isinstance(m["latency"], float) and math.isfinite(m["latency"])
                            for m in metrics if not m["error_msg"]))

    def test_a_record_a_benchmark_writes_as_text_is_annotated_too(self):
        """FlagGems' int4pack files call conftest's update_result themselves, with the record's
        JSON text: the failed shape's error reaches that record as it reaches base.py's."""
        out = tmpdir()
        rc, so, se = run("convert_weight_to_int4pack", "--out", out,
                         extra_env={"STANDIN_CONVERT_RAISES": "16"})
        self.assertEqual(rc, 1, so + se)
        d, cases, _, _ = one_run(out)
        self.assertEqual(sorted(c["status"] for c in cases), ["failed"] * 2 + ["ok"] * 2)
        with open(os.path.join(d, "flaggems_result.json")) as f:
            (text,) = json.load(f)["convert_weight_to_int4pack"]["details"]
        self.assertIsInstance(text, str)
        metrics = json.loads(text, parse_constant=self.fail)["result"]  # no NaN left in it
        self.assertEqual([bool(m["error_msg"]) for m in metrics], [True, True, False, False])
        self.assertTrue(all("int4pack fails on 16 rows" in m["error_msg"] for m in metrics[:2]))
        self.assertTrue(all(m["latency"] is None for m in metrics[:2]))


class RetimeUnderGems(unittest.TestCase):
    """One regime per row times a provider again when the row is written, after its get_latency
    and outside the use_gems it was timed in (fed_run's one_regime: the graph timer, so never on
    the cpu backend CI runs). The launch the session hands the timers enters a use_gems of the
    same arguments for such a call, leaves it for torch's, and the row's writing ends it."""

    def test_a_gems_call_made_again_outside_use_gems_runs_gems(self):
        snippet = r'''
import json, sys, torch, flag_gems
from caliber import flaggems
s = flaggems.Session(None, {"backend": "cpu", "flaggems": sys.argv[1], "host": True})
s.flag_gems = flag_gems
s._wrap_use_gems(flag_gems)
seen = []
def gems_fn(): seen.append(["gems", sorted(torch._gems_ops)])
def torch_fn(): seen.append(["torch", sorted(torch._gems_ops)])
with flag_gems.use_gems(exclude=["fft"]):
    g = s._launcher(gems_fn, None)
    g()  # timed where get_latency timed it
t = s._launcher(torch_fn, None)
t()
g(); g(); t(); g()  # the row's re-timing, outside use_gems
s._end_retime_gems()
print(json.dumps({"seen": seen, "after": sorted(torch._gems_ops), "depth": s.gems_depth}))
'''
        e = env()
        e["PYTHONPATH"] = os.pathsep.join([STUBS, os.path.join(ROOT, "src"), e["PYTHONPATH"]])
        p = subprocess.run([PYTHON, "-c", snippet, ROOT], capture_output=True, text=True, env=e,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout.splitlines()[-1])
        ops = ["add", "mm", "softmax"]  # use_gems(exclude=["fft"]) again, as it was entered
        self.assertEqual(got["seen"], [["gems", ops], ["torch", []], ["gems", ops], ["gems", ops],
                                       ["torch", []], ["gems", ops]])
        self.assertEqual((got["after"], got["depth"]), ([], 0))


class DryRun(unittest.TestCase):
    def test_dry_run_says_what_the_selection_holds_and_writes_nothing(self):
        out = tmpdir()
        code, so, se = run("--dry-run", "--out", out)
        self.assertEqual(code, 0, so + se)
        self.assertIn("caliber run --dry-run: FlagGems at %s" % ROOT, so)
        self.assertIn("nothing is run or written", so)
        self.assertRegex(so, r"\n  add: [1-9][0-9]* in benchmark/test_add\.py\n")
        self.assertRegex(so, r"\n  [1-9][0-9]* benchmarks of [1-9][0-9]* ops ")
        self.assertEqual(run_dirs(out), [], so)
        self.assertFalse(os.path.exists(out) and os.listdir(out), so)
        code, so, se = run("add", "--dry-run", "--out", out)
        self.assertEqual(code, 0, so + se)
        self.assertIn("1 benchmark of 1 op", so)
        # The selection is still checked: a bad op is refused as a real run refuses it.
        code, so, se = run("nosuchop", "--dry-run", "--out", out)
        self.assertEqual(code, 2, so + se)
        self.assertIn("OP: 'nosuchop' is neither", se)
        self.assertEqual(run_dirs(out), [])


class BadInput(unittest.TestCase):
    def refused(self, args, needle, extra_env=None, root=ROOT):
        out = tmpdir()
        cmd = [CALIBER_BIN, "run", "--flaggems", root] + args + ["--out", out] + QUICK
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(extra_env), timeout=600)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(needle, p.stderr)
        self.assertEqual(run_dirs(out), [], p.stdout)
        self.assertNotIn("_pytest", p.stdout + p.stderr)  # pytest's banner of its exit
        return p.stderr

    def test_not_a_flaggems_checkout(self):
        self.refused([], "--flaggems: '%s' is not a FlagGems checkout" % STUBS, root=STUBS)
        self.refused([], "does not exist", root=os.path.join(ROOT, "nope"))

    def test_flaggems_does_not_import(self):
        err = self.refused([], "no module named 'sqlalchemy_standin_missing'",
                           extra_env={"STANDIN_BREAK_IMPORT": "1"})
        self.assertIn(PYTHON, err)

    def test_unknown_op_or_node(self):
        self.refused(["nosuchop"], "OP: 'nosuchop' is neither")
        self.refused(["--node", "test_add.py::test_nope"], "--node (TEST_NODE): 'test_add.py::")
        self.refused(["--node", "test_nope.py"], "--node (TEST_NODE): 'test_nope.py': no such")
        # as OP, alone, beside a file, beside a marker (the whole tree collected, then picked)
        for args in (["test_add.py::test_add[x]"], ["softmax", "test_add.py::test_add[x]"],
                     ["softmax_backward", "test_add.py::test_nope"]):
            self.refused(args, "OP: '%s': no such test under %s/benchmark" % (args[-1], ROOT))

    def test_a_selection_path_outside_the_tree_or_not_a_test_file(self):
        """A test file of another tree would run against this tree's flag_gems under this tree's
        name; a file that is no test reached pytest as an argument it does not know."""
        other = os.path.join(tmpdir(), "other")
        os.makedirs(os.path.join(other, "benchmark"))
        theirs = os.path.join(other, "benchmark", "test_add.py")
        with open(os.path.join(ROOT, "benchmark", "test_add.py")) as f, open(theirs, "w") as g:
            g.write(f.read())
        allowed = "allowed is a test file (test_*.py) under %s/benchmark" % ROOT
        for args, knob in (([theirs], "OP"), (["--node", theirs + "::test_add"], "--node (TEST_NODE)"),
                           (["--op-file", theirs], "--op-file (OP_FILE)")):
            err = self.refused(args, "%s: '%s" % (knob, theirs))
            self.assertIn("is outside the tree's benchmark folder: " + allowed, err)
        err = self.refused(["../../../../../../../../etc/passwd"], "OP: '../../../../../../../../etc/passwd' is")
        self.assertIn(allowed, err)
        self.refused(["benchmark/base.py"], "OP: 'benchmark/base.py' is not a test file: " + allowed)

    def test_a_shapes_overlay_is_checked_before_anything_runs(self):
        """--shapes: the overlay's structure, each dimension, and each op against the selection
        (known after the collection, still before the run opens)."""
        form = "allowed: a mapping of FlagGems op names"
        for text, needle in (
                ("ops: {softmax: [32, 48]}", "'softmax': 32 is not a shape"),
                ("ops: {softmax: [[32, x]]}", "'softmax': dimension 'x' is not an integer >= 0"),
                ("ops: {softmax: [[-1, 0]]}", "'softmax': dimension -1 is not an integer >= 0"),
                ("ops: {softmax: []}", "'softmax': [] is not a list of shapes"),
                ("- [32, 48]\n", "the file holds a list, not a mapping"),
                ("ops: {add: {family: pointwise}}", "'add': {family: ...} is caliber's own shape file"),
                ("families: {pointwise: [[4]]}\nops: {softmax: [[4, 4]]}", "'families' beside 'ops'"),
                ("ops: {softmax: {shape: [[4, 4]]}}", "'softmax': 'shape' is not read")):
            mine = os.path.join(tmpdir(), "bad.yaml")
            with open(mine, "w") as f:
                f.write(text)
            err = self.refused(["softmax", "--shapes", mine], "--shapes: '%s': %s" % (mine, needle))
            self.assertIn(form, err)
        mine = os.path.join(tmpdir(), "other.yaml")
        with open(mine, "w") as f:
            f.write("ops: {add: [[4, 4]]}\n")
        err = self.refused(["softmax", "--shapes", mine], "--shapes: '%s': 'add' is no op or "
                           "benchmark class of the selected benchmarks" % mine)
        self.assertIn("e.g. softmax", err)
        self.refused(["softmax", "--shapes", mine, "--dry-run"], "'add' is no op")
        # an op of the selection, its backward key, and a class its benchmarks derive from pass
        with open(mine, "w") as f:
            f.write("ops: {softmax backward: [[4, 4]], add: [[4, 4]], BinaryPointwiseBenchmark: [[4, 4]]}\n")
        code, so, se = run("softmax", "add", "--shapes", mine, "--dry-run")
        self.assertEqual(code, 0, so + se)

    def test_shapes_with_shape_mode_upstream(self):
        """upstream never reads the overlay: refused, not recorded as overlaid."""
        mine = os.path.join(tmpdir(), "shapes.yaml")
        with open(mine, "w") as f:
            f.write("ops: {softmax: [[32, 48]]}\n")
        self.refused(["softmax", "--shapes", mine], "--shapes: '%s' is overlaid with --shape-mode file only; "
                     "--shape-mode (SHAPE_MODE) is 'upstream'" % mine, extra_env={"SHAPE_MODE": "upstream"})

    def test_a_refusal_or_a_collection_error_without_pytests_report(self):
        out = tmpdir()
        p = subprocess.run([CALIBER_BIN, "run", "--flaggems", ROOT, "nosuchop", "--out", out] + QUICK,
                           capture_output=True, text=True, env=env(), timeout=600)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.splitlines()[0][:len("caliber: OP: 'nosuchop'")], "caliber: OP: 'nosuchop'")
        # a file that does not import: pytest's traceback still reaches the user, then the refusal
        tree = os.path.join(tmpdir(), "tree")
        standin_copy(tree)
        with open(os.path.join(tree, "benchmark", "test_broken.py"), "w") as f:
            f.write("import no_such_module_x\n\n\ndef test_broken():\n    pass\n")
        for dry in ([], ["--dry-run"]):
            err = self.refused(["broken"] + dry, "pytest could not collect the selection: E   "
                               "ModuleNotFoundError: No module named 'no_such_module_x'", root=tree)
            self.assertIn("caliber: flaggems: pytest could not collect benchmark/test_broken.py:", err)
            self.assertIn("test_broken.py:1: in <module>\n    import no_such_module_x", err)

    def test_modes_and_parallel_refused(self):
        self.refused(["--mode", "operator"], "--mode: 'operator' is a host wall clock")
        self.refused(["--mode", "wrapper"], "--mode: 'wrapper' is a host wall clock")
        self.refused(["--mode", "bogus"], "allowed: kernel, cudagraph")
        self.refused(["--parallel", "8"], "--parallel: '8' is refused")
        self.refused(["--mode", "cudagraph", "--l2", "cold"], "--l2 cold contradicts it")
        # --shape would be recorded and not used: FlagGems' benchmarks make their own shapes
        self.refused(["add", "--shape", "8x8"], "is not run with --shape")
        # nor caliber's tuner's screening: LibTuner sweeps every config whatever it says
        self.refused(["add", "--tune-screen", "off"], "is not run with --tune-screen off")

    def test_an_edited_checkout_is_told_from_its_commit(self):
        """A FlagGems checkout run as committed, then with a tracked file of flag_gems edited:
        the same commit both times, but the identity's source digest differs and says dirty."""
        tree = os.path.join(tmpdir(), "tree")
        standin_copy(tree)
        git = ["git", "-C", tree, "-c", "user.name=t", "-c", "user.email=t@t",
               "-c", "commit.gpgsign=false"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "stand-in"]):
            subprocess.run(git + args, check=True, capture_output=True)
        idents = []
        for edit in (False, True):
            if edit:
                with open(os.path.join(tree, "src", "flag_gems", "__init__.py"), "a") as f:
                    f.write("\n# an edit not yet committed\n")
            out = tmpdir()
            p = subprocess.run([CALIBER_BIN, "run", "--flaggems", tree, "add", "--out", out]
                               + QUICK, capture_output=True, text=True, env=env(), timeout=900)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            idents.append(one_run(out)[3]["flaggems"])
        clean, edited = idents
        self.assertEqual(clean["commit"], edited["commit"])
        self.assertRegex(clean["commit"], r"^[0-9a-f]{40}$")
        self.assertEqual((clean["source"]["dirty"], edited["source"]["dirty"]), (False, True))
        self.assertNotEqual(clean["source"]["sha256"], edited["source"]["sha256"])
        self.assertEqual(clean["source"]["files"], edited["source"]["files"])

    def test_the_runs_seed_seeds_torch(self):
        """--seed (else the run's fresh seed, in run_identity.json) seeds torch once, when the
        run opens, before FlagGems makes an input."""
        for given in ("1234", None):
            log = os.path.join(tmpdir(), "seeds")
            out = tmpdir()
            rc, so, se = run("add", "--out", out, *(["--seed", given] if given else []),
                             extra_env={"STANDIN_SEED_LOG": log})
            self.assertEqual(rc, 0, so + se)
            _, _, _, ident = one_run(out)
            with open(log) as f:
                self.assertEqual(f.read().split(), [str(ident["seed"])])
            if given:
                self.assertEqual(ident["seed"], int(given))

    def test_an_interpreter_without_pytest(self):
        bare = os.path.join(tmpdir(), "nopytest")
        os.makedirs(os.path.join(bare, "pytest"))
        with open(os.path.join(bare, "pytest", "__init__.py"), "w") as f:
            f.write("raise ImportError('no pytest here', name='pytest')\n")
        err = self.refused([], "--flaggems: FlagGems' benchmark suite runs under pytest",
                           extra_env={"PYTHONPATH": bare + os.pathsep + STUBS + os.pathsep +
                                      ENV.get("PYTHONPATH", "")})
        self.assertIn("cannot import pytest", err)

    def test_vendor_mismatch(self):
        # the knob at fault is GEMS_VENDOR, which asked for the vendor, not --backend cpu
        err = self.refused([], "GEMS_VENDOR: 'mthreads' asks FlagGems for vendor mthreads, but FlagGems "
                           "dispatches to 'nvidia'",
                           extra_env={"GEMS_VENDOR": "mthreads", "STANDIN_FORCE_VENDOR": "nvidia"})
        self.assertNotIn("--backend", err)

    def test_mode_needs_flaggems(self):
        out = tmpdir()
        p = subprocess.run([CALIBER_BIN, "run", "--mode", "kernel", "--out", out] + QUICK,
                           capture_output=True, text=True, env=env())
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("--mode: 'kernel' is FlagGems' measurement mode; it needs --flaggems",
                      p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
