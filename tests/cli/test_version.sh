#!/usr/bin/env bash
# The version comes from the build: `caliber --version` prints CMakeLists.txt's project version
# (and, from a git checkout, `git describe`), and a run's run_identity.json records the same
# version and the commit the binary was built from (cmake/build_version.cmake).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

project=$(sed -n 's/^project(caliber VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$project" ] || fatal "no project(caliber VERSION ...) in $SRC/CMakeLists.txt"

line=$("$CAL" --version 2> "$T/version.err")
rc=$?
echo "caliber --version: $line"
[ "$rc" -eq 0 ] || check_fail "--version exit $rc: $(cat "$T/version.err")"
case "$line" in
  "caliber $project" | "caliber $project (git "*")") ;;
  *) check_fail "--version says '$line', not 'caliber $project[ (git ...)]'" ;;
esac

"$CAL" run add --out "$T/runs" --name v "${FAST[@]}" > "$T/run.txt" 2>&1 || check_fail "run add: $(tail -5 "$T/run.txt")"
dir=$(only_run_dir "$T/runs")
py '
import json, sys
j = json.load(open(sys.argv[1] + "/run_identity.json"))
version, line, commit = sys.argv[2], sys.argv[3], j["git_commit"]
assert j["caliber_version"] == version, ("identity caliber_version", j["caliber_version"], version)
# The commit in the identity is the one --version describes (describe ends in g<hash> or is the hash).
if commit != "unknown":
    assert "(git " in line, ("a commit in the identity but none in --version", commit, line)
    assert commit.split("-")[0][:7] in line, ("identity commit not in --version", commit, line)
    assert commit.endswith("-dirty") == line.endswith("-dirty)"), ("dirty flags differ", commit, line)
' "$dir" "$project" "$line" || check_fail "run_identity.json disagrees with --version"

# From a git checkout the commit is one of this repository's (the build regenerates the header on
# every build, so after a commit without a rebuild it is an earlier one, never a made-up one).
if git -C "$SRC" rev-parse HEAD > /dev/null 2>&1; then
  commit=$(py 'import json,sys; print(json.load(open(sys.argv[1] + "/run_identity.json"))["git_commit"])' "$dir")
  git -C "$SRC" cat-file -e "${commit%-dirty}^{commit}" 2> /dev/null \
    || check_fail "identity git_commit '$commit' is not a commit of $SRC"
fi
cli_done
