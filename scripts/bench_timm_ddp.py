#!/usr/bin/env python3
"""timm data-parallel training throughput on synthetic data: the peer of `vitrain launch -n N -- bench ...`.

Run under torchrun, one process per GPU:
  env -u LD_LIBRARY_PATH python3 -m torch.distributed.run --nproc_per_node 2 scripts/bench_timm_ddp.py \
      --models deit_small_patch16_224 --modes eager compile --out timm_ddp.jsonl
A step is forward + label-smoothed cross-entropy under bf16 autocast, zero_grad, backward (DDP all-reduces the
gradients in 25 MiB buckets during backward, torch's default), AdamW (timm's create_optimizer_v2). The batch is per
GPU; img/s counts all GPUs. Rank 0 also times NCCL all-reduce of one f32 buffer of the model's gradient size
(bus bandwidth = algorithm bandwidth · 2(n−1)/n, as nccl-tests) and prints one JSON line per (model, mode).
"""
import argparse
import json
import os
import time

import timm
import timm.optim
import torch
import torch.distributed as dist


def timed(fn, warmup, steps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def allreduce_busbw(numel, world, reps=20):
    buf = torch.ones(numel, device="cuda", dtype=torch.float32)
    seconds = timed(lambda: dist.all_reduce(buf), 5, reps) / reps
    algbw = numel * 4 / seconds
    return seconds * 1e3, algbw * 2 * (world - 1) / world / 1e9


def bench(name, mode, args, world):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=1000).cuda().train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = timm.optim.create_optimizer_v2(model, "adamw", lr=1e-3, weight_decay=0.05)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    run = torch.compile(ddp) if mode == "compile" else ddp
    B = args.batch_size
    x = torch.randn(B, 3, 224, 224, device="cuda")
    y = torch.arange(B, device="cuda") % 1000

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(run(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    torch.cuda.reset_peak_memory_stats()
    warmup = args.warmup + (args.compile_warmup if mode == "compile" else 0)
    seconds = timed(step, warmup, args.steps)
    numel = sum(p.numel() for p in model.parameters())
    ar_ms, busbw = allreduce_busbw(numel, world)
    return {
        "impl": f"timm_{mode}_ddp", "model": name, "gpus": world, "batch_size_per_gpu": B, "amp": True,
        "train_img_per_s": round(B * world * args.steps / seconds, 1),
        "train_step_ms": round(1e3 * seconds / args.steps, 3),
        "train_peak_mem_gib": round(torch.cuda.max_memory_allocated() / 1024**3, 3),
        "grad_allreduce_ms": round(ar_ms, 3), "allreduce_busbw_gbps": round(busbw, 1),
        "torch": torch.__version__, "timm": timm.__version__,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["deit_small_patch16_224"])
    p.add_argument("--modes", nargs="+", default=["eager", "compile"], choices=["eager", "compile"])
    p.add_argument("--batch-size", type=int, default=256, help="per GPU")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile-warmup", type=int, default=5)
    p.add_argument("--out", help="append the JSON lines to this file (rank 0)")
    args = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.backends.cudnn.benchmark = True
    for name in args.models:
        for mode in args.modes:
            line = bench(name, mode, args, world)
            if rank == 0:
                text = json.dumps(line)
                print(text, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(text + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
