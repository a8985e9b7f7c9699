#!/usr/bin/env python3
"""PyTorch's segmentation training and evaluation throughput on synthetic data: the peer of `vitrain bench` with a
segmentation config (MiTA Table 4, dense attention).

The model is scripts/segmenter_torch.py's Segmenter: timm's backbone (pretrained=False) built at --img (so a
32x32 pos-embed grid at 512), LayerNorm eps 1e-5, drop_path --drop-path, no head, and the CBT decoder (3 layers of
3 heads x 100 dims, 10x10 representatives, 150 classes). Attention is timm's (SDPA). A training step is forward,
bilinear upsampling to the crop, pixel cross-entropy with ignore 255 (under bf16 autocast with --amp), zero_grad,
backward, SGD Nesterov (momentum 0.9, lr 1e-3, no weight decay); evaluation is eval mode, the forward of the batch
(logits at the crop size) under no_grad (and autocast with --amp). Inputs: random normal images and label maps
like `vitrain bench`'s (every 7th pixel 255). Timing synchronizes only at the ends of the timed region; peak
memory is torch.cuda.max_memory_allocated of each phase. TF32 stays off (torch's default; our f32 GEMMs are full
f32) unless --tf32. --repeats times that many windows of --steps steps (figures: the median window; train_runs /
infer_runs list each); --sdpa-backends restricts timm's scaled_dot_product_attention to each backend in turn, and a
backend that fails (e.g. flash in f32) becomes that line's "error".

One JSON line per mode (eager; torch.compile in its default, reduce-overhead or max-autotune mode) goes to stdout
and, with --out, is appended to that file, with the keys `vitrain bench` writes (impl torch_eager / torch_compile /
torch_reduce_overhead / torch_max_autotune, model, task, batch_size, amp, train_img_per_s,
train_step_ms, train_peak_mem_gib, infer_img_per_s, infer_peak_mem_gib, ...).

On the GPU machine, from the repo root:
  env -u LD_LIBRARY_PATH python3 scripts/bench_segmenter_torch.py --backbone vit_small_patch16_384 --img 512 \
      --batch 8 [--amp] --out seg_torch.jsonl
"""
import argparse
import statistics

import timm
import torch
import torch.nn.functional as F

# The classification peer's timing, memory, backend and output rules.
from bench_timm import MODES, SDPA_BACKENDS, compiled, emit, fresh_memory, gib, impl_name, timed_windows, under_backend
from segmenter_torch import CbtDecoder, Segmenter, check_encoder, encoder_norm_layer

IGNORE = 255


def build_model(args):
    torch.manual_seed(0)
    encoder = timm.create_model(args.backbone, pretrained=False, img_size=args.img, num_classes=0,
                                norm_layer=encoder_norm_layer(), drop_path_rate=args.drop_path)
    check_encoder(encoder)
    patch = encoder.patch_embed.patch_size
    patch = patch[0] if isinstance(patch, (tuple, list)) else patch
    decoder = CbtDecoder(encoder.embed_dim, args.num_classes, layers=args.dec_layers, heads=args.dec_heads,
                         head_dim=args.dec_head_dim, reps_grid=args.reps_grid)
    return Segmenter(encoder, decoder, patch).cuda()


