#!/usr/bin/env python3
"""Writes tests/nn/fixtures/vit5_<kind>.pth: tiny ViT-5 models built by the official MiTA-ViT-5 code
(QishuaiWen/MiTA, MiTA-ViT-5/models_vit5.py, rope.py, mita/*.py) with random weights, run on a random image, for
tests/nn/test_vit5.cpp to compare ours against.

Usage:  /usr/bin/python3 scripts/gen_vit5_fixtures.py MITA_REPO [OUT_DIR]
  MITA_REPO  a checkout of QishuaiWen/MiTA (its MiTA-ViT-5/ folder is imported as is)
  OUT_DIR    default tests/nn/fixtures
Needs only Debian's python3-torch (1.13, CPU). What the official files import but Debian lacks is filled in below,
and nothing of the authors' modules is rewritten:
  timm 0.4.12  Mlp, PatchEmbed, DropPath, trunc_normal_, register_model: timm's definitions, written out small
  einops       rearrange / repeat for the four patterns the files use
  flash_attn   _flash_attn_varlen_forward as plain attention per variable-length segment, returning (out, lse)
               where FlashAttention 2.6.3 does (tuple slots 4 and 5; lse [heads, tokens])
  F.scaled_dot_product_attention  torch 2.0's, written out (default scale 1/sqrt(d))
  .cuda()      rope.py moves its position index to the GPU; here it stays on the CPU
Kinds (all: one channel, image 48x48, patch 8 -> a 6x6 grid, 4 registers, N = 41 tokens; dim 16, 2 heads, depth 2, 5 classes;
qkv_bias False, RMSNorm, qk_norm, rope, reg_theta 100, as vit5_small passes them):
  dense     models_vit5.py's commented-out dense Attention (flash=False branch: explicit softmax), taken verbatim in
            spirit: q/k RMSNorm, rope on the patches, rope_reg on the registers, softmax(q k^T / sqrt(d)) v
  mita      mita.MiTA_Attention (pool 5x5 = 25 landmarks from the patch queries, kv_topk 30)
  mita_dwc  mita.MiTA_Attention_Conv (the same plus the 3x3 depth-wise conv of V's patches)
Each file holds, in float32: x [2, 1, 48, 48], the model's state dict (state.<official name>, rope buffers
included), logits = model(x); dense also g (a random cotangent) and dx = d<logits, g>/dx.
"""
import functools
import math
import os
import sys
import types
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


# ---- timm 0.4.12 (what models_vit5.py imports from it) ----

class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class DropPath(nn.Module):
    def __init__(self, p=0.):
        super().__init__()

    def forward(self, x):
        return x


def stub_timm():
    module("timm")
    module("timm.models")
    module("timm.models.vision_transformer", Mlp=Mlp, PatchEmbed=PatchEmbed, _cfg=lambda **k: k)
    module("timm.models.layers", DropPath=DropPath, to_2tuple=lambda x: (x, x),
           trunc_normal_=lambda t, std=1.0, **k: nn.init.trunc_normal_(t, std=std))
    module("timm.models.registry", register_model=lambda f: f)


# ---- einops, for the patterns of rope.py and mita_attention(_conv).py ----

def rearrange(x, pattern, **sizes):
    p = " ".join(pattern.split())
    if p == "... (d r) -> ... d r":
        return x.reshape(*x.shape[:-1], -1, sizes["r"])
    if p == "... d r -> ... (d r)":
        return x.flatten(-2)
    if p == "(B N) H d -> B H N d":
        return x.reshape(sizes["B"], -1, x.shape[1], x.shape[2]).permute(0, 2, 1, 3)
    raise NotImplementedError(pattern)


def repeat(x, pattern, **sizes):
    assert " ".join(pattern.split()) == "... n -> ... (n r)", pattern
    return x.repeat_interleave(sizes["r"], dim=-1)


# ---- FlashAttention's varlen forward: the same function, plain loops over the segments ----

def flash_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                         dropout_p, **unused):
    assert not causal and dropout_p == 0.0
    out = torch.zeros_like(q)
    lse = torch.zeros(q.shape[1], q.shape[0], dtype=torch.float32)
    for s in range(len(cu_seqlens_q) - 1):
        q0, q1 = int(cu_seqlens_q[s]), int(cu_seqlens_q[s + 1])
        k0, k1 = int(cu_seqlens_k[s]), int(cu_seqlens_k[s + 1])
        if q1 == q0:
            continue
        scores = torch.einsum("qhd,khd->hqk", q[q0:q1].float(), k[k0:k1].float()) * softmax_scale
        lse[:, q0:q1] = torch.logsumexp(scores, dim=-1)
        out[q0:q1] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v[k0:k1].float()).to(q.dtype)
    return None, None, None, None, out, lse, None, None


