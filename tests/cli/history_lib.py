"""Synthetic history points for tests/cli/test_history.sh: copies of one real run directory (its
run_identity.json, header and footer as caliber wrote them), each with its own start time and, per
provider, fresh samples drawn around a fixed latency from a seeded generator, so no verdict
depends on the machine the test runs on. One (row, provider, point) can be planted slower.

    python3 history_lib.py SEED_RUN OUT_DIR POINTS [--plant NODE:PROVIDER:POINT:FACTOR]
"""

import argparse
import json
import os
import random
import shutil


def synth_samples(rng, latency_ms, n=60, rel_sd=0.005):
    return [latency_ms * (1.0 + rng.gauss(0.0, rel_sd)) for _ in range(n)]


def write_point(seed_run, out, index, plant):
    name = "hist-20261201-10%02d%02d" % (index // 60, index % 60)
    dst = os.path.join(out, name)
    shutil.copytree(seed_run, dst)
    ident_path = os.path.join(dst, "run_identity.json")
    with open(ident_path) as f:
        ident = json.load(f)
    ident["start_time"] = "2026-12-01T10:%02d:%02dZ" % (index // 60, index % 60)
    with open(ident_path, "w") as f:
        json.dump(ident, f, indent=1)
    rng = random.Random(1000 + index)
    lines = []
    with open(os.path.join(dst, "run.log")) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("type") == "case" and row.get("status", "ok") == "ok":
                for k, p in enumerate(row.get("providers", [])):
                    base = 0.1 * (1 + k) * (1 + len(row["node"]) % 7)  # fixed per row/provider
                    if plant and plant[0] == row["node"] and plant[1] == p["name"] and \
                            index >= plant[2]:
                        base *= plant[3]
                    p["samples_ms"] = synth_samples(rng, base)
                    p["latency_ms"] = sorted(p["samples_ms"])[len(p["samples_ms"]) // 2]
            lines.append(json.dumps(row))
    with open(os.path.join(dst, "run.log"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seed_run")
    ap.add_argument("out")
    ap.add_argument("points", type=int)
    ap.add_argument("--plant", default="")
    a = ap.parse_args()
    plant = None
    if a.plant:
        node, prov, at, factor = a.plant.rsplit(":", 3)
        plant = (node, prov, int(at), float(factor))
    os.makedirs(a.out, exist_ok=True)
    for i in range(1, a.points + 1):
        write_point(a.seed_run, a.out, i, plant)


if __name__ == "__main__":
    main()
