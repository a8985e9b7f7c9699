#!/usr/bin/env python3
"""Makes the timm reference fixture for tests/nn/test_timm_reference.cpp.

Builds a small timm VisionTransformer (DeiT settings: LayerNorm eps 1e-6, class-token pooling, no dropout),
runs one batch in float64 on the CPU, and saves weights (timm names), the input, the targets, the logits, the
label-smoothed cross-entropy loss and every parameter gradient into one safetensors file.

Run where timm is installed (the GPU machine):  python3 scripts/gen_reference.py tests/ref/vit_ref.safetensors
"""
import sys
from functools import partial

import torch
import timm
from safetensors.torch import save_file
from timm.models.vision_transformer import VisionTransformer


def main(out_path: str) -> None:
    torch.manual_seed(0)
    model = VisionTransformer(
        img_size=28, patch_size=7, in_chans=1, num_classes=10, embed_dim=24, depth=2, num_heads=2, mlp_ratio=4.0,
        qkv_bias=True, norm_layer=partial(torch.nn.LayerNorm, eps=1e-6), global_pool="token",
    ).double()
    # timm initialises cls_token with std 1e-6 and biases with 0: perturb them so the test sees their effect.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name == "cls_token":
                p.add_(0.02 * torch.randn_like(p))
    model.train()  # no dropout configured, so train() only matters for parity with our trainer
    x = torch.randn(4, 1, 28, 28, dtype=torch.float64)
    target = torch.tensor([3, 0, 9, 5], dtype=torch.int64)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, target, label_smoothing=0.1)
    loss.backward()

    tensors = {name: p.detach().float().contiguous() for name, p in model.named_parameters()}
    tensors.update({"grad." + name: p.grad.float().contiguous() for name, p in model.named_parameters()})
    tensors["input"] = x.float().contiguous()
    tensors["target"] = target
    tensors["logits"] = logits.detach().float().contiguous()
    tensors["loss"] = loss.detach().float().reshape(1)
    meta = {"timm": timm.__version__, "torch": torch.__version__,
            "config": "img 28 patch 7 in_chans 1 classes 10 dim 24 depth 2 heads 2 mlp 4 eps 1e-6 smoothing 0.1"}
    save_file(tensors, out_path, metadata=meta)
    print(f"wrote {out_path}: {len(tensors)} tensors, loss {loss.item():.6f}, timm {timm.__version__}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/ref/vit_ref.safetensors")
