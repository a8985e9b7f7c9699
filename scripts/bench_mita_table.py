#!/usr/bin/env python3
"""The collector of scripts/bench_mita.sh: one measurement per JSON line in, a CSV and Markdown tables out.

  ingest  turns the raw output of one benchmark command (`vitrain bench --json`, bench_timm.py /
          bench_segmenter_torch.py lines, bench_mita_long(.py) CSVs, or rows already in this format) into
          measurement rows appended to --rows; a command that failed without reporting its own error adds an
          error row saying why (its last error line, or the time cap that stopped it).
  best-backend  prints the SDPA backend with the highest median among the rows of given CSVs at one N.
  report  reads the rows and writes the CSV and the Markdown (one table per part, ratios MiTA / best dense);
          --append adds the Markdown as a dated section to a file (BENCHMARKS.md), --copy-raw copies the raw files
          into DIR/<date>-<commit>/ to commit them.

A row: part, model, impl (ours-dense, ours-mita, timm- and torch- eager, compile, reduce-overhead, max-autotune),
backend
(the SDPA backend of a PyTorch row), mode (train / infer), N, batch, runs [one figure per timed window], median, min,
max, unit, error ("" when it ran), commit, and optional precision, m, k, peak_gib, gpu.
A cell of a table is the best median over a cell's rows (SDPA backends, batch sizes), shown as "median (min–max)"
with the winning backend in brackets.
"""
import argparse
import csv
import datetime
import json
import os
import shutil
import statistics
import sys

IMPLS = ["ours-mita", "ours-dense", "timm-eager", "timm-compile", "timm-reduce-overhead", "timm-max-autotune",
         "torch-eager", "torch-compile", "torch-reduce-overhead", "torch-max-autotune"]
LABELS = {"ours-mita": "ours MiTA", "ours-dense": "ours dense", "timm-eager": "timm eager",
          "timm-compile": "timm compile", "timm-reduce-overhead": "timm compile reduce-overhead",
          "timm-max-autotune": "timm compile max-autotune", "torch-eager": "PyTorch eager",
          "torch-compile": "PyTorch compile", "torch-reduce-overhead": "PyTorch compile reduce-overhead",
          "torch-max-autotune": "PyTorch compile max-autotune"}
CSV_COLUMNS = ["part", "model", "precision", "impl", "backend", "mode", "N", "batch", "m", "k", "median", "min",
               "max", "unit", "runs", "peak_gib", "error", "commit"]
PARTS = {
    "a": "DeiT-T / DeiT-S at 224² (N = 197), batch 256, bf16 autocast: img/s",
    "b": "Segmenter ViT-S + CBT at 512² (N = 1025), batch 8: training img/s and evaluation windows/s",
    "c": "LRA-shaped model (2 layers, dim 64, 2 heads × 32, MLP 128; MiTA m = k = 128, 1-D pooling), batch 32, "
         "bf16: training steps/s",
    "d": "Figure 5 model (3 blocks, dim 128, 2 heads, MLP ×4; MiTA m = k = √(N/4), 1-D pooling), inference, bf16: "
         "samples/s, batch tuned per N for every implementation",
    "e": "Figure 5 model, training at batch 1, bf16: steps/s",
}


# ---------------------------------------------------------------- ingest

def stats(runs):
    return {"runs": runs, "median": statistics.median(runs), "min": min(runs), "max": max(runs)}


def base_row(args, **kw):
    row = {"part": args.part, "model": args.model, "impl": args.impl, "backend": "", "mode": "train", "N": args.N,
           "batch": args.batch, "runs": [], "median": None, "min": None, "max": None, "unit": args.unit,
           "error": "", "commit": args.commit, "precision": args.precision}
    if args.gpu:
        row["gpu"] = args.gpu
    row.update(kw)
    return row