def stub_others():
    module("einops", rearrange=rearrange, repeat=repeat)
    unused = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stub: not used by the forward"))
    module("flash_attn", flash_attn_varlen_func=unused, flash_attn_qkvpacked_func=unused)
    module("flash_attn.flash_attn_interface", _flash_attn_varlen_forward=flash_varlen_forward,
           _flash_attn_varlen_backward=unused)
    torch.Tensor.cuda = lambda self, *a, **k: self
    if not hasattr(F, "scaled_dot_product_attention"):  # torch 2.0's, default scale 1/sqrt(d)
        F.scaled_dot_product_attention = lambda q, k, v: (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(
            -1) @ v


def dense_attention_class(models_vit5, VisionRotaryEmbedding):
    """models_vit5.py's commented-out Attention (the dense ViT-5 attention), flash=False."""
    RMSNorm = models_vit5.RMSNorm

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0., flash=True,
                     rope_size=0, rope_reg_size=0, num_registers=0, reg_theta=10000, qk_norm=False):
            super().__init__()
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            self.flash = flash
            self.num_registers = num_registers
            self.rope = VisionRotaryEmbedding(head_dim // 2, rope_size) if rope_size > 0 else None
            self.rope_reg = (VisionRotaryEmbedding(head_dim // 2, rope_reg_size, theta=reg_theta)
                             if rope_reg_size > 0 else None)
            self.qk_norm = qk_norm
            if qk_norm:
                self.q_norm = RMSNorm(head_dim, eps=1e-6)
                self.k_norm = RMSNorm(head_dim, eps=1e-6)

        def forward(self, x):
            B, N, C = x.shape
            reg_idx = N - self.num_registers
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
            q, k, v = qkv.unbind(dim=2)
            if self.qk_norm:
                qk_dtype = q.dtype
                q = self.q_norm(q).to(qk_dtype)
                k = self.k_norm(k).to(qk_dtype)
            if self.rope is not None:
                q = torch.cat((q[:, :1], self.rope(q[:, 1: reg_idx]), q[:, reg_idx:]), dim=1)
                k = torch.cat((k[:, :1], self.rope(k[:, 1: reg_idx]), k[:, reg_idx:]), dim=1)
            if self.rope_reg is not None:
                q = torch.cat((q[:, :1], q[:, 1: reg_idx], self.rope_reg(q[:, reg_idx:])), dim=1)
                k = torch.cat((k[:, :1], k[:, 1: reg_idx], self.rope_reg(k[:, reg_idx:])), dim=1)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
            x = (self.attn_drop(attn) @ v).transpose(1, 2).reshape(B, N, C)
            return self.proj_drop(self.proj(x))

    return Attention


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("norm1.weight") or name.endswith("norm2.weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))


def main():
    repo = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                 "tests", "nn", "fixtures")
    stub_timm()
    stub_others()
    sys.path.insert(0, os.path.join(repo, "MiTA-ViT-5"))
    import models_vit5
    import mita
    from rope import VisionRotaryEmbedding

    kinds = {"dense": dense_attention_class(models_vit5, VisionRotaryEmbedding),
             "mita": mita.MiTA_Attention, "mita_dwc": mita.MiTA_Attention_Conv}
    for seed, (kind, attention) in enumerate(kinds.items()):
        torch.manual_seed(seed)
        # vit5_small's arguments at a tiny size (models_vit5.py, vit5_small)
        model = models_vit5.vit_models(
            img_size=48, patch_size=8, in_chans=1, num_classes=5, embed_dim=16, depth=2, num_heads=2, mlp_ratio=4,
            qkv_bias=False, num_registers=4, flash=False, norm_layer=functools.partial(models_vit5.RMSNorm, eps=1e-6),
            block_layers=models_vit5.Block, rope=True, reg_theta=100, qk_norm=True, Attention_block=attention)
        model.eval()
        gen = torch.Generator().manual_seed(100 + seed)
        randomize(model, gen)
        x = torch.randn(2, 1, 48, 48, generator=gen)
        t = OrderedDict()
        t["x"] = x.clone()
        for name, value in model.state_dict().items():
            t["state." + name] = value.clone()
        if kind == "dense":
            x.requires_grad_(True)
            logits = model(x)
            g = torch.randn(logits.shape, generator=gen)
            (logits * g).sum().backward()
            t["g"] = g
            t["dx"] = x.grad.clone()
        else:
            with torch.no_grad():
                logits = model(x)
        t["logits"] = logits.detach().clone()
        path = os.path.join(out_dir, f"vit5_{kind}.pth")
        torch.save(t, path)
        print(f"{path}: {len(t)} tensors, {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
