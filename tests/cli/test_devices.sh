#!/usr/bin/env bash
# caliber devices lists every backend with its devices and capabilities; the cpu backend has the
# host; a backend with no device says why (what it looked for). Text and --json agree.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" devices > "$T/devices.txt" 2>&1 || check_fail "devices exit $?: $(tail -3 "$T/devices.txt")"
"$CAL" devices --json > "$T/devices.json" 2> "$T/devices.err" || check_fail "devices --json exit $?: $(cat "$T/devices.err")"
cat "$T/devices.txt"

python3 - "$T/devices.json" << 'PY' || check_fail "devices --json (above)"
import json, sys
j = json.load(open(sys.argv[1]))
names = [b["name"] for b in j["backends"]]
for want in ("cuda", "rocm", "musa", "ascend", "cpu"):
    assert want in names, "no backend %s in %s" % (want, names)
for b in j["backends"]:
    assert isinstance(b.get("capabilities"), dict) and b["capabilities"], b["name"] + ": no capabilities"
    if not b["devices"]:
        why = b.get("why_none") or ""
        assert why.strip(), b["name"] + " has no device and does not say why"
cpu = [b for b in j["backends"] if b["name"] == "cpu"][0]
assert len(cpu["devices"]) >= 1, "cpu lists no device"
d = cpu["devices"][0]
assert d["index"] == 0, d
assert d.get("name"), "the cpu device has no name"
mem = d.get("memory_total_bytes", d.get("mem_total_bytes", 0))
assert mem > 0, "the cpu device has no memory total"
assert "host" in cpu.get("aliases", []), cpu.get("aliases")
assert cpu["capabilities"].get("graph_capture") is False, "cpu claims graph capture"
cuda = [b for b in j["backends"] if b["name"] == "cuda"][0]
assert cuda["capabilities"].get("graph_capture") is True, "cuda does not claim graph capture"
assert "nvidia" in cuda.get("aliases", []), cuda.get("aliases")
PY

# The text names every backend, and for each backend without a device the reason from the JSON.
python3 - "$T/devices.json" "$T/devices.txt" << 'PY' || check_fail "devices text (above)"
import json, sys
j = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
for b in j["backends"]:
    assert b["name"] in text, "the text does not name " + b["name"]
    if not b["devices"]:
        assert b["why_none"] in text, b["name"] + ": the text does not give the reason " + b["why_none"]
    for d in b["devices"]:
        assert d["name"] in text, "the text does not name device " + d["name"]
PY

# One backend, by name or alias.
"$CAL" devices --backend host --json > "$T/host.json" 2>&1 || check_fail "devices --backend host exit $?"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert [b["name"] for b in j["backends"]] == ["cpu"], j' "$T/host.json" || check_fail "devices --backend host is not the cpu backend alone"
"$CAL" devices --backend bogus > /dev/null 2> "$T/bogus.err"
rc=$?
[ "$rc" -eq 2 ] || check_fail "devices --backend bogus exit $rc, expected 2"
grep -q cpu "$T/bogus.err" || check_fail "devices --backend bogus does not list the valid names: $(cat "$T/bogus.err")"

cli_done
