#!/usr/bin/env bash
# --profile: each case and provider launched a fixed number of times inside a range named
# <node>/<provider> (NVTX on cuda; on the cpu backend the ranges are no-ops, the row still says
# which range and how many launches), nothing timed, the run marked profile, and compare (and the
# A/B report) refuse it with exit 2.
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"

"$CAL" run add mm --backend cpu --profile --out "$T/p" --name p > "$T/p.txt" 2>&1 || fatal "profile run: $(tail -3 "$T/p.txt")"
P=$(only_run_dir "$T/p")
python3 - "$P" 3 <<'PY' || check_fail "the profile run's files"
import json, sys
d, launches = sys.argv[1], int(sys.argv[2])
ident = json.load(open(d + "/run_identity.json"))
assert ident["profile"] is True and ident["profile_launches"] == launches, ident
assert "peaks" not in ident, "a profile run measured peaks"
rows = [json.loads(l) for l in open(d + "/run.log") if json.loads(l)["type"] == "case"]
assert len(rows) >= 4, len(rows)
for r in rows:
    assert r["status"] == "ok", r
    assert "latency_ms" not in r and "speedup" not in r, r
    assert r["providers"], r
    for p in r["providers"]:
        assert p["range"] == r["node"] + "/" + p["name"], p
        assert p["launches"] == launches, p
        assert "samples_ms" not in p and "latency_ms" not in p, p
PY
grep -q 'profile mode: 3 launch' "$T/p.txt" || check_fail "the run does not say it is a profile run"

"$CAL" run add --backend cpu --profile=7 --out "$T/p7" > /dev/null 2>&1 || check_fail "--profile=7"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["profile_launches"] == 7' \
  "$(only_run_dir "$T/p7")/run_identity.json" || check_fail "--profile=7 did not launch 7 times"

"$CAL" run add "${FAST[@]}" --out "$T/t" > /dev/null 2>&1 || fatal "timed run"
R=$(only_run_dir "$T/t")
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["profile"] is False' \
  "$R/run_identity.json" || check_fail "a timed run is marked profile"
expect_refused "compare of a profile run" "profile --profile" -- "$CAL" compare "$R" "$P"
expect_refused "compare of a profile run (A)" "profile" -- "$CAL" compare "$P" "$R"
expect_refused "A/B report of a profile run" "profile" -- \
  "$CAL" report --ab "$R" "$P" --html "$T/refused-out/x.html"
expect_refused "--profile=0" "--profile 0" -- "$CAL" run add --backend cpu --profile=0 --out "$T/refused-out"
"$CAL" export "$P" --format csv > "$T/p.csv" 2> /dev/null || check_fail "export of a profile run"
cli_done