def from_bench_json(args, r):
    """`vitrain bench`, bench_timm.py or bench_segmenter_torch.py: a train row and, when measured, an infer row."""
    impl = args.impl if r["impl"] == "vitrain" else r["impl"].replace("_", "-")
    batch = r.get("batch_size", args.batch)
    model = r.get("model", "") if args.model_from_line or not args.model else args.model
    common = dict(impl=impl, model=model, batch=batch,
                  backend=r.get("sdpa_backend", "") if r["impl"] != "vitrain" else "",
                  precision="bf16" if r.get("amp") else "f32")
    for key in ("m", "k"):
        if key in r:
            common[key] = r[key]
    out = []
    for mode in ("train", "infer"):
        runs = r.get(f"{mode}_runs")
        if runs is None and r.get(f"{mode}_img_per_s") is not None:
            runs = [r[f"{mode}_img_per_s"]]
        if runs is None and not (mode == "train" and r.get("error")):
            continue
        row = base_row(args, mode=mode, **common)
        if r.get("error"):
            row["error"] = r["error"]
        else:
            scale = 1.0 / batch if args.unit == "steps/s" else 1.0
            row.update(stats([v * scale for v in runs]))
            peak = r.get(f"{mode}_peak_mem_gib")
            if peak is not None:
                row["peak_gib"] = peak
        out.append(row)
    return out


def from_mita_long_csv(args, r):
    """bench_mita_long / bench_mita_long.py: one row (ms per batch per window) → samples/s."""
    impl = f"ours-{r['kind']}" if r["impl"] == "vitrain" else "torch-eager"
    batch = int(r["batch"])
    row = base_row(args, impl=impl, backend=r.get("backend") or ("default" if r["impl"] == "torch" else ""),
                   mode="infer" if "infer" in r["mode"] else "train", N=int(r["N"]), batch=batch,
                   precision="bf16", unit="samples/s")
    if r["kind"] == "mita":
        row.update(m=int(r["m"]), k=int(r["k"]))
    if r["error"]:
        row["error"] = r["error"]
        return [row]
    ms = [float(v) for v in (r.get("runs_ms") or r["ms_per_batch"]).split(";") if v]
    row.update(stats([1e3 * batch / v for v in ms]))
    row["peak_gib"] = float(r["peak_mem_gib"])
    return [row]


