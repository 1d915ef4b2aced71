#!/usr/bin/env bash
# Tune cache and batch process edge cases (docs/limits.md): a valid cache we may not write is still read,
# a valid SQLite file of another schema is set aside (never written into), and the children of a
# batch killed outright die with it and leave no ops_status.csv row at running.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
trap 'chattr -i "$T/c.db" "$T/ro" 2> /dev/null; rm -rf "$T"' EXIT

# The tune source of every candidate of a run (tuned, cache, replay, ...), one per line.
sources() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "case":
        for p in r.get("providers", []):
            if p.get("role") == "candidate" and "tune" in p:
                print(p["tune"].get("source"))' "$1/run.log"
}

# --- A read-only (immutable) valid cache: its configs are used, nothing is retuned.
"$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/c.db" --out "$T/live1" > "$T/live1.txt" 2>&1 ||
  fatal "live run: $(tail -3 "$T/live1.txt")"
[ "$(sources "$(only_run_dir "$T/live1")" | sort -u)" = tuned ] || fatal "first live run did not tune"
"$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/c.db" --out "$T/live0" > /dev/null 2>&1  # checkpoints the WAL
if chattr +i "$T/c.db" 2> /dev/null; then
  "$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/c.db" --out "$T/live2" > "$T/live2.txt" 2>&1 ||
    check_fail "live run on a read-only cache: exit $?: $(tail -3 "$T/live2.txt")"
  L2=$(only_run_dir "$T/live2")
  [ "$(sources "$L2" | sort -u)" = cache ] ||
    check_fail "a read-only cache was not used: sources $(sources "$L2" | sort -u | tr '\n' ' '); $(grep -i 'tune cache' "$T/live2.txt")"
  chattr -i "$T/c.db"
  # A cache in a folder we may not write: SQLite cannot make its -wal and -shm files there.
  mkdir "$T/ro"
  cp "$T/c.db" "$T/ro/c.db"
  chattr +i "$T/ro"
  "$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/ro/c.db" --out "$T/live3" > "$T/live3.txt" 2>&1 ||
    check_fail "live run on a cache in a read-only folder: exit $?: $(tail -3 "$T/live3.txt")"
  [ "$(sources "$(only_run_dir "$T/live3")" | sort -u)" = cache ] ||
    check_fail "a cache in a read-only folder was not used: $(grep -i 'tune cache' "$T/live3.txt")"
  chattr -i "$T/ro"
else
  echo "note: chattr +i unsupported here; the read-only cache is checked by the unit tests"
fi

# --- A 0444 cache is read-only for root too (whose writes SQLite would let through): its configs
# are used, the file is not changed, a warning says so.
cp "$T/c.db" "$T/ro444.db"
chmod 444 "$T/ro444.db"
sum_before=$(md5sum < "$T/ro444.db")
"$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/ro444.db" --shape 48x48x48 --out "$T/ro444" \
  > "$T/ro444.txt" 2>&1 || check_fail "live run on a 0444 cache: exit $?: $(tail -3 "$T/ro444.txt")"
[ "$(md5sum < "$T/ro444.db")" = "$sum_before" ] || check_fail "a 0444 tune cache was written into"
grep -q "its mode has no write bit" "$T/ro444.txt" || check_fail "no read-only warning: $(cat "$T/ro444.txt")"

# --- A run's recorded tune.db is its record: --tune-cache refuses it (live tuning would add to
# what a later --replay-from replays).
"$CAL" run mm "${FAST[@]}" --tune record --out "$T/rec" > /dev/null 2>&1 || fatal "a record run failed"
REC=$(only_run_dir "$T/rec")
sum_before=$(md5sum < "$REC/tune.db")
expect_refused "--tune-cache a run's record" "recorded tune.db of a run" -- \
  "$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$REC/tune.db" --out "$T/rec2"
[ "$(md5sum < "$REC/tune.db")" = "$sum_before" ] || check_fail "a run's recorded tune.db was changed"

# --- A valid SQLite database of another schema is set aside, never written into.
python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
db.execute("INSERT INTO notes (body) VALUES (\"mine\")")
db.commit()' "$T/other.db"
"$CAL" run mm "${FAST[@]}" --tune live --tune-cache "$T/other.db" --out "$T/other" > "$T/other.txt" 2>&1 ||
  check_fail "live run on another schema: exit $?: $(tail -3 "$T/other.txt")"
grep -q "not a caliber tune cache" "$T/other.txt" || check_fail "no warning for another schema: $(cat "$T/other.txt")"
aside=$(ls "$T"/other.db.corrupt-* 2> /dev/null | grep -v -- '-wal$\|-shm$' | head -1)
[ -n "$aside" ] || check_fail "the other database was not set aside"
[ -n "$aside" ] && { python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type=\"table\"")]
assert names == ["notes"], names' "$aside" || check_fail "the set-aside database was written into"; }

