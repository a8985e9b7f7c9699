#!/usr/bin/env python3
"""kernels/no_cuda/write_stubs.py, which writes the CUDA-less build's stand-ins: on a hand-made header (defaults,
multi-line declarations, structs and enums skipped), on a declaration it cannot read (an error naming the header),
and on every launcher header the build generates stubs for. Run: python3 THIS_FILE (ctest runs it)."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "kernels", "no_cuda", "write_stubs.py")

HEADER = """// comment with a fake decl(int);
#pragma once
#include "kernels/device_handles.h"
namespace vt::kernels::cuda {
enum class Mode { a, b };
struct Args {
  int n = 0;
  KernelStream stream = nullptr;
  int size() const { return n; }
};
inline int twice(int x) { return 2 * x; }
/// Doc comment.
bool supported(int64_t d);
void launch(const Args& args, float* out,  // trailing comment
            KernelStream stream, Mode mode = Mode::a, const int* extra = nullptr);
size_t workspace_bytes(const Args& args, std::initializer_list<const int*> views = {});
}  // namespace vt::kernels::cuda
"""


def write_stubs(header_text):
    with tempfile.TemporaryDirectory() as d:
        header, out = os.path.join(d, "room.h"), os.path.join(d, "room_stubs.cpp")
        with open(header, "w") as f:
            f.write(header_text)
        p = subprocess.run([sys.executable, SCRIPT, header, "kernels/cuda/room.h", out], capture_output=True,
                           text=True)
        text = open(out).read() if os.path.exists(out) else ""
        return p.returncode, p.stdout + p.stderr, text


class WriteStubs(unittest.TestCase):
    def test_every_function_becomes_a_refusing_definition(self):
        rc, log, text = write_stubs(HEADER)
        self.assertEqual(rc, 0, log)
        self.assertIn('#include "kernels/cuda/room.h"', text)
        self.assertIn('bool supported(int64_t d) { no_cuda_backend("supported"); }', text)
        self.assertIn("void launch(const Args& args, float* out, KernelStream stream, Mode mode, const int* extra) "
                      '{ no_cuda_backend("launch"); }', text)
        self.assertIn("size_t workspace_bytes(const Args& args, std::initializer_list<const int*> views) "
                      '{ no_cuda_backend("workspace_bytes"); }', text)
        # The struct's member function, the enum and the inline function (defined in the header) get no stub.
        self.assertEqual(text.count("no_cuda_backend("), 3, text)

    def test_an_unreadable_declaration_names_the_header(self):
        rc, log, _ = write_stubs("namespace vt::kernels::cuda {\nvoid (*callback)(int);\n}\n")
        self.assertNotEqual(rc, 0)
        self.assertIn("room.h: cannot read the declaration", log)

    def test_a_header_outside_the_namespace_is_an_error(self):
        rc, log, _ = write_stubs("namespace vt::kernels::cpu {\nvoid f();\n}\n")
        self.assertNotEqual(rc, 0)
        self.assertIn("no 'namespace vt::kernels::cuda {'", log)

    def test_every_launcher_header_of_the_build_is_readable(self):
        cmake = open(os.path.join(ROOT, "kernels", "CMakeLists.txt")).read()
        runtime = set(re.search(r"list\(REMOVE_ITEM VT_KERNELS_CUDA_HEADERS([^)]*)\)", cmake).group(1).split())
        headers = []
        for sub in ("cuda", os.path.join("cuda", "mita")):
            for name in sorted(os.listdir(os.path.join(ROOT, "kernels", sub))):
                rel = os.path.join(sub, name).replace(os.sep, "/")
                if name.endswith(".h") and rel not in runtime:
                    headers.append(rel)
        self.assertGreater(len(headers), 20)
        for rel in headers:
            with open(os.path.join(ROOT, "kernels", rel)) as f:
                rc, log, text = write_stubs(f.read())
            self.assertEqual(rc, 0, f"{rel}: {log}")
            self.assertIn("no_cuda_backend(", text, rel)


if __name__ == "__main__":
    unittest.main()
