#!/usr/bin/env python3
"""timm's training and inference throughput on synthetic data: the peer of `vitrain bench`.

For each model and mode (eager; torch.compile in its default, reduce-overhead and max-autotune modes, impl
timm_eager, timm_compile, timm_reduce_overhead, timm_max_autotune): a training step is forward + label-smoothed
cross-entropy under bf16 autocast, zero_grad, backward, AdamW (timm's create_optimizer_v2: no weight decay on 1-D
params, torch's default foreach implementation, fused=False unless --fused-adamw); inference is eval mode under
no_grad and autocast. Timing synchronizes only at the ends of each timed window (--repeats windows of --steps steps
after the warm-up; the figures are the median window, train_runs / infer_runs list each). One JSON line per (model, mode,
SDPA backend) goes to stdout and, with --out, is appended to that file, with the keys `vitrain bench` writes (impl,
model, batch_size, amp, device, train_img_per_s, train_step_ms, train_peak_mem_gib, infer_img_per_s,
infer_peak_mem_gib). --sdpa-backends flash efficient cudnn runs each measurement with PyTorch's
scaled_dot_product_attention restricted to that backend (timm's attention calls it); a failure there (a backend
that does not take these inputs) becomes the line's "error" and the run goes on.

On the GPU machine run it with the machine's own libraries:
  env -u LD_LIBRARY_PATH python3 scripts/bench_timm.py --models deit_tiny_patch16_224 deit_small_patch16_224
"""
import argparse
import contextlib
import gc
import json
import statistics
import time

import timm
import timm.optim
import torch


def gib(nbytes):
    return nbytes / 1024**3


def timed(fn, warmup, steps):
    return timed_windows(fn, warmup, steps, 1)[0]


def timed_windows(fn, warmup, steps, windows):
    """fn() `warmup` times, then `windows` windows of `steps` calls, synchronized at each window's ends: seconds."""
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(windows):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
    return seconds


def sdpa_backend(name):
    """A context restricting F.scaled_dot_product_attention to one backend; 'default' leaves PyTorch's choice."""
    if name in (None, "", "default"):
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[name])


SDPA_BACKENDS = ["default", "flash", "efficient", "cudnn", "math"]
# --modes: eager, or torch.compile with this mode; a JSON line's impl is <peer>_<mode> with '-' as '_'.
MODES = {"eager": None, "compile": "default", "reduce-overhead": "reduce-overhead", "max-autotune": "max-autotune"}


def impl_name(peer, mode):
    return f"{peer}_{mode.replace('-', '_')}"


def compiled(model, mode):
    """The model as --modes `mode` runs it, and the call to make before each step: the CUDA-graph modes
    (reduce-overhead, max-autotune) replay graphs whose outputs the next step overwrites, so each step is marked."""
    if MODES[mode] is None:
        return model, lambda: None
    run = torch.compile(model, mode=MODES[mode])
    if MODES[mode] == "default":
        return run, lambda: None
    return run, torch.compiler.cudagraph_mark_step_begin


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def under_backend(backend, line, measure):
    """measure() with SDPA restricted to `backend`. A failure goes into line["error"] (torch.compile's caches and the
    memory are reset) and gives None: one failed measurement must not stop the others."""
    try:
        with sdpa_backend(backend):
            return measure()
    except Exception as e:  # noqa: BLE001
        line["error"] = first_line(e)
        torch._dynamo.reset()
        fresh_memory()
        return None