# --- A batch killed with SIGKILL: its child dies with it, and records that.
"$CAL" batch add --backend cpu --min-samples 100000 --min-time 60 --timeout 120 --warmup 0 \
  --out "$T/batch" > "$T/batch.txt" 2>&1 &
bpid=$!
child=""
for _ in $(seq 1 600); do
  child=$(ps -o pid= --ppid "$bpid" 2> /dev/null | tr -d ' ' | head -1)
  [ -n "$child" ] && grep -q ',running,' "$T"/batch/batch-*/ops_status.csv 2> /dev/null && break
  sleep 0.1
done
[ -n "$child" ] || fatal "the batch started no child: $(cat "$T/batch.txt")"
# The child records the batch's death from its SIGTERM handler: kill the batch once the child
# catches SIGTERM (SigCgt bit 15), not after a fixed 0.5 s that a slow start (ASan, a loaded host)
# outlasts, when PR_SET_PDEATHSIG's SIGTERM would end it before it could write anything.
catches_term() { py 'import sys
for line in open("/proc/%s/status" % sys.argv[1]):
    if line.startswith("SigCgt:"):
        sys.exit(0 if int(line.split()[1], 16) >> 14 & 1 else 1)
sys.exit(1)' "$1" 2> /dev/null; }
for _ in $(seq 1 600); do
  child=$(ps -o pid= --ppid "$bpid" 2> /dev/null | tr -d ' ' | head -1)
  [ -n "$child" ] && catches_term "$child" && break
  sleep 0.1
done
catches_term "$child" || fatal "the batch's child $child never caught SIGTERM"
kill -9 "$bpid"
wait "$bpid" 2> /dev/null
gone=0
for _ in $(seq 1 600); do
  if ! kill -0 "$child" 2> /dev/null; then gone=1; break; fi
  sleep 0.1
done
[ "$gone" = 1 ] || { check_fail "the child $child outlived its killed batch"; kill -9 "$child" 2> /dev/null; }
sleep 0.3
csv=$(ls "$T"/batch/batch-*/ops_status.csv)
grep -q ',running,' "$csv" && check_fail "ops_status.csv left at running: $(cat "$csv")"
grep -q '^add,interrupted,' "$csv" || check_fail "the child did not record the batch's death: $(cat "$csv")"

# --- Leftover batch variables in a shell (a copied environment) make no plain run a batch's child:
# a run whose CALIBER_BATCH_PARENT is not its parent, or whose CALIBER_BATCH_DIR holds no
# batch.json, says in one line that they were ignored and runs; it never ends itself (SIGTERM
# within 50 ms) nor locks or rewrites that folder's ops_status.csv.
B=$(dirname "$csv")
cp "$csv" "$T/status.before"
mkdir -p "$T/nobatch"
for leftover in "$B:1" "$T/nobatch:self"; do
  dir=${leftover%:*}
  rm -rf "$T/plain" "$dir/.ops_status.lock"
  # sh -c (not exec'd: `; :`) is the run's parent, so $$ is its parent pid
  CALIBER_BATCH_DIR=$dir CALIBER_BATCH_OP=add CALIBER_BATCH_PARENT=$([ "${leftover#*:}" = self ] && echo SELF || echo 1) \
    sh -c '[ "$CALIBER_BATCH_PARENT" = SELF ] && CALIBER_BATCH_PARENT=$$; export CALIBER_BATCH_PARENT; "$@"; rc=$?; exit $rc' sh \
    "$CAL" run add "${FAST[@]}" --out "$T/plain" > "$T/plain.txt" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || check_fail "a plain run with leftover batch variables ($leftover): exit $rc: $(tail -3 "$T/plain.txt")"
  [ "$(grep -c 'CALIBER_BATCH_DIR, CALIBER_BATCH_PARENT and CALIBER_BATCH_OP were ignored' "$T/plain.txt")" -eq 1 ] ||
    check_fail "no one-line note that the leftover variables were ignored ($leftover): $(head -3 "$T/plain.txt")"
  case $leftover in
    *:1) grep -q "is not this process's parent" "$T/plain.txt" || check_fail "the note does not say why: $(head -2 "$T/plain.txt")" ;;
    *) grep -q "holds no batch.json" "$T/plain.txt" || check_fail "the note does not say why: $(head -2 "$T/plain.txt")" ;;
  esac
  [ -e "$dir/.ops_status.lock" ] && check_fail "a plain run locked $dir/.ops_status.lock"
  only_run_dir "$T/plain" > /dev/null || check_fail "a plain run with leftover variables wrote no run"
done
cmp -s "$csv" "$T/status.before" || check_fail "a plain run rewrote a batch's ops_status.csv"

cli_done
