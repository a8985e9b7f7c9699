#!/usr/bin/python3
"""The PyTorch peer for tools/bench_train on the CPU: the same ViT (patch 7 on 28x28x1, dim 96, depth 4, 4 heads,
MLP x4, 10 classes), the same batch, synthetic data, forward + backward + AdamW per step, fp32.

Needs python3-torch (Debian). Prints one line: `torch <version> ... img/s`.
  python3 scripts/bench_torch_cpu.py --threads 2 --batch 128 --steps 30
"""
import argparse
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, int(dim * mlp_ratio))
        self.fc2 = nn.Linear(int(dim * mlp_ratio), dim)
        self.heads = heads

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        x = x + self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, img=28, patch=7, chans=1, classes=10, dim=96, depth=4, heads=4):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    x = torch.randn(a.batch, 1, 28, 28)
    y = torch.arange(a.batch) % 10
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    print(f"torch {torch.__version__} vit_micro batch {a.batch} threads {a.threads}: {a.batch * a.steps / dt:.1f} img/s")


if __name__ == "__main__":
    main()
