#!/usr/bin/env python3
"""Per-kernel time table of a profiled run, as markdown.

Input: the CSV of `ncu --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum CMD`.
Kernels are grouped by name (template arguments and parameters dropped); per group: time per step (total divided by
--steps), share of all kernel time, launches per step, and the DRAM bandwidth it achieved against the H200's ~4.3 TB/s.
Usage: kernel_table.py NCU.csv [--steps S] [--top N]
"""
import argparse
import collections
import csv
import re

PEAK_BYTES_PER_S = 4.3e12
TIME_UNIT = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
             "second": 1.0}
BYTE_UNIT = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9, "B": 1.0}


def short_name(name):
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"\(anonymous namespace\)::|<?unnamed>::", "", name)  # the anonymous namespace, as spelled
    name = re.sub(r"\(.*", "", name)  # the parameter list
    depth, kept = 0, []
    for ch in name:  # drop template arguments, keep the name
        depth += ch == "<"
        if depth == 0:
            kept.append(ch)
        depth -= ch == ">"
    return "".join(kept).split("::")[-1][:90]  # the kernel's own name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    rows = list(csv.reader(open(args.csv, newline="")))
    start = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    hdr, units = rows[start], rows[start + 1]
    col = {k: hdr.index(k) for k in ("Kernel Name", "gpu__time_duration.sum", "dram__bytes_read.sum",
                                     "dram__bytes_write.sum")}
    t_scale = TIME_UNIT[units[col["gpu__time_duration.sum"]]]
    b_scale = {k: BYTE_UNIT.get(units[col[k]], 1.0) for k in ("dram__bytes_read.sum", "dram__bytes_write.sum")}
    groups = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows[start + 2:]:
        if len(r) < len(hdr):
            continue
        num = lambda k: float(r[col[k]].replace(",", "") or 0)
        g = groups[short_name(r[col["Kernel Name"]])]
        g[0] += num("gpu__time_duration.sum") * t_scale
        g[1] += num("dram__bytes_read.sum") * b_scale["dram__bytes_read.sum"] + \
            num("dram__bytes_write.sum") * b_scale["dram__bytes_write.sum"]
        g[2] += 1
    total = sum(g[0] for g in groups.values())
    print(f"kernel time per step {1e3 * total / args.steps:.2f} ms, {sum(g[2] for g in groups.values()) / args.steps:.0f} "
          f"launches per step\n")
    print("| kernel | ms / step | share | launches / step | DRAM GB/s | % of 4.3 TB/s |")
    print("|---|---|---|---|---|---|")
    for name, (t, b, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:args.top]:
        bw = b / t if t > 0 else 0.0
        print(f"| `{name}` | {1e3 * t / args.steps:.3f} | {100 * t / total:.1f}% | {n / args.steps:.0f} | "
              f"{bw / 1e9:.0f} | {100 * bw / PEAK_BYTES_PER_S:.0f}% |")


if __name__ == "__main__":
    main()
