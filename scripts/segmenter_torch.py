"""A PyTorch Segmenter with the CBT decoder (MiTA Table 4), written from the paper's description for our parity
fixture (scripts/gen_segmenter_reference.py) and the throughput peer (scripts/bench_segmenter_torch.py).

The encoder is timm's VisionTransformer (its final-norm tokens, CLS dropped); the decoder's parameter names are
the official MaskTransformer's and our models/cbt_decoder's: cls_emb, net.layers.N.norm,
net.layers.N.fn.{proj, step_x, step_rep, to_out}, decoder_norm, mask_norm. Logits are the patch-resolution masks
upsampled bilinearly (align_corners=False) to the input size.
"""
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


class CbsaAttention(nn.Module):
    """Contract-and-broadcast self-attention over x [B, n, D] whose first grid² tokens are the patch grid."""

    def __init__(self, dim, heads, head_dim, reps_grid):
        super().__init__()
        self.heads, self.head_dim, self.reps_grid = heads, head_dim, reps_grid
        inner = heads * head_dim
        self.proj = nn.Linear(dim, inner, bias=False)
        self.step_x = nn.Parameter(torch.randn(heads, 1, 1))
        self.step_rep = nn.Parameter(torch.randn(heads, 1, 1))
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x, grid):
        b, n, _ = x.shape
        h, d = self.heads, self.head_dim
        w = self.proj(x)  # [b, n, h·d]
        # Representatives: the patch tokens of W (row-major grid) adaptive-average-pooled to reps_grid².
        grid_w = w[:, : grid * grid].transpose(1, 2).reshape(b, h * d, grid, grid)
        rep = F.adaptive_avg_pool2d(grid_w, self.reps_grid).flatten(2).transpose(1, 2)  # [b, m, h·d]
        w_h = w.reshape(b, n, h, d).transpose(1, 2)  # [b, h, n, d]
        rep_h = rep.reshape(b, -1, h, d).transpose(1, 2)  # [b, h, m, d]
        scale = d ** -0.5
        attn = torch.softmax((rep_h @ w_h.transpose(-2, -1)) * scale, dim=-1)  # A [b, h, m, n]
        rep_h = rep_h + self.step_rep * (attn @ w_h)  # contract
        z = torch.softmax((rep_h @ rep_h.transpose(-2, -1)) * scale, dim=-1) @ rep_h  # reps attend to each other
        delta = self.step_x * (attn.transpose(-2, -1) @ z)  # broadcast [b, h, n, d]
        return self.to_out(delta.transpose(1, 2).reshape(b, n, h * d))


class CbsaLayer(nn.Module):
    """x + fn(norm(x)); no MLP."""

    def __init__(self, dim, heads, head_dim, reps_grid):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = CbsaAttention(dim, heads, head_dim, reps_grid)

    def forward(self, x, grid):
        return x + self.fn(self.norm(x), grid)


class Net(nn.Module):
    """Holds the layers as `net.layers.N`, the official name."""

    def __init__(self, dim, depth, heads, head_dim, reps_grid):
        super().__init__()
        self.layers = nn.ModuleList([CbsaLayer(dim, heads, head_dim, reps_grid) for _ in range(depth)])


class CbtDecoder(nn.Module):
    """patches [B, G², D] → masks [B, K, G, G]."""

    def __init__(self, dim, num_classes, layers=3, heads=3, head_dim=100, reps_grid=10):
        super().__init__()
        self.num_classes = num_classes
        self.cls_emb = nn.Parameter(torch.zeros(1, num_classes, dim))
        nn.init.trunc_normal_(self.cls_emb, std=0.02)
        self.net = Net(dim, layers, heads, head_dim, reps_grid)
        self.decoder_norm = nn.LayerNorm(dim)
        self.mask_norm = nn.LayerNorm(num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, patches, grid):
        b, k = patches.shape[0], self.num_classes
        x = torch.cat([patches, self.cls_emb.expand(b, -1, -1)], dim=1)  # classes last
        for layer in self.net.layers:
            x = layer(x, grid)
        x = self.decoder_norm(x)
        p, cl = x[:, :-k], x[:, -k:]
        p = p / p.norm(dim=-1, keepdim=True)
        cl = cl / cl.norm(dim=-1, keepdim=True)
        masks = self.mask_norm(p @ cl.transpose(1, 2))  # [b, G², K], LayerNorm over the classes
        return masks.transpose(1, 2).reshape(b, k, grid, grid)


class Segmenter(nn.Module):
    """encoder (timm VisionTransformer) + decoder; forward(images [B, 3, S, S]) → logits [B, K, S, S]."""

    def __init__(self, encoder, decoder, patch_size):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.patch_size = patch_size

    def forward_masks(self, images):
        tokens = self.encoder.forward_features(images)  # [B, prefix + G², D] after the final norm
        patches = tokens[:, self.encoder.num_prefix_tokens:]
        return self.decoder(patches, images.shape[-1] // self.patch_size)

    def forward(self, images):
        masks = self.forward_masks(images)
        return F.interpolate(masks, size=images.shape[-2:], mode="bilinear", align_corners=False)


def encoder_norm_layer():
    """The encoder's LayerNorm: eps 1e-5, not timm's 1e-6."""
    return partial(nn.LayerNorm, eps=1e-5)


def check_encoder(encoder, eps=1e-5):
    """Asserts what the parity depends on: one CLS token, no register tokens, final norm applied, eps as given."""
    assert encoder.num_prefix_tokens == 1, f"num_prefix_tokens {encoder.num_prefix_tokens}"
    assert isinstance(encoder.norm, nn.LayerNorm), f"final norm is {type(encoder.norm).__name__}"
    for name, m in encoder.named_modules():
        if isinstance(m, nn.LayerNorm):
            assert m.eps == eps, f"{name}: eps {m.eps}"
