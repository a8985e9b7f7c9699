"""Writes tests/ref/pos_embed_resample.safetensors with timm's and DeiT's position-embedding resampling
of one seeded pos_embed, for tests/unit/test_timm_weights.cpp to compare ours against torch itself.

Run where timm is installed (the GPU machine):  python3 scripts/gen_posembed_fixture.py OUT.safetensors
  timm:  timm.layers.resample_abs_pos_embed (bicubic, antialias=True), 1 prefix token
  deit:  F.interpolate(bicubic, align_corners=False) of the patch grid, as DeiT's fine-tuning code
Grids: 14x14 -> 16x16 (up), 14x14 -> 7x7 (down), 14x14 -> 12x20 (non-square); C = 8, float64 math.
"""
import sys

import timm
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from timm.layers import resample_abs_pos_embed


def deit_resample(pos, new_hw, old=14):
    cls, grid = pos[:, :1], pos[:, 1:]
    c = grid.shape[-1]
    grid = grid.reshape(1, old, old, c).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=new_hw, mode="bicubic", align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, c)
    return torch.cat([cls, grid], dim=1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "pos_embed_resample.safetensors"
    g = torch.Generator().manual_seed(1234)
    pos = torch.randn(1, 1 + 14 * 14, 8, generator=g, dtype=torch.float64)
    tensors = {"input": pos.float().contiguous()}
    for name, hw in {"up_16x16": (16, 16), "down_7x7": (7, 7), "rect_12x20": (12, 20)}.items():
        tensors[f"timm_{name}"] = resample_abs_pos_embed(pos, list(hw), num_prefix_tokens=1).float().contiguous()
        tensors[f"deit_{name}"] = deit_resample(pos, hw).float().contiguous()
    save_file(tensors, out, metadata={"timm": timm.__version__, "torch": torch.__version__})
    print(f"wrote {out}: timm {timm.__version__}, torch {torch.__version__}")


if __name__ == "__main__":
    main()
