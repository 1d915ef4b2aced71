#!/usr/bin/env python3
"""docs/environment.md lists every environment variable caliber reads or sets: every `CALIBER_*`
name spelled in quotes in src/, include/, python/caliber/ and ops/ and every variable of the knob
table (src/settings/knobs.cpp) has a row, and every `CALIBER_*` row is still spelled somewhere
(no stale rows). The checker itself goes red on a name added without a row and on a stale row."""
import os
import re
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ("src", "include", os.path.join("python", "caliber"), "ops")
QUOTED = re.compile(r"[\"'](CALIBER_[A-Z0-9_]+)[\"']")
# add({"name", "--flag", "ENV", ...: the knob table's environment spelling (empty: none).
KNOB = re.compile(r'add\(\{"[a-z_0-9]+",\s*"[^"]*",\s*"([A-Z][A-Z0-9_]*)"')
ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)`", re.M)


def spelled(root):
    """{name: first file} of the quoted CALIBER_* names in the sources."""
    out = {}
    for top in SOURCES:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".hpp", ".cu", ".h", ".py")):
                    continue
                path = os.path.join(d, f)
                with open(path, errors="replace") as fh:
                    for name in QUOTED.findall(fh.read()):
                        out.setdefault(name, os.path.relpath(path, root))
    return out


def knob_variables(root):
    with open(os.path.join(root, "src", "settings", "knobs.cpp")) as f:
        return set(KNOB.findall(f.read()))


def documented(root):
    with open(os.path.join(root, "docs", "environment.md")) as f:
        return set(ROW.findall(f.read()))


def problems(root):
    code, knobs, doc = spelled(root), knob_variables(root), documented(root)
    out = ["%s (%s) has no row in docs/environment.md" % (n, code[n])
           for n in sorted(set(code) - doc)]
    out += ["%s (the knob table) has no row in docs/environment.md" % n
            for n in sorted(knobs - doc)]
    out += ["%s: a row of docs/environment.md that no source spells" % n
            for n in sorted(x for x in doc if x.startswith("CALIBER_") and x not in code)]
    return out


class EnvironmentDoc(unittest.TestCase):
    def test_the_tree(self):
        self.assertEqual(problems(ROOT), [])
        self.assertGreater(len(documented(ROOT)), 30)

    def test_the_checker_goes_red(self):
        with tempfile.TemporaryDirectory() as d:
            for sub in ("src/settings", "python/caliber", "docs"):
                os.makedirs(os.path.join(d, sub))
            with open(os.path.join(d, "src", "settings", "knobs.cpp"), "w") as f:
                f.write('add({"level", "--level", "BENCH_LEVEL", "Selection"});\n'
                        'add({"x", "--x", "", "Selection"});\n')
            with open(os.path.join(d, "python", "caliber", "m.py"), "w") as f:
                f.write('a = os.environ.get("CALIBER_NEW")\nb = "CALIBER_OLD"\n')
            with open(os.path.join(d, "docs", "environment.md"), "w") as f:
                f.write("| `CALIBER_OLD` | kept |\n| `CALIBER_GONE` | stale |\n")
            got = problems(d)
        self.assertEqual(got, ["CALIBER_NEW (python/caliber/m.py) has no row in "
                               "docs/environment.md",
                               "BENCH_LEVEL (the knob table) has no row in docs/environment.md",
                               "CALIBER_GONE: a row of docs/environment.md that no source spells"])


if __name__ == "__main__":
    sys.exit(unittest.main())
