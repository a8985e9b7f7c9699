#!/usr/bin/env python3
"""Makes the Segmenter parity fixture for tests/nn/test_segmenter_reference.cpp.

A small Segmenter as the MiTA paper's Segmenter recipe describes it (scripts/segmenter_torch.py): timm's VisionTransformer (img 64, patch
16, dim 48, depth 2, 3 heads, LayerNorm eps 1e-5, no head) and the CBT decoder (2 layers, 2 heads of 8 dims,
2x2 representatives, K = 5 classes), logits upsampled bilinearly to 64x64. Everything runs in float64 on the CPU
in train mode (all drop rates are 0), timm's attention through its non-fused (explicit softmax) path.

Seeded random weights, chosen so that every path matters: Linear/conv weights N(0, 1/fan_in) (the decoder's
proj twice that), LayerNorm weights 1 + 0.2·N, biases 0.1·N, cls_token/pos_embed 0.5·N, cls_emb N(0, 1),
step_x/step_rep ±(0.5 + |N|). Weights and images are rounded to float32 (stored as F32, exact in float64);
labels [2, 64, 64] in 0..4 with ~15% (and one 8-row band) set to 255. Loss: pixel cross-entropy, ignore 255,
mean over the other pixels; then loss.backward().

Stored (safetensors): every parameter under its name (encoder.<timm names>, decoder.<names>) F32,
input.images [2, 3, 64, 64] F32, input.labels [2, 64, 64] I64, output.masks [2, 5, 4, 4] F64 (the decoder's
patch-resolution masks), output.logits [2, 5, 64, 64] F64, output.loss [1] F64, grad.<name> F64 for every
parameter.

GPU machine (timm is not installed on the build machine), from the repo root:
  env -u LD_LIBRARY_PATH python3 scripts/gen_segmenter_reference.py tests/ref/segmenter_reference.safetensors
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from gen_deit_reference import write_safetensors  # safetensors, or the same format by hand
from segmenter_torch import CbtDecoder, Segmenter, check_encoder, encoder_norm_layer

IMG, PATCH, DIM, DEPTH, HEADS = 64, 16, 48, 2, 3
NUM_CLASSES = 5
DEC_LAYERS, DEC_HEADS, DEC_HEAD_DIM, REPS_GRID = 2, 2, 8, 2
BATCH = 2
IGNORE = 255
SEED = 20261129


def build_model() -> Segmenter:
    from timm.models.vision_transformer import VisionTransformer
    encoder = VisionTransformer(img_size=IMG, patch_size=PATCH, in_chans=3, num_classes=0, global_pool="token",
                                class_token=True, embed_dim=DIM, depth=DEPTH, num_heads=HEADS, mlp_ratio=4.0,
                                qkv_bias=True, drop_rate=0.0, drop_path_rate=0.0, norm_layer=encoder_norm_layer())
    check_encoder(encoder)
    for m in encoder.modules():  # explicit softmax attention rather than SDPA: the plainest f64 reference
        if hasattr(m, "fused_attn"):
            m.fused_attn = False
    decoder = CbtDecoder(DIM, NUM_CLASSES, layers=DEC_LAYERS, heads=DEC_HEADS, head_dim=DEC_HEAD_DIM,
                         reps_grid=REPS_GRID)
    return Segmenter(encoder, decoder, PATCH)


def randomize(model: nn.Module, gen: torch.Generator) -> None:
    """The seeded weights of the docstring, rounded to float32."""
    norm_params = set()
    for mname, m in model.named_modules():
        if isinstance(m, nn.LayerNorm):
            norm_params.update({f"{mname}.weight", f"{mname}.bias"})
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(tuple(p.shape), generator=gen, dtype=torch.float64)
            if name in norm_params:
                v = 1.0 + 0.2 * r if name.endswith(".weight") else 0.1 * r
            elif name.endswith(("step_x", "step_rep")):
                v = ((r >= 0).double() * 2.0 - 1.0) * (0.5 + r.abs())
            elif name.endswith("cls_emb"):
                v = r
            elif name.endswith(("cls_token", "pos_embed")):
                v = 0.5 * r
            elif name.endswith(".bias"):
                v = 0.1 * r
            else:  # Linear and conv weights: unit-scale activations, so the softmaxes are far from uniform
                gain = 2.0 if name.endswith("fn.proj.weight") else 1.0
                v = gain * r / math.sqrt(p[0].numel())
            p.copy_(v.float().double())


def main(out_path: str) -> None:
    import timm
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = build_model().double().train()
    randomize(model, gen)
    params = dict(model.named_parameters())
    for name in ["encoder.cls_token", "encoder.pos_embed", "encoder.blocks.1.attn.qkv.weight", "decoder.cls_emb",
                 "decoder.net.layers.1.fn.proj.weight", "decoder.net.layers.1.fn.step_x",
                 "decoder.net.layers.1.fn.step_rep", "decoder.net.layers.1.fn.to_out.bias",
                 "decoder.decoder_norm.weight", "decoder.mask_norm.bias"]:
        assert name in params, f"{name} is not a parameter; names: {sorted(params)}"
    assert "decoder.net.layers.0.fn.proj.bias" not in params
    assert params["encoder.pos_embed"].shape == (1, 1 + (IMG // PATCH) ** 2, DIM)

    images = torch.randn(BATCH, 3, IMG, IMG, generator=gen, dtype=torch.float64).float().double()
    labels = torch.randint(0, NUM_CLASSES, (BATCH, IMG, IMG), generator=gen, dtype=torch.int64)
    labels[torch.rand(BATCH, IMG, IMG, generator=gen, dtype=torch.float64) < 0.15] = IGNORE
    labels[1, 40:48, :] = IGNORE  # a band like crop padding

    logits = model(images)
    assert logits.shape == (BATCH, NUM_CLASSES, IMG, IMG) and logits.dtype == torch.float64
    loss = F.cross_entropy(logits, labels, ignore_index=IGNORE)
    loss.backward()
    with torch.no_grad():
        masks = model.forward_masks(images)

    tensors = {name: p.detach().float() for name, p in params.items()}  # exact: the values are f32-rounded
    tensors["input.images"] = images.float()
    tensors["input.labels"] = labels
    tensors["output.masks"] = masks.detach()
    tensors["output.logits"] = logits.detach()
    tensors["output.loss"] = loss.detach().reshape(1)
    for name, p in params.items():
        assert p.grad is not None and torch.isfinite(p.grad).all(), f"no finite gradient for {name}"
        assert p.grad.abs().max() > 0, f"zero gradient for {name}"
        tensors["grad." + name] = p.grad.detach()
    meta = {"torch": torch.__version__, "timm": timm.__version__, "seed": str(SEED), "mode": "train, float64 CPU",
            "config": json.dumps({"img": IMG, "patch": PATCH, "dim": DIM, "depth": DEPTH, "heads": HEADS,
                                  "num_classes": NUM_CLASSES, "dec_layers": DEC_LAYERS, "dec_heads": DEC_HEADS,
                                  "dec_head_dim": DEC_HEAD_DIM, "reps_grid": REPS_GRID, "ln_eps": 1e-5,
                                  "ignore_index": IGNORE})}
    write_safetensors(out_path, tensors, meta)
    size = os.path.getsize(out_path)
    kept = int((labels != IGNORE).sum())
    print(f"wrote {out_path}: {len(tensors)} tensors, {size} bytes ({size / 2**20:.3f} MiB), {len(params)} "
          f"parameters, loss {loss.item():.12f} over {kept} pixels, |logits| max {logits.abs().max().item():.4f}, "
          f"step_x.grad {params['decoder.net.layers.0.fn.step_x'].grad.reshape(-1).tolist()}")
    assert size < 2_500_000, "fixture too large to commit"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/ref/segmenter_reference.safetensors")