def emit(line, out):
    """Prints one result as a JSON line and, when `out` is given, appends it to that file."""
    text = json.dumps(line)
    print(text, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")


def fresh_memory():
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def bench_train(name, mode, args, x, y):
    fresh_memory()
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=1000).cuda().train()
    fused = {"fused": True} if args.fused_adamw else {}  # torch's default otherwise: foreach, not fused
    opt = timm.optim.create_optimizer_v2(model, "adamw", lr=1e-3, weight_decay=0.05, **fused)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    run, mark_step = compiled(model, mode)

    def step():
        mark_step()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            loss = loss_fn(run(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    warmup = args.warmup + (args.compile_warmup if MODES[mode] else 0)
    runs = [args.batch_size * args.steps / s for s in timed_windows(step, warmup, args.steps, args.repeats)]
    peak = torch.cuda.max_memory_allocated()
    del model, opt, run
    return runs, gib(peak)


def bench_infer(name, mode, args, x):
    fresh_memory()
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=1000).cuda().eval()
    run, mark_step = compiled(model, mode)

    @torch.no_grad()
    def step():
        mark_step()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            run(x)

    warmup = args.warmup + (args.compile_warmup if MODES[mode] else 0)
    runs = [args.batch_size * args.steps / s for s in timed_windows(step, warmup, args.steps, args.repeats)]
    peak = torch.cuda.max_memory_allocated()
    del model, run
    return runs, gib(peak)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["deit_tiny_patch16_224", "deit_small_patch16_224"])
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES),
                   help="eager, and torch.compile's modes (compile = its default mode)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=1, help="timed windows of --steps steps (figures: the median)")
    p.add_argument("--sdpa-backends", nargs="+", default=["default"], choices=SDPA_BACKENDS,
                   help="run each measurement with SDPA restricted to each of these backends")
    p.add_argument("--compile-warmup", type=int, default=5, help="extra warm-up steps for torch.compile")
    p.add_argument("--no-amp", dest="amp", action="store_false", help="f32 instead of bf16 autocast")
    p.add_argument("--fused-adamw", action="store_true", help="torch's fused AdamW (timm's default is not fused)")
    p.add_argument("--no-infer", dest="infer", action="store_false")
    p.add_argument("--no-train", dest="train", action="store_false",
                   help="inference only (max-autotune's tuning of the training graph takes minutes)")
    p.add_argument("--out", help="append the JSON lines to this file")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = True  # timm's train.py does the same; only matters without --amp
    torch.backends.cudnn.benchmark = True
    B = args.batch_size
    x = torch.randn(B, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    y = torch.arange(B, device="cuda") % 1000
    failed = False
    for name in args.models:
        for mode in args.modes:
            for backend in args.sdpa_backends:
                line = {"impl": impl_name("timm", mode), "model": name, "batch_size": B, "steps": args.steps,
                        "warmup": args.warmup, "repeats": args.repeats, "amp": args.amp, "device": "cuda:0",
                        "sdpa_backend": backend, "fused_adamw": args.fused_adamw, "torch": torch.__version__,
                        "timm": timm.__version__, "gpu": torch.cuda.get_device_name(0), "error": ""}
                result = under_backend(backend, line, lambda: (
                    bench_train(name, mode, args, x, y) if args.train else (None, None),
                    bench_infer(name, mode, args, x) if args.infer else (None, None)))
                if result is None:
                    failed = True
                    emit(line, args.out)
                    continue
                (train_runs, train_peak), (infer_runs, infer_peak) = result
                train_ips = None if train_runs is None else statistics.median(train_runs)
                infer_ips = None if infer_runs is None else statistics.median(infer_runs)
                line.update({
                    "train_img_per_s": None if train_ips is None else round(train_ips, 1),
                    "train_step_ms": None if train_ips is None else round(1e3 * B / train_ips, 3),
                    "train_peak_mem_gib": None if train_peak is None else round(train_peak, 3),
                    "train_runs": None if train_runs is None else [round(v, 1) for v in train_runs],
                    "infer_img_per_s": None if infer_ips is None else round(infer_ips, 1),
                    "infer_peak_mem_gib": None if infer_peak is None else round(infer_peak, 3),
                    "infer_runs": None if infer_runs is None else [round(v, 1) for v in infer_runs],
                })
                emit(line, args.out)
    if failed:
        raise SystemExit(1)

if __name__ == "__main__":
    main()
