#!/usr/bin/env python3
"""timm's training and inference throughput on synthetic data: the peer of `vitrain bench`.

For each model and mode (eager, torch.compile): a training step is forward + label-smoothed cross-entropy under
bf16 autocast, zero_grad, backward, AdamW (timm's create_optimizer_v2: no weight decay on 1-D params, torch's
default foreach implementation, fused=False unless --fused-adamw); inference is eval mode under no_grad and
autocast. Timing synchronizes only at the ends of the timed region. One JSON line per (model, mode) goes to
stdout and, with --out, is appended to that file, with the keys `vitrain bench` writes (impl, model, batch_size,
amp, device, train_img_per_s, train_step_ms, train_peak_mem_gib, infer_img_per_s, infer_peak_mem_gib).

On the GPU machine run it with the machine's own libraries:
  env -u LD_LIBRARY_PATH python3 scripts/bench_timm.py --models deit_tiny_patch16_224 deit_small_patch16_224
"""
import argparse
import gc
import json
import time

import timm
import timm.optim
import torch


def gib(nbytes):
    return nbytes / 1024**3


def timed(fn, warmup, steps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


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
    run = torch.compile(model) if mode == "compile" else model

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            loss = loss_fn(run(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    warmup = args.warmup + (args.compile_warmup if mode == "compile" else 0)
    seconds = timed(step, warmup, args.steps)
    peak = torch.cuda.max_memory_allocated()
    del model, opt, run
    return args.batch_size * args.steps / seconds, 1e3 * seconds / args.steps, gib(peak)


def bench_infer(name, mode, args, x):
    fresh_memory()
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=1000).cuda().eval()
    run = torch.compile(model) if mode == "compile" else model

    @torch.no_grad()
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            run(x)

    warmup = args.warmup + (args.compile_warmup if mode == "compile" else 0)
    seconds = timed(step, warmup, args.steps)
    peak = torch.cuda.max_memory_allocated()
    del model, run
    return args.batch_size * args.steps / seconds, gib(peak)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["deit_tiny_patch16_224", "deit_small_patch16_224"])
    p.add_argument("--modes", nargs="+", default=["eager", "compile"], choices=["eager", "compile"])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile-warmup", type=int, default=5, help="extra warm-up steps for torch.compile")
    p.add_argument("--no-amp", dest="amp", action="store_false", help="f32 instead of bf16 autocast")
    p.add_argument("--fused-adamw", action="store_true", help="torch's fused AdamW (timm's default is not fused)")
    p.add_argument("--no-infer", dest="infer", action="store_false")
    p.add_argument("--out", help="append the JSON lines to this file")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = True  # timm's train.py does the same; only matters without --amp
    torch.backends.cudnn.benchmark = True
    B = args.batch_size
    x = torch.randn(B, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    y = torch.arange(B, device="cuda") % 1000
    for name in args.models:
        for mode in args.modes:
            train_ips, step_ms, train_peak = bench_train(name, mode, args, x, y)
            infer_ips, infer_peak = bench_infer(name, mode, args, x) if args.infer else (None, None)
            line = {
                "impl": f"timm_{mode}", "model": name, "batch_size": B, "steps": args.steps,
                "warmup": args.warmup, "amp": args.amp, "device": "cuda:0",
                "train_img_per_s": round(train_ips, 1), "train_step_ms": round(step_ms, 3),
                "train_peak_mem_gib": round(train_peak, 3),
                "infer_img_per_s": None if infer_ips is None else round(infer_ips, 1),
                "infer_peak_mem_gib": None if infer_peak is None else round(infer_peak, 3),
                "fused_adamw": args.fused_adamw, "torch": torch.__version__, "timm": timm.__version__,
                "gpu": torch.cuda.get_device_name(0),
            }
            emit(line, args.out)


if __name__ == "__main__":
    main()
