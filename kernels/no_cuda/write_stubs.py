#!/usr/bin/env python3
"""Writes the CUDA-less build's stand-ins for one kernels/cuda launcher header: every free function it declares,
defined to throw "[name] needs the CUDA backend". Usage: write_stubs.py HEADER INCLUDE_AS OUT.cpp

The headers declare plain functions inside `namespace vt::kernels::cuda { ... }`; structs, enums and functions
defined in the header are skipped (templates are not expected). A declaration this script cannot read is an error, so a stub never drifts
from its header silently."""
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))


def namespace_body(text, header):
    m = re.search(r"namespace\s+vt::kernels::cuda\s*\{", text)
    if not m:
        sys.exit(f"{header}: no 'namespace vt::kernels::cuda {{'")
    depth, i = 1, m.end()
    start = i
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


def top_level_statements(body):
    """Statements at the namespace's own level. A brace block outside parentheses (a struct, enum or class body)
    drops its statement; braces inside parentheses (a `= {}` default) are kept as text."""
    out, cur, depth, parens, head = [], [], 0, 0, ""
    for ch in body:
        if depth == 0 and ch in "()":
            parens += 1 if ch == "(" else -1
        elif parens == 0 and ch == "{":
            if depth == 0:
                head = "".join(cur)
            depth += 1
            continue
        elif parens == 0 and ch == "}":
            depth -= 1
            if depth == 0:
                # A type's body ends at its ';' (that statement is dropped); a function body ends here.
                cur = ["{}"] if re.search(r"\b(struct|class|enum|union)\b", head) else []
            continue
        elif depth == 0 and ch == ";":
            stmt = " ".join("".join(cur).split())
            if stmt and not stmt.startswith("{}"):
                out.append(stmt)
            cur = []
            continue
        if depth == 0:
            cur.append(ch)
    return out


def without_defaults(params):
    """Drops '= value' from each parameter (values may hold parentheses, braces and '::')."""
    out, depth, skipping = [], 0, False
    for ch in params:
        if ch in "({<":
            depth += 1
        elif ch in ")}>":
            depth -= 1
        if depth == 0 and ch == ",":
            skipping = False
        elif depth == 0 and ch == "=":
            skipping = True
            continue
        if not skipping:
            out.append(ch)
    return re.sub(r"\s+,", ",", "".join(out)).strip()


def main():
    header, include_as, out_path = sys.argv[1:4]
    text = strip_comments(open(header, encoding="utf-8").read())
    stubs = []
    for stmt in top_level_statements(namespace_body(text, header)):
        if re.match(r"(using|enum|struct|class|template|inline|constexpr|extern)\b", stmt):
            continue
        m = re.fullmatch(r"(?P<ret>[\w:<>*&\s]+?)\s*\b(?P<name>\w+)\s*\((?P<params>.*)\)\s*(noexcept)?", stmt)
        if not m:
            sys.exit(f"{header}: cannot read the declaration '{stmt}'")
        ret, name, params = m.group("ret").strip(), m.group("name"), without_defaults(m.group("params"))
        stubs.append(f"{ret} {name}({params}) {{ no_cuda_backend(\"{name}\"); }}")
    if not stubs:
        sys.exit(f"{header}: no function declarations found")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(f"// Generated from {include_as} by kernels/no_cuda/write_stubs.py: this build has no CUDA backend.\n")
        f.write(f'#include "{include_as}"\n\n#include "kernels/no_cuda/no_cuda_backend.h"\n\n')
        f.write("namespace vt::kernels::cuda {\n\n")
        f.write("\n".join(stubs))
        f.write("\n\n}  // namespace vt::kernels::cuda\n")


if __name__ == "__main__":
    main()
