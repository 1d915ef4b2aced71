# Headless Chromium for the page tests (sourced after lib.sh's cli_init): chrome ARGS... and
# check_page LABEL HTML EXPECTED_CHARTS. scripts/quickstart test installs chromium; a missing one
# fails, it does not skip.
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || fatal "chromium is missing: scripts/quickstart test installs it"
ART="$(cd "$(dirname "$CAL")" && pwd)/test-artifacts"
mkdir -p "$ART"

# chrome ARGS... PAGE: headless, offline, a throwaway profile; stderr kept for the console check.
chrome() {
  local profile
  profile=$(mktemp -d "$T/profile.XXXXXX")
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --enable-logging=stderr --v=0 "$@"
}

# check_page LABEL HTML EXPECTED_CHARTS: the DOM Chromium built has that many charts, each with
# marks; nothing was logged by the page's console; a screenshot is written.
check_page() {
  local label=$1 html=$2 want=$3
  chrome --dump-dom "file://$html" > "$T/$label.dom" 2> "$T/$label.chrome.err" \
    || { check_fail "$label: chromium --dump-dom exit $?: $(tail -3 "$T/$label.chrome.err")"; return; }
  $PY - "$T/$label.dom" "$want" <<'PY' || check_fail "$label: the charts in the DOM"
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.charts = []  # marks per chart
        self.depth = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.charts.append(0)
        elif self.charts and "mark" in (a.get("class") or "").split():
            self.charts[-1] += 1
p = P()
p.feed(open(sys.argv[1]).read())
want = int(sys.argv[2])
assert len(p.charts) == want, f"{len(p.charts)} charts drawn, expected {want}"
assert all(n > 0 for n in p.charts), f"a chart without marks: {p.charts}"
print(f"{len(p.charts)} charts, marks per chart {p.charts}")
PY
  if grep -E 'CONSOLE|Uncaught|Refused to|ERR_FILE_NOT_FOUND' "$T/$label.chrome.err"; then
    check_fail "$label: the page logged errors"
  fi
  rm -f "$ART/$label.png"
  chrome --window-size=1100,2400 --hide-scrollbars --screenshot="$ART/$label.png" "file://$html" \
    > /dev/null 2>&1 || check_fail "$label: screenshot exit $?"
  [ "$(head -c 8 "$ART/$label.png" 2> /dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] \
    || check_fail "$label: no PNG screenshot at $ART/$label.png"
}

