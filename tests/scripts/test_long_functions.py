#!/usr/bin/env python3
"""scripts/long-functions: the gate over src/ (no function over 80 lines without a reason), and
the scanner itself on small sources: what counts as a function, how long it is, and where its
reason may stand."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "long-functions")


def body(n):
    """n statement lines."""
    return "".join(f"  x += {i};\n" for i in range(n))


class Scan(unittest.TestCase):
    def scan(self, text, *extra):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "f.cpp"), "w") as f:
                f.write(text)
            r = subprocess.run([sys.executable, SCRIPT, *extra, d], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def test_src_has_no_long_function_without_a_reason(self):
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_long_function_fails_with_its_name_line_and_length(self):
        code, out, err = self.scan("int a;\n\nint grow(int x) {\n" + body(85) + "  return x;\n}\n")
        self.assertEqual(code, 1)
        self.assertRegex(out, r"f\.cpp:3: grow 88 lines \(no reason given\)")
        self.assertIn("Stays long:", err)

    def test_at_the_limit_passes_and_the_limit_is_a_knob(self):
        src = "int fits(int x) {\n" + body(77) + "  return x;\n}\n"  # 80 lines
        self.assertEqual(self.scan(src)[0], 0)
        self.assertEqual(self.scan(src, "--limit", "79")[0], 1)

    def test_a_reason_above_the_signature_lets_it_through(self):
        src = ("// The table of everything.\n// Stays long: one entry a row, data only.\n"
               "template <class T>\nint table(T x) {\n" + body(90) + "  return x;\n}\n")
        code, out, _ = self.scan(src)
        self.assertEqual(code, 0, out)
        code, out, _ = self.scan(src, "--all")
        self.assertIn("f.cpp:3: table 94 lines", out)  # from its template line
        self.assertNotIn("no reason", out)

    def test_a_reason_far_from_the_signature_does_not_count(self):
        src = ("// Stays long: a reason for something else.\nint other() { return 1; }\n\n"
               "int grow(int x) {\n" + body(85) + "  return x;\n}\n")
        self.assertEqual(self.scan(src)[0], 1)

    def test_members_in_namespaces_and_classes_count(self):
        src = ("namespace a::b {\nstruct S {\n  int m(int x) const {\n" + body(85) +
               "    return x;\n  }\n};\n}  // namespace a::b\n")
        code, out, _ = self.scan(src)
        self.assertEqual(code, 1)
        self.assertIn(": m 88 lines", out)

    def test_lambdas_blocks_strings_and_comments_stay_inside_their_function(self):
        src = ('#define OPEN {\nextern "C" {\nint f(int x) {\n  auto g = [&](int y) {\n'
               + body(40) + '  };\n  const char* s = "}}}";\n  char c = \'}\';\n  // }\n'
               '  /* } */\n  if (x) {\n' + body(40) + '  }\n  return g(x);\n}\n}\n')
        code, out, _ = self.scan(src)
        self.assertEqual(code, 1)
        self.assertIn(": f 91 lines", out)
        self.assertEqual(out.count("lines"), 1, out)  # the lambda is not a function of its own

    def test_names_leave_attributes_out_and_keep_a_macros_arguments(self):
        code, out, _ = self.scan("__global__ void __launch_bounds__(256) k(float* x) {\n" +
                                 body(85) + "}\nTEST_F(Suite, Name) {\n" + body(85) + "}\n")
        self.assertEqual(code, 1)
        self.assertIn(": k 87 lines", out)
        self.assertIn(": TEST_F(Suite, Name) 87 lines", out)

    def test_data_is_not_a_function(self):
        src = ("const int table[] = {\n" + "".join(f"  {i},\n" for i in range(100)) + "};\n"
               "enum class E {\n" + "".join(f"  e{i},\n" for i in range(100)) + "};\n")
        self.assertEqual(self.scan(src), (0, "", ""))

    def scan_py(self, text, name="f.py", *extra):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            r = subprocess.run([sys.executable, SCRIPT, *extra, d], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def test_python_functions_count_from_their_decorator_and_hold_their_nested_defs(self):
        lines = "".join(f"    x += {i}\n" for i in range(80))
        src = ("import functools\n\n\n@functools.cache\ndef grow(x):\n    def inner():\n"
               "        return 1\n" + lines + "    return x\n\n\nclass K:\n"
               "    def fits(self):\n        return 1\n")
        code, out, err = self.scan_py(src)
        self.assertEqual(code, 1, out + err)
        self.assertIn("f.py:4: grow 85 lines (no reason given)", out)
        self.assertEqual(out.count("lines"), 1, out)  # inner is part of grow
        # A script without an extension is Python when its first line says so.
        code, out, _ = self.scan_py("#!/usr/bin/env python3\n" + src, "tool")
        self.assertIn("tool:5: grow 85 lines", out)
        self.assertEqual(self.scan_py(src, "f.txt")[0], 0)  # neither C++ nor Python

    def test_a_python_reason_is_a_comment_above(self):
        lines = "".join(f"        x += {i}\n" for i in range(85))
        src = "class K:\n    # Stays long: a table.\n    def table(self, x):\n" + lines
        self.assertEqual(self.scan_py(src)[0], 0)
        code, out, _ = self.scan_py(src.replace("# Stays long: a table.", "# A table."))
        self.assertIn("f.py:3: K.table 86 lines (no reason given)", out)

    def test_bad_arguments_exit_2(self):
        self.assertEqual(self.scan("", "--limit", "0")[0], 2)
        r = subprocess.run([sys.executable, SCRIPT, "/nonexistent/src"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/src", r.stderr)


if __name__ == "__main__":
    unittest.main()
