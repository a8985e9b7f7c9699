#!/usr/bin/env python3
"""Markdown tables from the JSON lines of `vitrain bench --json` and scripts/bench_timm.py.

One training and one inference table per batch size; a row per model; columns: our dense and MiTA img/s (and any
other attention measured; "+graph": `vitrain bench --cuda-graph`), timm's img/s in each mode measured (eager and
torch.compile's default, reduce-overhead and max-autotune modes), the strongest of them, the ratios (our dense vs
timm eager and vs the strongest timm, MiTA vs our dense of the same mode), the step time in ms (batch / img/s) and
peak memory in GiB. A cell with several timed windows reads "median (min–max)".
  python3 scripts/bench_table.py BENCH.jsonl [--gpu "NVIDIA H200, ..."]
"""
import argparse
import json


PEERS = ("timm_eager", "timm_compile", "timm_reduce_overhead", "timm_max_autotune")


def fmt(v, f="{:,.0f}"):
    return "n/a" if v is None else f.format(v)


def with_spread(r, kind):
    """A row's img/s for kind (train / infer), with the min–max of its timed windows when it has several."""
    v, runs = r.get(f"{kind}_img_per_s"), r.get(f"{kind}_runs") or []
    return fmt(v) if v is None or len(runs) < 2 else f"{fmt(v)} ({fmt(min(runs))}–{fmt(max(runs))})"


def ratio(a, b):
    return "n/a" if a is None or not b else f"**{a / b:.2f}×**"


def variant(a):
    """'mita+graph' -> ('mita', '+graph')."""
    base = a.split("+")[0]
    return base, a[len(base):]


def tables(rows, gpu=""):
    for r in rows:
        if r.get("cuda_graph"):
            r["attention"] = r.get("attention", "dense") + "+graph"
    out = []
    batches = sorted({r["batch_size"] for r in rows})
    for B in batches:
        at = [r for r in rows if r["batch_size"] == B]
        models = list(dict.fromkeys(r["model"] for r in at))
        attns = list(dict.fromkeys(r.get("attention", "dense") for r in at if r["impl"] == "vitrain"))
        peers = [p for p in PEERS if any(r["impl"] == p for r in at)]

        def find(model, impl, attn=None):
            for r in at:
                if r["model"] == model and r["impl"] == impl and (attn is None or r.get("attention", "dense") == attn):
                    return r
            return {}

        def strongest(model, key):
            """The fastest timm row of this model for `key`: ratios are taken against it."""
            measured = [find(model, p) for p in peers if find(model, p).get(key)]
            return max(measured, key=lambda r: r[key], default={})

        cols = [f"ours {a}" for a in attns] + [p.replace("_", " ") for p in peers]
        ratio_peers = [p for p in ("timm_eager",) if p in peers] + (["strongest timm"] if peers else [])
        for kind in ("train", "infer"):
            key, mem = f"{kind}_img_per_s", f"{kind}_peak_mem_gib"
            out.append(f"Batch {B}, {kind}{', ' + gpu if gpu else ''}: img/s, then step ms (batch / img/s) and peak GiB"
                       " in the same column order.\n")
            head = ["model"] + [f"{c} img/s" for c in cols] + (["strongest timm"] if peers else [])
            dense_attns = [a for a in attns if variant(a)[0] == "dense"]
            others = [a for a in attns if variant(a)[0] != "dense" and "dense" + variant(a)[1] in attns]
            head += [f"{a} vs {p.replace('_', ' ')}" for a in dense_attns for p in ratio_peers]
            head += [f"{a} vs our dense{variant(a)[1]}" for a in others]
            head += ["step ms", "peak GiB"]
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for m in models:
                cells_rows = [find(m, "vitrain", a) for a in attns] + [find(m, p) for p in peers]
                ips = [r.get(key) for r in cells_rows]
                best = strongest(m, key)
                cells = [m] + [with_spread(r, kind) for r in cells_rows]
                if peers:
                    cells.append(best["impl"].replace("_", " ") if best else "n/a")
                peer_rows = {"timm_eager": find(m, "timm_eager"), "strongest timm": best}
                cells += [ratio(find(m, "vitrain", a).get(key), peer_rows[p].get(key)) for a in dense_attns
                          for p in ratio_peers]
                cells += [ratio(find(m, "vitrain", a).get(key), find(m, "vitrain", "dense" + variant(a)[1]).get(key))
                          for a in others]
                cells.append(" / ".join(fmt(None if not v else 1e3 * B / v, "{:.1f}") for v in ips))
                cells.append(" / ".join(fmt(r.get(mem), "{:.2f}") for r in cells_rows))
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("jsonl")
    p.add_argument("--gpu", default="")
    args = p.parse_args()
    rows = [json.loads(line) for line in open(args.jsonl) if line.strip()]
    print(tables(rows, args.gpu))


if __name__ == "__main__":
    main()
