#!/usr/bin/env python3
"""Writes the synthetic A/B directories the golden-output test reads (tests/cli/test_golden.sh).

Every number is fixed here, so what compare prints for them is the same on every machine: no
timing, no random draw. Run it from anywhere to rewrite the fixtures beside it; then re-bless the
expected outputs (CALIBER_BLESS=1, docs/ab.md "Reading the pairs table").

  paired/  two paired rounds (one process a round, A and B block by block, the crossover): the
           ratio_of "blocks" rows, whose ratio differs from the medians' quotient on purpose
  isolate/ the same two builds, a process per side and round: the ratio_of "medians" rows
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_A, LIB_B = "/opt/ops/before/libmine.so", "/opt/ops/after/libmine.so"


def identity(side, rnd, paired):
    ident = {
        "schema": 1, "backend": "cpu", "level": "core", "timer": "direct", "tune": "off",
        "repeat": 1, "l2": "cold", "clock": "sustained", "shape_mode": "file",
        "caliber_version": "0.1.0", "git_commit": "0123456789ab",
        "start_time": "2026-12-01T12:00:0%dZ" % rnd,
        "device": {"index": 0, "physical_id": "0", "name": "AMD EPYC", "uuid": ""},
        "ops_libs": [LIB_A if side == "A" else LIB_B],
        # a loaded host in round 1 of both sides: the warning, printed once
        "host_load": {"start": {"cores": 2, "load1": 3.5 if rnd == 1 else 0.5},
                      "end": {"cores": 2, "load1": 0.5}},
    }
    if paired:
        ident["paired"] = {"id": "round-%d" % rnd, "side": side, "blocks": 8, "crossover": True}
    return ident


def samples(center, n, step):
    """n samples spread evenly over center * (1 +/- step * n / 2), a fixed pattern."""
    return [round(center * (1 + step * (k - (n - 1) / 2)), 6) for k in range(n)]


def provider(name, role, samp, blocks, paired):
    med = sorted(samp)[len(samp) // 2]
    p = {"name": name, "role": role, "latency_ms": med, "samples_ms": samp, "markers": []}
    if paired:
        p.update({"block_medians_ms": blocks, "paired_blocks": len(blocks), "paired_phases": 2,
                  "paired_method": "blocks"})
    return p


def row(op, shape, cand, base, paired):
    provs = [provider("mine", "candidate", *cand, paired), provider("vendor", "baseline", *base, paired)]
    return {"type": "case", "op": op, "dtype": "f32", "shape": shape, "family": "pointwise",
            "node": "%s[f32-%s]" % (op, shape), "status": "ok", "timer": "direct", "markers": [],
            "repeat": 1, "providers": provs, "latency_ms": provs[0]["latency_ms"],
            "latency_base_ms": provs[1]["latency_ms"], "accuracy": True,
            "speedup": provs[1]["latency_ms"] / provs[0]["latency_ms"]}


# Per side and round: (candidate samples, candidate blocks), (baseline samples, baseline blocks).
# add: B's candidate 8% slower in every block; its samples pooled over the rounds say more (round
# 2 of B ran slow throughout), so ratio (blocks) and median_b / median_a disagree, as labelled.
# scale: the same code on both sides.
def rows(side, rnd, paired):
    slow = 1.08 if side == "B" else 1.0
    drift = 1.06 if side == "B" and rnd == 2 else 1.0
    blocks_a = [0.100, 0.101, 0.099, 0.100, 0.102, 0.098, 0.100, 0.101]
    add_c = samples(0.100 * slow * drift, 40, 0.001)
    add_cb = [round(b * slow, 6) for b in blocks_a]
    add_b = samples(0.200, 40, 0.001)
    add_bb = [round(2 * b, 6) for b in blocks_a]
    sc = samples(0.050, 40, 0.002)
    sc_b = [round(b / 2, 6) for b in blocks_a]
    return [row("add", "1048576", (add_c, add_cb), (add_b, add_bb), paired),
            row("scale", "65536", (sc, sc_b), (samples(0.060, 40, 0.002), sc_b), paired)]


def write(kind):
    paired = kind == "paired"
    ab = os.path.join(HERE, kind, "ab-20261201-120000")
    shutil.rmtree(os.path.join(HERE, kind), ignore_errors=True)
    os.makedirs(ab)
    cfg = {"rounds": 2, "paired": paired, "blocks": 8 if paired else 0, "crossover": paired,
           "ops": ["add", "scale"], "run_args": ["--backend=cpu"],
           "a": {"switch": "--ops-lib=" + LIB_A, "args": ["--ops-lib=" + LIB_A]},
           "b": {"switch": "--ops-lib=" + LIB_B, "args": ["--ops-lib=" + LIB_B]}}
    with open(os.path.join(ab, "ab.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    for rnd in (1, 2):
        for side in "AB":
            d = os.path.join(ab, "%s-%d-20261201-12000%d" % (side, rnd, rnd))
            os.makedirs(d)
            ident = identity(side, rnd, paired)
            with open(os.path.join(d, "run_identity.json"), "w") as f:
                json.dump(ident, f, indent=2, sort_keys=True)
                f.write("\n")
            body = [dict(ident, type="header")] + rows(side, rnd, paired) + [
                {"type": "footer", "cases": 2}]
            with open(os.path.join(d, "run.log"), "w") as f:
                for line in body:
                    f.write(json.dumps(line, sort_keys=True) + "\n")


if __name__ == "__main__":
    for k in ("paired", "isolate"):
        write(k)
