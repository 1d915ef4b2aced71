"""The stand-in's summary, shaped like FlagGems' benchmark/summary_for_plot.py: it reads the
"[INFO] {json}" lines of a `--record log` file (one per op and dtype), averages each op's speedup
per dtype over its inputs without an error_msg, and prints one line per op; `--compare B` keys
B's latencies by (op, dtype, str(shape_detail)), gives each input of A B's latency over A's and
adds those averages as comp_* columns.
Run as FlagGems runs it: `python -m benchmark.summary_for_plot LOG` from the tree's root."""

import argparse
import json

from .consts import BenchmarkMetrics, BenchmarkResult

COLUMNS = {"torch.float16": "float16", "torch.float32": "float32", "torch.bfloat16": "bfloat16",
           "torch.int16": "int16", "torch.int32": "int32", "torch.bool": "bool",
           "torch.complex64": "cfloat"}


def parse_log(path):
    """Every record of the log: a line that is not JSON, or lacks a field FlagGems reads by
    name, raises as FlagGems' own parser does."""
    out = []
    with open(path) as f:
        for line in f.read().strip().split("\n"):
            if not line.startswith("[INFO] {"):
                continue
            data = json.loads(line[len("[INFO] "):])
            metrics = []
            for m in data["result"]:
                metric = BenchmarkMetrics(shape_detail=m.get("shape_detail", []),
                                          latency_base=m.get("latency_base"),
                                          latency=m.get("latency"), speedup=m.get("speedup"),
                                          tflops=m.get("tflops"), error_msg=m.get("error_msg"))
                metric.compared_speedup = None
                metrics.append(metric)
            out.append(BenchmarkResult(op_name=data["op_name"], dtype=data["dtype"],
                                       mode=data["mode"], level=data["level"], result=metrics))
    return out


def key(op, dtype, shape):
    return (op, dtype, str(shape))


def average(metrics, field):
    values = [getattr(m, field) for m in metrics
              if getattr(m, field) is not None and m.error_msg is None]
    return sum(values) / len(values) if values else 0.0


def summary(results, compare):
    """One line per op: the average speedup per dtype column, with --compare then the average
    compared speedup per dtype column (comp_*), and whether every input passed."""
    table = {}
    for r in results:
        row = table.setdefault(r.op_name, {"passed": True})
        row["passed"] = row["passed"] and all(m.error_msg is None for m in r.result)
        column = COLUMNS.get(r.dtype, "float16")
        row[column] = average(r.result, "speedup")
        row["comp_" + column] = average(r.result, "compared_speedup")
    columns = list(COLUMNS.values()) + (["comp_" + c for c in COLUMNS.values()] if compare else [])
    print("%-30s %s all_tests_passed" % ("op_name", " ".join("%-12s" % c for c in columns)))
    for op in sorted(table):
        print("%-30s %s %s" % (op, " ".join("%-12.6f" % table[op].get(c, 0.0) for c in columns),
                               "yes" if table[op]["passed"] else "no"))


def main():
    ap = argparse.ArgumentParser(description="Parse benchmark log file.")
    ap.add_argument("log_file_path")
    ap.add_argument("--compare", "-c", default="")
    a = ap.parse_args()
    results = parse_log(a.log_file_path)
    if a.compare:
        other = {key(r.op_name, r.dtype, m.shape_detail): m.latency
                 for r in parse_log(a.compare) for m in r.result}
        for r in results:
            for m in r.result:
                m.compared_speedup = other.get(key(r.op_name, r.dtype, m.shape_detail), 0) / m.latency
    summary(results, bool(a.compare))


if __name__ == "__main__":
    main()
