#!/usr/bin/env python3
"""PyTorch peer of `vitrain bench --sequence N`: training steps/s of the same sequence classifier.

Model (scripts/bench_mita_long.py's blocks): random token features x [B, N, dim] (already embedded, as ours) →
`depth` pre-norm blocks (qkv Linear, F.scaled_dot_product_attention, proj; LayerNorm eps 1e-6; MLP ×mlp_ratio,
GELU) → LayerNorm → mean over N → Linear(dim, 10). One training step: forward and label-smoothed (0.1)
cross-entropy under bf16 autocast, zero_grad, backward, fused AdamW (lr 1e-3, weight decay 0.05): `vitrain
bench`'s step. Timing: --warmup steps, then --repeats windows of --steps steps, synchronized at each window's ends.

For each N: eager under each of --backends (SDPA restricted to that backend), then, with --compile, torch.compile
in each of --compile-modes (default; reduce-overhead, max-autotune: CUDA graphs, which matter at these small steps)
under the backend that was fastest eager at that N. A failure (out of memory, a backend that does not take the
inputs) becomes that row's error and the run goes on. One JSON line per measurement, in the rows
scripts/bench_mita_table.py reads (part, model, impl torch-eager / torch-compile / torch-reduce-overhead /
torch-max-autotune, backend, mode train, N, batch, runs [steps/s], median, min, max, unit, error).

On the GPU machine: env -u LD_LIBRARY_PATH python3 scripts/bench_sequence_torch.py --part c --model lra \\
    --dim 64 --depth 2 --heads 2 --mlp-ratio 2 --ns 1024,2048,4096 --batch 32 --compile --out rows.jsonl
"""
import argparse
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from bench_mita_long import SequenceTransformer, int_list
from bench_timm import MODES, SDPA_BACKENDS, compiled, emit, fresh_memory, gib, impl_name, timed_windows, under_backend

CLASSES = 10


class SequenceClassifier(nn.Module):
    def __init__(self, dim, depth, heads, mlp_ratio):
        super().__init__()
        self.encoder = SequenceTransformer(dim, depth, heads, mlp_ratio)
        self.head = nn.Linear(dim, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def bench_train(args, N, mode):
    """Steps/s of each timed window and the peak GiB, the model run as --modes `mode` (bench_timm.MODES)."""
    fresh_memory()
    torch.manual_seed(0)
    model = SequenceClassifier(args.dim, args.depth, args.heads, args.mlp_ratio).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=True)
    run, mark_step = compiled(model, mode)
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(args.batch, N, args.dim, device="cuda", generator=g)
    y = torch.arange(args.batch, device="cuda") % CLASSES

    def step():
        mark_step()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(run(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    warmup = args.warmup + (args.compile_warmup if MODES[mode] else 0)
    runs = [args.steps / s for s in timed_windows(step, warmup, args.steps, args.repeats)]
    peak = gib(torch.cuda.max_memory_allocated())
    del model, opt, run, x, y
    return runs, peak


def measure(args, N, backend, mode):
    row = {"part": args.part, "model": args.model, "impl": impl_name("torch", mode).replace("_", "-"),
           "backend": backend, "mode": "train", "N": N, "batch": args.batch, "runs": [], "median": None,
           "min": None, "max": None, "unit": "steps/s", "error": "", "precision": "bf16",
           "shape": f"dim {args.dim}, depth {args.depth}, {args.heads} heads, MLP x{args.mlp_ratio:g}"}
    result = under_backend(backend, row, lambda: bench_train(args, N, mode))
    if result is not None:
        runs, peak = result
        row.update(runs=[round(v, 4) for v in runs], median=round(statistics.median(runs), 4),
                   min=round(min(runs), 4), max=round(max(runs), 4), peak_gib=round(peak, 3))
    emit(row, args.out)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", default="c", help="the benchmark part the rows belong to")
    p.add_argument("--model", default="lra", help="the rows' model name")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--mlp-ratio", type=float, default=2.0)
    p.add_argument("--ns", default="1024,2048,4096", help="sequence lengths, comma-separated")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=20, help="steps per timed window")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile-warmup", type=int, default=3, help="extra warm-up steps for torch.compile")
    p.add_argument("--repeats", type=int, default=3, help="timed windows")
    p.add_argument("--backends", default="flash,efficient,cudnn", help="SDPA backends for the eager runs")
    p.add_argument("--compile", action="store_true", help="also torch.compile, under the fastest eager backend")
    p.add_argument("--compile-modes", nargs="+", default=["compile"], choices=[m for m in MODES if MODES[m]],
                   help="torch.compile's modes with --compile (compile = its default mode)")
    p.add_argument("--out", help="append the JSON lines to this file")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_sequence_torch.py: needs a CUDA GPU")
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in SDPA_BACKENDS:
            sys.exit(f"bench_sequence_torch.py: unknown SDPA backend '{b}' (choose from {', '.join(SDPA_BACKENDS)})")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: sequence classifier training, "
          f"dim {args.dim}, depth {args.depth}, {args.heads} heads, batch {args.batch}", flush=True)
    for N in int_list(args.ns):
        eager = [measure(args, N, b, "eager") for b in backends]
        ok = [r for r in eager if not r["error"]]
        if args.compile:
            best = max(ok, key=lambda r: r["median"])["backend"] if ok else "default"
            for mode in args.compile_modes:
                measure(args, N, best, mode)


if __name__ == "__main__":
    main()
