#!/usr/bin/env bash
# Record, replay and eviction on the cpu backend's tunable mm: a replay gives the recorded configs
# exactly; a key the recording lacks is reported on the row and never tuned; a replayed config that
# fails at launch cannot be evicted from its read-only source, so the row carries
# compile_tune_no_evict; in live mode the same bad config is evicted and the key retuned.
set -u
CAL=$1
if ! "$CAL" list --names --backend cpu 2>/dev/null | grep -qx mm; then
  echo "FAIL: caliber list shows no host mm"; exit 1  # a broken list fails, it does not skip
fi
T=$(mktemp -d); trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset CALIBER_CPU_VISIBLE_DEVICES CALIBER_CPU_DEVICES PARALLEL_WARMUP_GPUS CALIBER_TUNE_CACHE OP \
  OP_FILE TEST_NODE REPLAY_FROM BENCH_LEVEL CALIBER_SEED
export XDG_CACHE_HOME="$T/xdg"
FAST=(--backend cpu --min-samples 3 --min-time 0 --warmup 0)
one_dir() { ls -d "$1"/*/ 2>/dev/null | head -1; }
footer() { grep '"type":"footer"' "$1/run.log"; }
# node -> candidate config, one "node config" line per case, sorted.
configs() {
  grep '"type":"case"' "$1/run.log" |
    jq -r '.node + " " + ([.providers[] | select(.role == "candidate") | .config] | join(","))' | sort
}
sources() {
  grep '"type":"case"' "$1/run.log" | jq -r '.providers[] | select(.role == "candidate") | .tune.source'
}

# Record (isolated from the shared cache) then replay.
"$CAL" run mm --tune record --tune-cache "$T/shared.db" --out "$T/rec" "${FAST[@]}" > "$T/rec.txt" 2>&1 ||
  fail "record run exited $?: $(cat "$T/rec.txt")"
REC=$(one_dir "$T/rec")
[ -s "$REC/tune.db" ] || fail "record run left no tune.db"
[ ! -e "$T/shared.db" ] || fail "record mode wrote the shared cache"
[ "$(sources "$REC" | sort -u)" = tuned ] || fail "record run did not tune every key: $(sources "$REC")"
[ "$(jq -r .tune "$REC/run_identity.json")" = record ] || fail "identity lacks the record mode"

"$CAL" run mm --replay-from "$REC" --tune-cache "$T/shared.db" --out "$T/rep" "${FAST[@]}" \
  > "$T/rep.txt" 2>&1 || fail "replay run exited $?: $(cat "$T/rep.txt")"
REP=$(one_dir "$T/rep")
[ -n "$(configs "$REC")" ] || fail "no configs recorded"
diff <(configs "$REC") <(configs "$REP") > "$T/diff.txt" || fail "replay changed configs: $(cat "$T/diff.txt")"
[ "$(sources "$REP" | sort -u)" = replay ] || fail "replay rows: $(sources "$REP" | sort -u)"
[ "$(footer "$REP" | jq .tune.keys_tuned)" = 0 ] || fail "replay tuned: $(footer "$REP" | jq -c .tune)"
[ "$(jq -r .tune "$REP/run_identity.json")" = replay ] || fail "identity lacks the replay mode"
[ ! -e "$T/shared.db" ] || fail "replay wrote the shared cache"

# REPLAY_FROM spells the same thing.
REPLAY_FROM="$REC" "$CAL" run mm --tune-cache "$T/shared.db" --out "$T/rep-env" "${FAST[@]}" \
  > "$T/rep-env.txt" 2>&1 || fail "REPLAY_FROM run exited $?"
diff <(configs "$REC") <(configs "$(one_dir "$T/rep-env")") > /dev/null || fail "REPLAY_FROM changed configs"

# Replay at a level whose extra shapes were never recorded: reported on the row, not tuned.
"$CAL" run mm --level comprehensive --replay-from "$REC" --out "$T/miss" "${FAST[@]}" \
  > "$T/miss.txt" 2>&1 || fail "replay with missing keys exited $?: $(cat "$T/miss.txt")"
MISS=$(one_dir "$T/miss")
n_missing=$(sources "$MISS" | grep -cx replay-missing)
[ "$n_missing" -gt 0 ] || fail "no row reports replay-missing: $(sources "$MISS" | sort | uniq -c)"
[ "$(sources "$MISS" | grep -cx replay)" -gt 0 ] || fail "the recorded keys were not replayed"
[ "$(footer "$MISS" | jq .tune.keys_tuned)" = 0 ] || fail "a missing key was tuned"
[ "$(footer "$MISS" | jq .tune.sweep_s)" = 0 ] || fail "a sweep ran in replay mode"
grep '"type":"case"' "$MISS/run.log" |
  jq -e -s '[.[].providers[] | select(.tune.source == "replay-missing") | .tune.note] |
            all(test("no recorded config"))' > /dev/null || fail "replay-missing rows do not say why"

# scripts/quickstart installs the sqlite3 shell: without it the eviction checks cannot run.
command -v sqlite3 > /dev/null || fail "no sqlite3 shell for the eviction checks (apt-get install sqlite3)"

# A record resumed from REC (--tune record --replay-from): REC's keys come from the run's own
# tune.db, only the comprehensive level's extra keys are tuned, REC is only read, and a replay
# of the resumed run misses nothing.
rec_rows=$(sqlite3 "$REC/tune.db" "select count(*) from tune_configs")
"$CAL" run mm --level comprehensive --tune record --replay-from "$REC" --tune-cache "$T/shared.db" \
  --out "$T/res" "${FAST[@]}" > "$T/res.txt" 2>&1 || fail "resumed record exited $?: $(cat "$T/res.txt")"
RES=$(one_dir "$T/res")
[ "$(sources "$RES" | sort -u | tr '\n' ' ')" = "cache tuned " ] ||
  fail "a resumed record should take REC's keys and tune the rest: $(sources "$RES" | sort | uniq -c)"
# The keys REC lacks (dtype and key: several rows can share a bucketed key) are the keys tuned.
keys_missing=$(grep '"type":"case"' "$MISS/run.log" |
  jq -r '.dtype as $d | .providers[] | select(.tune.source == "replay-missing") | $d + " " + .tune.key' |
  sort -u | wc -l)
[ "$(footer "$RES" | jq .tune.keys_tuned)" = "$keys_missing" ] ||
  fail "the resumed record tuned $(footer "$RES" | jq .tune.keys_tuned) keys, REC lacked $keys_missing"
[ "$(sqlite3 "$REC/tune.db" "select count(*) from tune_configs")" = "$rec_rows" ] || fail "REC was modified"
[ ! -e "$T/shared.db" ] || fail "a resumed record wrote the shared cache"
"$CAL" run mm --level comprehensive --replay-from "$RES" --out "$T/rep2" "${FAST[@]}" > "$T/rep2.txt" 2>&1 ||
  fail "replay of the resumed record exited $?"
[ "$(sources "$(one_dir "$T/rep2")" | sort -u)" = replay ] || fail "the resumed record misses keys"

# A recorded config the host mm rejects at launch: f64 tiles over the 512 KiB tile budget.
BAD=tm=64,tn=256,tk=256
KEY="dtype = 'f64' and key = 'M=128,N=128,K=128'"
mkdir -p "$T/bad"
cp "$REC/tune.db" "$T/bad/tune.db"
sqlite3 "$T/bad/tune.db" "update tune_configs set config = '$BAD' where $KEY"
[ "$(sqlite3 "$T/bad/tune.db" "select count(*) from tune_configs where $KEY")" = 1 ] ||
  fail "the recording has no f64 M=128 key to spoil"
chmod -R a-w "$T/bad"
"$CAL" run mm --replay-from "$T/bad" --out "$T/noevict" "${FAST[@]}" > "$T/noevict.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "replay of a failing config exited $rc, expected 1: $(cat "$T/noevict.txt")"
NE=$(one_dir "$T/noevict")
row=$(grep '"type":"case"' "$NE/run.log" | jq -c 'select(.node == "mm[f64-M128-N128-K128]")')
[ -n "$row" ] || fail "no row for mm[f64-M128-N128-K128]"
jq -e '.markers | index("compile_tune_no_evict")' <<< "$row" > /dev/null ||
  fail "the row lacks compile_tune_no_evict: $row"
[ "$(jq -r .status <<< "$row")" = failed ] || fail "a config that cannot run gave status $(jq -r .status <<< "$row")"
grep -q 'could not be evicted' "$T/noevict.txt" || fail "the log claims nothing about the eviction"
[ "$(sqlite3 "$T/bad/tune.db" "select config from tune_configs where $KEY")" = "$BAD" ] ||
  fail "the read-only source was modified"
[ "$(footer "$NE" | jq .tune.keys_tuned)" = 0 ] || fail "replay fell back to tuning"
# The other rows are untouched by one bad record.
others=$(grep '"type":"case"' "$NE/run.log" | jq -r 'select(.node != "mm[f64-M128-N128-K128]") | .status' | sort -u)
[ "$others" = ok ] || fail "other rows: $others"
if grep '"type":"case"' "$NE/run.log" | jq -r 'select(.node != "mm[f64-M128-N128-K128]") | .markers[]' |
  grep -q no_evict; then
  fail "a row without a bad config carries no_evict"
fi

# Live mode: the same bad config in the shared cache is evicted and the key retuned.
"$CAL" run mm --tune-cache "$T/live.db" --out "$T/live1" "${FAST[@]}" > "$T/live1.txt" 2>&1 ||
  fail "live run exited $?"
sqlite3 "$T/live.db" "update tune_configs set config = '$BAD' where $KEY"
"$CAL" run mm --tune-cache "$T/live.db" --out "$T/live2" "${FAST[@]}" > "$T/live2.txt" 2>&1 ||
  fail "live run over a bad cached config exited $?: $(cat "$T/live2.txt")"
L2=$(one_dir "$T/live2")
row=$(grep '"type":"case"' "$L2/run.log" | jq -c 'select(.node == "mm[f64-M128-N128-K128]")')
[ "$(jq -r .status <<< "$row")" = ok ] || fail "live eviction did not recover: $row"
[ "$(jq -r '.providers[] | select(.role == "candidate") | .tune.evicted' <<< "$row")" = "$BAD" ] ||
  fail "the row does not name the evicted config: $row"
! jq -e '.markers | index("compile_tune_no_evict")' <<< "$row" > /dev/null ||
  fail "an evictable config was marked no_evict"
now=$(sqlite3 "$T/live.db" "select config from tune_configs where $KEY")
[ -n "$now" ] && [ "$now" != "$BAD" ] || fail "the cache still holds '$now'"
# A recorded config that does not parse, or that names a parameter the host mm does not declare
# (mm would ignore it and run its default tiles), is not replayed: the row records the default
# that ran (replay-missing), and its note and a warning say why, naming the key.
for spoil in 'tm=??' 'tm=64,tn=64,tk=64,bogus=3'; do
  rm -rf "$T/spoil" "$T/sp"
  mkdir -p "$T/spoil"
  cp "$REC/tune.db" "$T/spoil/tune.db"
  sqlite3 "$T/spoil/tune.db" "update tune_configs set config = '$spoil' where $KEY"
  "$CAL" run mm --replay-from "$T/spoil" --out "$T/sp" "${FAST[@]}" > "$T/sp.txt" 2>&1 ||
    fail "replay of '$spoil' exited $?: $(cat "$T/sp.txt")"
  SP=$(one_dir "$T/sp")
  prov=$(grep '"type":"case"' "$SP/run.log" |
    jq -c 'select(.node == "mm[f64-M128-N128-K128]") | .providers[] | select(.role == "candidate")')
  [ "$(jq -r .tune.source <<< "$prov")" = replay-missing ] ||
    fail "a replayed '$spoil' is recorded as $(jq -r .tune.source <<< "$prov"): $prov"
  cfg=$(jq -r .config <<< "$prov")
  note=$(jq -r .tune.note <<< "$prov")
  [ "$cfg" != "$spoil" ] || fail "the row records '$spoil' as the config that ran"
  case "$note" in
    *"using the default $cfg;"*) ;;
    *) fail "the note does not name the default $cfg that ran: $note" ;;
  esac
  case "$spoil:$note" in
    tm=\?\?:*M=128,N=128,K=128*unparseable*) ;;
    *bogus*:*"'bogus'"*"does not declare"*) ;;
    *) fail "the note for '$spoil' does not say why: $note" ;;
  esac
  grep -q "M=128,N=128,K=128" "$T/sp.txt" || fail "no warning names the key of '$spoil': $(tail -5 "$T/sp.txt")"
done
echo PASS
