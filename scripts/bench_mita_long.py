#!/usr/bin/env python3
"""PyTorch peer of tools/bench_mita_long (the paper's Figure 5): dense attention through
F.scaled_dot_product_attention (flash backend for bf16) in the same 3-block pre-norm sequence model
(D 128, 2 heads, MLP ratio 4, final LayerNorm; input x [B, N, 128], no CLS, no position embedding), bf16
autocast inference, for the same N and batch lists. With --layer: the attention layer alone (qkv Linear,
SDPA, proj), forward and forward + backward, at C=128/H=2 with B = max(1, 262144 / N) and at the DeiT-S shape
(C 384, H 6, N 197, B 256).

Timing: one set-up call, then warm-up (cut short once a call is slower than --target-s), then as many calls as fit in --target-s
(1..--iters) between two CUDA events; a warm-up call slower than 4 × --target-s is the measurement itself. With
--repeats R that window is timed R times (ms_per_batch: the median; runs_ms: each, ';'-separated), and a call slower
than 4 × --target-s is timed alone R times (the warm-up call and R - 1 more). --backends runs everything once per
SDPA backend (the CSV's backend column).
Out of memory at one N becomes a CSV row with the error; the run goes on. The CSV has the columns
bench_mita_long writes (impl = torch).

On the GPU machine run it with the machine's own libraries:
  env -u LD_LIBRARY_PATH python3 scripts/bench_mita_long.py --csv out/torch_model.csv
"""
import argparse
import gc
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

