#!/usr/bin/env python3
"""scripts/room-deps: the gate over src/ (every include runs down the rooms table of
docs/architecture.md), and the checker itself on a small tree: an include back up fails with its
file, line and rooms; a room missing from the table fails; includes with no room pass."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "room-deps")

DOC = """# Architecture

## Rooms

| room | owns |
| --- | --- |
| `include/caliber/` | the public API |
| `src/core/` | the bottom |
| `src/run/` | one run |
| `src/cli/` | the top |

## Where does X live

| `src/elsewhere/` | not a room: outside the Rooms section |
"""


class RoomDeps(unittest.TestCase):
    def check(self, files, doc=DOC):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "docs"))
            with open(os.path.join(d, "docs", "architecture.md"), "w") as f:
                f.write(doc)
            for rel, text in files.items():
                p = os.path.join(d, "src", rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w") as f:
                    f.write(text)
            r = subprocess.run([sys.executable, SCRIPT, d], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def test_src_includes_run_down_the_table(self):
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_including_a_room_above_passes(self):
        code, out, _ = self.check({
            "core/a.hpp": '#include "caliber/op.hpp"\n#include "core/b.hpp"\n',
            "run/r.cpp": '#include "core/a.hpp"\n#include "run/r.hpp"\n#include "gen.hpp"\n',
            "cli/m.cpp": '#include "run/r.hpp"\n#include "core/a.hpp"\n',
        })
        self.assertEqual(code, 0, out)

    def test_an_include_back_up_fails_with_file_line_and_rooms(self):
        code, out, err = self.check({
            "core/a.hpp": "#pragma once\n",
            "run/r.cpp": '#include "core/a.hpp"\n  #  include "cli/m.hpp"\n',
        })
        self.assertEqual(code, 1)
        self.assertIn("src/run/r.cpp:2: room run (place 2) includes cli/m.hpp of room cli "
                      "(place 3)", out)
        self.assertIn("run back up", err)

    def test_a_nested_folder_belongs_to_its_room(self):
        code, out, _ = self.check({"core/sub/x.cpp": '#include "run/r.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertIn("src/core/sub/x.cpp:1: room core", out)

    def test_a_room_missing_from_the_table_fails(self):
        code, out, _ = self.check({"core/a.hpp": "", "elsewhere/e.cpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("src/elsewhere/: not in the rooms table", out)

    def test_no_table_is_bad_input(self):
        code, _, err = self.check({"core/a.hpp": ""}, doc="# nothing here\n")
        self.assertEqual(code, 2)
        self.assertIn("no rooms table", err)


if __name__ == "__main__":
    unittest.main()
