#!/usr/bin/env python3
"""Several seeds of scripts/reproduce_table5.sh runs, side by side: ROOT/seed<S>/<config>/metrics.jsonl (one
reproduce_table5.sh OUT_DIR per seed, e.g. `EXTRA_SET="train.seed=1" scripts/reproduce_table5.sh DATA 1 ROOT/seed1`).

Writes into OUT_DIR:
  seeds.md                 per config: each seed's test top-1 of its best validation model (LRA's protocol, the last
                           best_test_top1 row), the mean ± sample std over seeds, and the steps each run made
  <config>_val.csv         validation top-1 against the update step, one series per seed
  <config>_val.png / .svg  that curve drawn by plot_xy (when PLOT_XY, default build/bin/plot_xy, exists)

  python3 scripts/collect_lra_seeds.py ROOT OUT_DIR [CONFIG ...]   (default: every config found under ROOT/seed*/)
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path


def read_rows(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"error: {path}:{n}: not a JSON line ({e})")
    return rows


def run_summary(rows):
    best = [r["best_test_top1"] for r in rows if "best_test_top1" in r]
    steps = max((r.get("step", 0) for r in rows), default=0)
    curve = [(r["step"], r["val_top1"]) for r in rows if "val_top1" in r]
    return (best[-1] if best else None), steps, curve


def mean_std(values):
    if not values:
        return None, None
    m = sum(values) / len(values)
    s = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, s


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    seed_dirs = sorted((d for d in root.glob("seed*") if d.is_dir() and d.name[4:].isdigit()),
                       key=lambda d: int(d.name[4:]))
    if not seed_dirs:
        sys.exit(f"error: no seed<S>/ folders under {root}")
    configs = sys.argv[3:] or sorted({m.parent.name for d in seed_dirs for m in d.glob("*/metrics.jsonl")})
    out.mkdir(parents=True, exist_ok=True)
    plot_xy = os.environ.get("PLOT_XY", "build/bin/plot_xy")
    seeds = [d.name[4:] for d in seed_dirs]
    lines = ["| config | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± std | steps |",
             "|---|" + "---|" * len(seeds) + "---|---|"]
    for config in configs:
        cells, values, steps_seen = [], [], []
        csv = ["series,x,y"]
        for d, s in zip(seed_dirs, seeds):
            metrics = d / config / "metrics.jsonl"
            if not metrics.is_file():
                cells.append("not run")
                continue
            best, steps, curve = run_summary(read_rows(metrics))
            cells.append("-" if best is None else f"{best:.2f}")
            if best is not None:
                values.append(best)
            steps_seen.append(str(steps))
            csv += [f"seed {s},{step},{top1}" for step, top1 in curve]
        m, sd = mean_std(values)
        stat = "-" if m is None else f"{m:.2f} ± {sd:.2f}"
        lines.append(f"| {config} | " + " | ".join(cells) + f" | {stat} | {' / '.join(sorted(set(steps_seen)))} |")
        (out / f"{config}_val.csv").write_text("\n".join(csv) + "\n")
        if os.access(plot_xy, os.X_OK) and len(csv) > 1:
            subprocess.run([plot_xy, str(out / f"{config}_val.csv"), str(out / f"{config}_val.png"), "--linear",
                            "--title", f"{config}: validation top-1 during training",
                            "--x-title", "update step", "--y-title", "validation top-1 (%)"], check=True)
    (out / "seeds.md").write_text(
        "Test top-1 (%) of each run's best validation model; mean ± sample std over the seeds.\n\n" +
        "\n".join(lines) + "\n")
    print((out / "seeds.md").read_text(), end="")


if __name__ == "__main__":
    main()