def synthetic_labels(B, S, classes):
    """`vitrain bench`'s label maps: pixel i is 255 when i % 7 == 3, else (i·7919 / 13) mod classes."""
    i = torch.arange(B * S * S, dtype=torch.int64)
    labels = torch.where(i % 7 == 3, torch.full_like(i, IGNORE), (i * 7919 // 13) % classes)
    return labels.reshape(B, S, S).cuda()


def bench_train(mode, args, x, y):
    fresh_memory()
    model = build_model(args).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, nesterov=True, weight_decay=0.0)
    run, mark_step = compiled(model, mode)
    last = {}

    def step():
        mark_step()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            logits = run(x)  # already upsampled to the crop
            loss = F.cross_entropy(logits, y, ignore_index=IGNORE)  # autocast runs it in f32
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        last["loss"] = loss

    warmup = args.warmup + (args.compile_warmup if MODES[mode] else 0)
    runs = [args.batch * args.steps / s for s in timed_windows(step, warmup, args.steps, args.repeats)]
    peak = torch.cuda.max_memory_allocated()
    last_loss = last["loss"].item()
    del model, opt, run, last
    return runs, gib(peak), params, last_loss


def bench_infer(mode, args, x):
    fresh_memory()
    model = build_model(args).eval()
    run, mark_step = compiled(model, mode)

    @torch.no_grad()
    def step():
        mark_step()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            run(x)

    warmup = args.warmup + (args.compile_warmup if MODES[mode] else 0)
    runs = [args.batch * args.steps / s for s in timed_windows(step, warmup, args.steps, args.repeats)]
    peak = torch.cuda.max_memory_allocated()
    del model, run
    return runs, gib(peak)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backbone", default="vit_small_patch16_384", help="timm model name")
    p.add_argument("--img", type=int, default=512, help="crop size (pos-embed grid img/16)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--num-classes", type=int, default=150)
    p.add_argument("--dec-layers", type=int, default=3)
    p.add_argument("--dec-heads", type=int, default=3)
    p.add_argument("--dec-head-dim", type=int, default=100)
    p.add_argument("--reps-grid", type=int, default=10)
    p.add_argument("--drop-path", type=float, default=0.1, help="Segmenter's encoder drop_path")
    p.add_argument("--amp", action="store_true", help="bf16 autocast (Segmenter's recipe trains without)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 matmuls and convolutions")
    p.add_argument("--modes", nargs="+", default=["eager", "compile"], choices=list(MODES),
                   help="eager, and torch.compile's modes (compile = its default mode)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=1, help="timed windows of --steps steps (figures: the median)")
    p.add_argument("--sdpa-backends", nargs="+", default=["default"], choices=SDPA_BACKENDS,
                   help="run each measurement with SDPA restricted to each of these backends")
    p.add_argument("--compile-warmup", type=int, default=3, help="extra warm-up steps for torch.compile")
    p.add_argument("--no-infer", dest="infer", action="store_false")
    p.add_argument("--out", help="append the JSON lines to this file")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = True
    B, S = args.batch, args.img
    x = torch.randn(B, 3, S, S, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    y = synthetic_labels(B, S, args.num_classes)
    failed = False
    for mode in args.modes:
        for backend in args.sdpa_backends:
            line = {
                "impl": impl_name("torch", mode), "model": args.backbone, "task": "segmentation", "attention": "dense",
                "decoder": "cbt", "img_size": S, "num_classes": args.num_classes, "batch_size": B,
                "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats, "amp": args.amp,
                "tf32": args.tf32, "device": "cuda:0", "gpus": 1, "sdpa_backend": backend, "error": "",
                "decoder_dims": {"layers": args.dec_layers, "heads": args.dec_heads, "head_dim": args.dec_head_dim,
                                 "reps_grid": args.reps_grid},
                "drop_path": args.drop_path, "torch": torch.__version__, "timm": timm.__version__,
                "gpu": torch.cuda.get_device_name(0),
            }
            result = under_backend(backend, line, lambda: (
                bench_train(mode, args, x, y), bench_infer(mode, args, x) if args.infer else (None, None)))
            if result is None:
                failed = True
                emit(line, args.out)
                continue
            (train_runs, train_peak, params, last_loss), (infer_runs, infer_peak) = result
            train_ips = statistics.median(train_runs)
            infer_ips = None if infer_runs is None else statistics.median(infer_runs)
            line.update({
                "params": params, "train_img_per_s": round(train_ips, 2), "train_step_ms": round(1e3 * B / train_ips, 3),
                "train_peak_mem_gib": round(train_peak, 3), "train_runs": [round(v, 2) for v in train_runs],
                "infer_img_per_s": None if infer_ips is None else round(infer_ips, 2),
                "infer_batch_ms": None if infer_ips is None else round(1e3 * B / infer_ips, 3),
                "infer_peak_mem_gib": None if infer_peak is None else round(infer_peak, 3),
                "infer_runs": None if infer_runs is None else [round(v, 2) for v in infer_runs],
                "last_loss": round(last_loss, 6),
            })
            emit(line, args.out)
    if failed:
        raise SystemExit(1)

if __name__ == "__main__":
    main()