def read_raw(args, path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    if args.source == "mita_long":
        rows = []
        for r in csv.DictReader(open(path)):
            rows += from_mita_long_csv(args, r)
        return rows
    rows = []
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if args.source == "rows":
            r.setdefault("commit", args.commit)
            if args.gpu:
                r.setdefault("gpu", args.gpu)
            rows.append(r)
        else:
            rows += from_bench_json(args, r)
    return rows


def ingest(args):
    rows = []
    for path in args.raw:
        try:
            rows += read_raw(args, path)
        except (ValueError, KeyError) as e:
            rows.append(base_row(args, error=f"unreadable output {os.path.basename(path)}: {e}"))
    # The command's own failure, when no row says what went wrong (or rows are missing: stopped by its cap).
    if args.error and (not any(r["error"] for r in rows) or args.stopped):
        for impl in args.impl.split(","):
            for mode in args.modes.split(","):
                rows.append(base_row(args, impl=impl, mode=mode, error=args.error))
    with open(args.rows, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    for r in rows:
        print(f"  row: {describe(r)}", flush=True)


def describe(r):
    what = f"[{r['part']}] {r['model']} {r['impl']}{'/' + r['backend'] if r.get('backend') else ''} {r['mode']} " \
           f"N={r['N']} B={r['batch']}"
    if r["error"]:
        return f"{what}: FAILED: {r['error']}"
    return f"{what}: {num(r['median'])} {r['unit']} ({num(r['min'])}–{num(r['max'])}, {len(r['runs'])} runs)"


# ---------------------------------------------------------------- best-backend

def best_backend(args):
    best = None
    for path in args.csv:
        if not os.path.exists(path):
            continue
        for r in csv.DictReader(open(path)):
            if r["error"] or int(r["N"]) != args.N or float(r["samples_per_s"]) <= 0:
                continue
            if best is None or float(r["samples_per_s"]) > best[0]:
                best = (float(r["samples_per_s"]), r.get("backend") or "default")
    print(best[1] if best else args.fallback)


# ---------------------------------------------------------------- report

def num(v):
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def short(error, limit=90):
    error = " ".join(str(error).split())
    return error if len(error) <= limit else error[:limit - 1] + "…"


def best_of(rows):
    ok = [r for r in rows if not r["error"] and r.get("median") is not None]
    return max(ok, key=lambda r: r["median"]) if ok else None


def cell(rows, show_batch):
    if not rows:
        return "—"
    b = best_of(rows)
    if b is None:
        return "failed: " + short(rows[0]["error"].replace("error: ", ""), 48)
    text = f"{num(b['median'])} ({num(b['min'])}–{num(b['max'])})"
    extra = []
    if b.get("backend") and b["backend"] != "":
        extra.append(b["backend"])
    if show_batch:
        extra.append(f"B {b['batch']}")
    if b["impl"] == "ours-mita" and b.get("m") and show_batch:
        extra.append(f"m=k={b['m']}")
    return text + (f" [{', '.join(extra)}]" if extra else "")


def part_table(part, rows):
    lines = [f"**{part}.** {PARTS.get(part, '')}", ""]
    if rows:
        impls = [i for i in IMPLS if any(r["impl"] == i for r in rows)]
        impls += sorted({r["impl"] for r in rows} - set(impls))
        keys = []
        for r in rows:
            if not r["N"]:  # an error row of a whole command: listed below the table
                continue
            k = (r["model"], r.get("precision", ""), r["mode"], r["N"])
            if k not in keys:
                keys.append(k)
        show_batch = len({r["batch"] for r in rows}) > 1 and part == "d"
        batch_note = "" if show_batch else f" (batch {rows[0]['batch']})" if len({r['batch'] for r in rows}) == 1 else ""
        head = ["model", "precision", "mode", "N"] + [LABELS.get(i, i) for i in impls] + ["MiTA / best dense"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for k in keys:
            at = [r for r in rows if (r["model"], r.get("precision", ""), r["mode"], r["N"]) == k]
            by_impl = {i: [r for r in at if r["impl"] == i] for i in impls}
            mita = best_of(by_impl.get("ours-mita", []))
            dense = [best_of(v) for i, v in by_impl.items() if i != "ours-mita" and not i.startswith("ours-mita")]
            dense = [d for d in dense if d]
            best_dense = max(dense, key=lambda r: r["median"]) if dense else None
            if mita and best_dense:
                winner = LABELS.get(best_dense["impl"], best_dense["impl"])
                if best_dense.get("backend"):
                    winner += f" [{best_dense['backend']}]"
                ratio = f"**{mita['median'] / best_dense['median']:.2f}×** vs {winner}"
            else:
                ratio = "n/a"
            lines.append("| " + " | ".join([k[0], k[1], k[2], f"{k[3]:,}"] +
                                           [cell(by_impl[i], show_batch) for i in impls] + [ratio]) + " |")
        unit = rows[0]["unit"]
        lines += ["", f"Cells: median {unit} (min–max over {runs_note(rows)}){batch_note}; [backend] = the "
                  "fastest SDPA backend of that PyTorch cell" + ("; B = the fastest batch tried" if show_batch else "")
                  + "."]
        failed = [r for r in rows if r["error"]]
        if failed:
            lines += ["", "Failed measurements:"]
        for r in failed:
            backend = f" [{r['backend']}]" if r.get("backend") else ""
            lines.append(f"- {LABELS.get(r['impl'], r['impl'])}{backend} {r['model']} {r['mode']} N={r['N']:,} "
                         f"B={r['batch']}: {short(r['error'], 200)}")
    return lines


def runs_note(rows):
    counts = sorted({len(r["runs"]) for r in rows if not r["error"]})
    if not counts:
        return "no runs"
    return f"{counts[0]} timed windows" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} timed windows"


def markdown(rows, args):
    commits = sorted({r.get("commit", "") for r in rows if r.get("commit")}) or ["unknown"]
    gpu = args.gpu or next((r["gpu"] for r in rows if r.get("gpu")), "")
    date = args.date or datetime.date.today().isoformat()
    lines = [f"### MiTA vs dense attention, {date} ({', '.join(commits)})", ""]
    if args.command:
        lines += [f"`{args.command}`" + (f" on {gpu}" if gpu else ""), ""]
    elif gpu:
        lines += [f"GPU: {gpu}", ""]
    if args.note:
        lines += [args.note, ""]
    for part in sorted({r["part"] for r in rows}):
        lines += part_table(part, [r for r in rows if r["part"] == part]) + [""]
    return "\n".join(lines)


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            flat = dict(r)
            flat["runs"] = ";".join(f"{v:.6g}" for v in r.get("runs") or [])
            for key in ("median", "min", "max"):
                if flat.get(key) is not None:
                    flat[key] = f"{flat[key]:.6g}"
            w.writerow(flat)


def report(args):
    rows = [json.loads(line) for line in open(args.rows) if line.strip()]
    text = markdown(rows, args)
    if args.csv:
        write_csv(rows, args.csv)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if args.append:
        with open(args.append, "a") as f:
            f.write("\n" + text + "\n")
    if args.copy_raw:
        commit = (sorted({r.get("commit", "") for r in rows if r.get("commit")}) or ["unknown"])[0]
        dest = os.path.join(args.copy_raw, f"{args.date or datetime.date.today().isoformat()}-{commit}")
        os.makedirs(dest, exist_ok=True)
        for path in [args.rows, args.csv, args.md] + (args.extra or []):
            if path and os.path.exists(path):
                shutil.copy(path, dest)
        print(f"raw files copied to {dest}", file=sys.stderr)
    print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("ingest", help="raw benchmark output → rows")
    i.add_argument("raw", nargs="*", help="raw output files (missing or empty files add nothing)")
    i.add_argument("--rows", required=True, help="append the rows to this JSONL")
    i.add_argument("--source", required=True, choices=["vitrain", "timm", "mita_long", "rows"])
    i.add_argument("--part", required=True)
    i.add_argument("--model", default="", help="the rows' model (and the error row's)")
    i.add_argument("--model-from-line", action="store_true", help="bench JSON lines keep the model they name")
    i.add_argument("--impl", default="ours-dense",
                   help="impl of `vitrain bench` rows; of the error rows, comma-separated")
    i.add_argument("--N", type=int, default=0)
    i.add_argument("--batch", type=int, default=0)
    i.add_argument("--unit", default="img/s", help="img/s (as measured) or steps/s (img/s ÷ batch)")
    i.add_argument("--precision", default="bf16", help="precision of the error rows")
    i.add_argument("--modes", default="train", help="modes of the error row, comma-separated")
    i.add_argument("--error", default="", help="the command's failure, if it failed")
    i.add_argument("--stopped", action="store_true", help="the command was cut short: rows may be missing")
    i.add_argument("--commit", default="unknown")
    i.add_argument("--gpu", default="")
    b = sub.add_parser("best-backend", help="the fastest SDPA backend at one N in bench_mita_long.py CSVs")
    b.add_argument("csv", nargs="+")
    b.add_argument("--N", type=int, required=True)
    b.add_argument("--fallback", default="flash")
    r = sub.add_parser("report", help="rows → CSV + Markdown")
    r.add_argument("rows")
    r.add_argument("--csv")
    r.add_argument("--md")
    r.add_argument("--append", help="append the Markdown section to this file (e.g. BENCHMARKS.md)")
    r.add_argument("--copy-raw", help="copy rows, CSV, Markdown (and --extra files) into DIR/<date>-<commit>/")
    r.add_argument("--extra", nargs="*", help="more files for --copy-raw (the log)")
    r.add_argument("--gpu", default="")
    r.add_argument("--command", default="", help="the command that measured, for the section's first line")
    r.add_argument("--note", default="")
    r.add_argument("--date", default="", help="the section's date (default: today)")
    args = p.parse_args()
    {"ingest": ingest, "best-backend": best_backend, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