COLUMNS = ("impl,mode,kind,shape,N,batch,m,k,iters,ms_per_batch,samples_per_s,tokens_per_s,peak_mem_gib,"
           "error,backend,runs_ms").split(",")


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])  # [B, H, N, d]
        return self.proj(out.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class SequenceTransformer(nn.Module):
    def __init__(self, dim=128, depth=3, heads=2, mlp_ratio=4.0):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(dim, heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        return self.norm(self.blocks(x))


def int_list(text):
    return [int(v) for v in text.split(",") if v.strip()]


def host_ms(fn):
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t0)


def time_calls(fn, args):
    """Returns (iters, [ms per call of each timed window])."""
    torch.cuda.synchronize()
    last = host_ms(fn)  # the first call pays one-time set-up (kernel selection, allocator growth)
    for _ in range(max(1, args.warmup)):
        last = host_ms(fn)
        if last > 4e3 * args.target_s:  # a call of many seconds is its own measurement (as bench_mita_long)
            return 1, [last] + [host_ms(fn) for _ in range(args.repeats - 1)]
        if last > 1e3 * args.target_s:
            break
    iters = max(1, min(args.iters, int(1e3 * args.target_s / max(last, 1e-3))))
    runs = []
    for _ in range(args.repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        runs.append(start.elapsed_time(stop) / iters)
    return iters, runs


class Report:
    def __init__(self, path):
        self.file = open(path, "w") if path else None
        if self.file:
            print(",".join(COLUMNS), file=self.file, flush=True)

    def add(self, row):
        ok = not row["error"]
        sps = 1e3 * row["batch"] / row["ms_per_batch"] if ok else 0.0
        row.update(samples_per_s=sps, tokens_per_s=sps * row["N"])
        if ok:
            print(f"{row['mode']:<13} torch {row['shape']:<6} N={row['N']:<8} B={row['batch']:<5} "
                  f"{sps:12.2f} samples/s {row['ms_per_batch']:10.3f} ms/batch  peak {row['peak_mem_gib']:.2f} GiB",
                  flush=True)
        else:
            print(f"{row['mode']:<13} torch {row['shape']:<6} N={row['N']:<8} B={row['batch']:<5} "
                  f"FAILED: {row['error']}", flush=True)
        if self.file:
            row["error"] = row["error"].replace(",", ";").replace("\n", " ").replace('"', "'")[:240]
            cells = [row[c] for c in COLUMNS]
            print(",".join(f"{c:.6g}" if isinstance(c, float) else str(c) for c in cells), file=self.file,
                  flush=True)


def fresh_memory():
    gc.collect()
    torch.cuda.empty_cache()


def measure(report, args, row, setup):
    """setup() builds the module and input and returns the call to time; errors become the row's."""
    row = dict(impl="torch", m=0, k=0, iters=0, ms_per_batch=0.0, peak_mem_gib=0.0, error="", runs_ms="",
               backend=args.current_backend, **row)
    fn = None
    try:
        fresh_memory()
        fn = setup()
        torch.cuda.reset_peak_memory_stats()
        row["iters"], runs = time_calls(fn, args)
        row["ms_per_batch"] = statistics.median(runs)
        row["runs_ms"] = ";".join(f"{v:.6g}" for v in runs)
        row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 1024**3
    except (torch.cuda.OutOfMemoryError, RuntimeError) as e:
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    del fn
    fresh_memory()
    report.add(row)


def random_input(shape, requires_grad=False):
    g = torch.Generator(device="cuda").manual_seed(1)
    return torch.randn(shape, device="cuda", generator=g, requires_grad=requires_grad)


def run_model(report, args):
    batches = int_list(args.batch_dense)
    for i, N in enumerate(int_list(args.ns)):
        B = batches[min(i, len(batches) - 1)]

        def setup(N=N, B=B):
            torch.manual_seed(0)
            model = SequenceTransformer().cuda().eval()
            x = random_input((B, N, 128))

            def call():
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                    model(x)
            return call

        measure(report, args, dict(mode="model_infer", kind="dense", shape="C128H2", N=N, batch=B), setup)


def run_layer(report, args, shape, C, H, N, B):
    for backward in (False, True):
        def setup():
            torch.manual_seed(0)
            attn = Attention(C, H).cuda().train(backward)
            x = random_input((B, N, C), requires_grad=backward)
            if not backward:
                def call():
                    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                        attn(x)
                return call
            grad = []

            def call_bwd():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = attn(x)
                if not grad:
                    grad.append(torch.ones_like(out))
                out.backward(grad[0])
            return call_bwd

        mode = "layer_fwdbwd" if backward else "layer_fwd"
        measure(report, args, dict(mode=mode, kind="dense", shape=shape, N=N, batch=B), setup)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ns", default=None, help="sequence lengths (default 1024..1048576; --layer: 197..1048576)")
    p.add_argument("--batch-dense", default="64,16,4,1,1,1", help="batch per N (last value repeats)")
    p.add_argument("--iters", type=int, default=20, help="most timed calls per measurement")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--target-s", type=float, default=1.0, help="seconds of timed calls per measurement")
    p.add_argument("--csv", default="", help="write the rows to this CSV file")
    p.add_argument("--layer", action="store_true", help="time the attention layer alone")
    p.add_argument("--layer-tokens", type=int, default=262144, help="--layer: batch = max(1, this / N)")
    p.add_argument("--no-deit", action="store_true", help="--layer: skip the DeiT-S shape")
    p.add_argument("--repeats", type=int, default=1, help="timed windows per measurement (ms_per_batch: median)")
    p.add_argument("--backend", "--backends", dest="backends", default="default",
                   help="SDPA backends to run in turn, comma-separated: default (PyTorch's choice), flash, "
                        "efficient, cudnn, math")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_mita_long.py: needs a CUDA GPU")
    if args.ns is None:
        args.ns = ("197,1024,4096,16384,65536,262144,1048576" if args.layer
                   else "1024,4096,16384,65536,262144,1048576")
    torch.backends.cuda.matmul.allow_tf32 = True
    from bench_timm import SDPA_BACKENDS, sdpa_backend
    backends = [b.strip() for b in args.backends.replace("auto", "default").split(",") if b.strip()]
    for b in backends:
        if b not in SDPA_BACKENDS:
            sys.exit(f"bench_mita_long.py: unknown SDPA backend '{b}' (choose from {', '.join(SDPA_BACKENDS)})")
    report = Report(args.csv)
    for backend in backends:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16 autocast, SDPA backend {backend}, "
              f"{'attention layer alone' if args.layer else '3-block sequence model, inference'}", flush=True)
        args.current_backend = backend
        with sdpa_backend(backend):
            if args.layer:
                for N in int_list(args.ns):
                    run_layer(report, args, "C128H2", 128, 2, N, max(1, args.layer_tokens // N))
                if not args.no_deit:
                    run_layer(report, args, "deit_s", 384, 6, 197, 256)
            else:
                run_model(report, args)


if __name__ == "__main__":
    main()
