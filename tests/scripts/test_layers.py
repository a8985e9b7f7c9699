#!/usr/bin/env python3
"""The layer table of docs/architecture.md against the code: every #include of a file in a layer's folders must
name a file of its own layer or of a layer its row lists. Run: python3 THIS_FILE (ctest runs it)."""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_EXT = (".h", ".cpp", ".cu", ".cuh")


def layer_table(doc_text):
    """[(layer, [folder or file patterns], {allowed layers})] from the '## Layers' table."""
    section = doc_text[doc_text.index("## Layers"):]
    rows = []
    for line in section.split("\n")[1:]:
        if line.startswith("## ") or line.startswith("### "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        name, folders, includes = cells
        paths = re.findall(r"`([^`]+)`", folders)
        includes = re.sub(r"\([^)]*\)", "", includes)
        allowed = {x.strip() for x in includes.split(",") if x.strip() and x.strip() != "—"}
        rows.append((name, paths, allowed))
    return rows


def layer_of(path, rows):
    """The layer whose most specific pattern holds `path` (repo-relative), or None."""
    best, best_len = None, -1
    for name, patterns, _ in rows:
        for pat in patterns:
            if pat.endswith("/*.h"):
                hit = os.path.dirname(path) == pat[:-4] and path.endswith(".h")
            else:
                hit = path == pat or path.startswith(pat.rstrip("/") + "/") or \
                      os.path.splitext(path)[0] == pat
            if hit and len(pat) > best_len:
                best, best_len = name, len(pat)
    return best


def resolve(include, root):
    for base in ("src", ""):
        candidate = os.path.normpath(os.path.join(base, include))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate.replace(os.sep, "/")
    return None  # a system or generated header


def violations(rows, root):
    out = []
    for name, patterns, allowed in rows:
        for pat in patterns:
            top = pat[:-4] if pat.endswith("/*.h") else pat
            full = os.path.join(root, top)
            files = []
            if os.path.isdir(full):
                for d, _, names in os.walk(full):
                    files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(SOURCE_EXT)]
            else:
                d = os.path.dirname(full)
                files += [os.path.relpath(os.path.join(d, n), root) for n in os.listdir(d)
                          if os.path.splitext(os.path.join(d, n))[0] == full and n.endswith(SOURCE_EXT)]
            for f in files:
                f = f.replace(os.sep, "/")
                if layer_of(f, rows) != name:
                    continue  # a more specific row owns it
                with open(os.path.join(root, f), encoding="utf-8") as src:
                    text = src.read()
                for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
                    target = resolve(inc, root)
                    other = layer_of(target, rows) if target else None
                    if other and other != name and other not in allowed:
                        out.append(f"{f} ({name}) includes {inc} ({other})")
    return sorted(set(out))


class Layers(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            self.rows = layer_table(f.read())

    def test_the_table_is_read(self):
        names = [r[0] for r in self.rows]
        for expected in ("base", "kernels", "tensor", "ops", "models", "engine", "cli"):
            self.assertIn(expected, names)
        self.assertEqual(layer_of("src/autograd/node.h", self.rows), "tensor")
        self.assertEqual(layer_of("src/autograd/engine.cpp", self.rows), "autograd engine")
        self.assertEqual(layer_of("kernels/shapes.h", self.rows), "kernels")

    def test_rows_name_only_earlier_layers(self):
        seen = set()
        for name, _, allowed in self.rows:
            self.assertLessEqual(allowed, seen, f"{name} lists a layer that is not below it")
            seen.add(name)

    def test_every_include_follows_the_table(self):
        self.assertEqual(violations(self.rows, ROOT), [])

    def test_a_forbidden_include_is_reported(self):
        narrowed = [(n, p, a - {"io"} if n == "models" else a) for n, p, a in self.rows]
        found = violations(narrowed, ROOT)
        self.assertTrue(any("(models) includes io/config.h (io)" in v for v in found), found)


if __name__ == "__main__":
    unittest.main()
