#!/usr/bin/env python3
"""Writes the weights-exchange fixtures of tests/unit/test_weights_files.cpp and tests/cli/test_weights_cli.cpp
into tests/ref/ (torch.save files, a few KB each; random weights, seeded).

Needs Debian's python3-torch (1.13) and a checkout of the official MiTA repository (QishuaiWen/MiTA), whose
MiTA-DeiT/mita/*.py attention modules are instantiated so the fixtures carry exactly their parameter names and
shapes. Their imports of flash_attn, einops and timm are stubbed: building a module (its __init__) needs none of
them, only forward does, and no forward of theirs runs here.

  /usr/bin/python3 scripts/gen_weights_fixtures.py /path/to/MiTA

The ViT around the attention is timm's VisionTransformer state dict (names and shapes written out below, as
timm 0.4.12 / DeiT build it), tiny: Fashion-MNIST sized (1 channel, 28x28, patch 7 -> a 4x4 grid, N = 17),
dim 16, depth 1, MLP x4, 10 classes; one head (two for linear attention so it keeps its output projection).
Files:
  weights_deit.pth             bare timm/DeiT state dict
  weights_deit_distilled.pth   timm's VisionTransformerDistilled (dist_token, head_dist), bare
  weights_deit_wrapper.pth     DeiT's training checkpoint {'model', 'model_ema', 'optimizer', 'lr_scheduler',
                               'epoch', 'scaler', 'args'}; model_ema = model * 0.5
  weights_deit_ddp.pth         the bare state dict with DistributedDataParallel's "module." prefix
  weights_mita_<kind>.pth      the DeiT with every block.attn replaced by the official module, as MiTA-DeiT's
                               main.py does: mita (MiTA_Attention), mita_dwc (MiTA_Attention_Conv), mita_gate
                               (MiTA_Attention_Conv_Gate), mita_route (MiTA_Attention_Route), agent
                               (Agent_Attention), agent_bias (Agent_Attention_Bias: its biases are sized for a 14x14
                               grid, so this one is 28x28 at patch 2), linear (Linear_Attention, 2 heads)
  weights_segmenter.pth        the official MiTA-Segmenter checkpoint layout {'model', 'optimizer', 'epoch', 'n_cls'}:
                               encoder (segm/model/vit.py: timm names, n_cls 1000 head kept but unused) and the CBT
                               MaskTransformer decoder (segm/model/decoder.py, dec_blocks.py: cls_emb,
                               net.layers.<i>.norm, net.layers.<i>.fn.{proj, step_x, step_rep, to_out},
                               decoder_norm, mask_norm). Those names and shapes are written out from reading the
                               official code (its modules import timm, which Debian does not package). 32x32 crop,
                               patch 8, dim 16, 2 decoder layers of 2 heads x 4 dims, 3 classes.
  weights_expected.pth         {input [2, 1, 28, 28], deit.logits, distilled.logits, distilled.head_cls,
                               distilled.head_dist}: a torch forward of the two dense models (timm's math written
                               out below, float64, rounded to float32) on a fixed input
"""
import argparse
import collections
import importlib.util
import os
import sys
import types

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref")
DIM, DEPTH, CLASSES, MLP = 16, 1, 10, 4


def stub_imports():
    """flash_attn, einops and timm as empty stand-ins: enough for the official modules' __init__."""
    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    unused = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stub: forward is not run here"))
    module("flash_attn", flash_attn_varlen_func=unused)
    module("flash_attn.flash_attn_interface", _flash_attn_varlen_forward=unused, _flash_attn_varlen_backward=unused)
    module("einops", rearrange=unused, repeat=unused)
    module("timm")
    module("timm.models")
    module("timm.models.layers", trunc_normal_=lambda t, std=1.0, **k: torch.nn.init.trunc_normal_(t, std=std))


def load_official(repo, filename, cls):
    """The class `cls` of MiTA-DeiT/mita/<filename>.py, imported as part of a package named mita."""
    pkg_dir = os.path.join(repo, "MiTA-DeiT", "mita")
    if "mita" not in sys.modules:
        pkg = types.ModuleType("mita")
        pkg.__path__ = [pkg_dir]
        sys.modules["mita"] = pkg
    spec = importlib.util.spec_from_file_location("mita." + filename, os.path.join(pkg_dir, filename + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mita." + filename] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, cls)


def timm_vit(g, img, patch, chans=1, dim=DIM, depth=DEPTH, classes=CLASSES, distilled=False):
    """timm's VisionTransformer(...).state_dict() names and shapes, random values."""
    r = lambda *s, std=0.2: torch.randn(*s, generator=g) * std
    grid = img // patch
    prefix = 2 if distilled else 1
    sd = collections.OrderedDict()
    sd["cls_token"] = r(1, 1, dim)
    sd["pos_embed"] = r(1, prefix + grid * grid, dim)
    sd["patch_embed.proj.weight"] = r(dim, chans, patch, patch)
    sd["patch_embed.proj.bias"] = r(dim)
    for i in range(depth):
        b = f"blocks.{i}."
        sd[b + "norm1.weight"] = 1 + r(dim, std=0.1)
        sd[b + "norm1.bias"] = r(dim, std=0.1)
        sd[b + "attn.qkv.weight"] = r(3 * dim, dim)
        sd[b + "attn.qkv.bias"] = r(3 * dim)
        sd[b + "attn.proj.weight"] = r(dim, dim)
        sd[b + "attn.proj.bias"] = r(dim)
        sd[b + "norm2.weight"] = 1 + r(dim, std=0.1)
        sd[b + "norm2.bias"] = r(dim, std=0.1)
        sd[b + "mlp.fc1.weight"] = r(MLP * dim, dim)
        sd[b + "mlp.fc1.bias"] = r(MLP * dim)
        sd[b + "mlp.fc2.weight"] = r(dim, MLP * dim)
        sd[b + "mlp.fc2.bias"] = r(dim)
    sd["norm.weight"] = 1 + r(dim, std=0.1)
    sd["norm.bias"] = r(dim, std=0.1)
    if classes:
        sd["head.weight"] = r(classes, dim)
        sd["head.bias"] = r(classes)
    if distilled:  # VisionTransformerDistilled registers these after the base model's
        sd["dist_token"] = r(1, 1, dim)
        sd["head_dist.weight"] = r(classes, dim)
        sd["head_dist.bias"] = r(classes)
    return sd


def with_attention(sd, module_factory, depth=DEPTH):
    """sd with every blocks.<i>.attn.* replaced by a fresh official module's state dict."""
    out = collections.OrderedDict((k, v) for k, v in sd.items() if ".attn." not in k)
    for i in range(depth):
        torch.manual_seed(100 + i)
        for k, v in module_factory().state_dict().items():
            out[f"blocks.{i}.attn.{k}"] = v.detach().clone()
    return out


def vit_forward(sd, x, heads=1, patch=7, distilled=False):
    """timm's VisionTransformer(.Distilled) forward in float64 with dense attention: (logits, parts)."""
    p = {k: v.double() for k, v in sd.items()}
    x = F.conv2d(x.double(), p["patch_embed.proj.weight"], p["patch_embed.proj.bias"], stride=patch)
    x = x.flatten(2).transpose(1, 2)
    B, _, C = x.shape
    tokens = [p["cls_token"].expand(B, -1, -1)] + ([p["dist_token"].expand(B, -1, -1)] if distilled else [])
    x = torch.cat(tokens + [x], 1) + p["pos_embed"]
    i = 0
    while f"blocks.{i}.norm1.weight" in p:
        b = f"blocks.{i}."
        h = F.layer_norm(x, (C,), p[b + "norm1.weight"], p[b + "norm1.bias"], 1e-6)
        N = h.shape[1]
        qkv = F.linear(h, p[b + "attn.qkv.weight"], p[b + "attn.qkv.bias"]).reshape(B, N, 3, heads, C // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = ((q * (C // heads) ** -0.5) @ k.transpose(-2, -1)).softmax(-1)
        h = (a @ v).transpose(1, 2).reshape(B, N, C)
        x = x + F.linear(h, p[b + "attn.proj.weight"], p[b + "attn.proj.bias"])
        h = F.layer_norm(x, (C,), p[b + "norm2.weight"], p[b + "norm2.bias"], 1e-6)
        h = F.linear(F.gelu(F.linear(h, p[b + "mlp.fc1.weight"], p[b + "mlp.fc1.bias"])), p[b + "mlp.fc2.weight"],
                     p[b + "mlp.fc2.bias"])
        x = x + h
        i += 1
    x = F.layer_norm(x, (C,), p["norm.weight"], p["norm.bias"], 1e-6)
    cls = F.linear(x[:, 0], p["head.weight"], p["head.bias"])
    if not distilled:
        return cls, {}
    dist = F.linear(x[:, 1], p["head_dist.weight"], p["head_dist.bias"])
    return (cls + dist) / 2, {"head_cls": cls, "head_dist": dist}


def segmenter(g):
    """The official MiTA-Segmenter state dict (encoder + CBT decoder), names from segm/model/*.py."""
    r = lambda *s, std=0.2: torch.randn(*s, generator=g) * std
    enc = timm_vit(g, img=32, patch=8, chans=3, classes=1000)  # create_vit sets n_cls = 1000 for the encoder
    sd = collections.OrderedDict(("encoder." + k, v) for k, v in enc.items())
    n_cls, layers, heads, head_dim = 3, 2, 2, 4
    inner = heads * head_dim
    sd["decoder.cls_emb"] = r(1, n_cls, DIM)
    for i in range(layers):
        b = f"decoder.net.layers.{i}."
        sd[b + "norm.weight"] = 1 + r(DIM, std=0.1)
        sd[b + "norm.bias"] = r(DIM, std=0.1)
        sd[b + "fn.proj.weight"] = r(inner, DIM)  # nn.Linear(dim, inner_dim, bias=False)
        sd[b + "fn.step_x"] = r(heads, 1, 1)
        sd[b + "fn.step_rep"] = r(heads, 1, 1)
        sd[b + "fn.to_out.weight"] = r(DIM, inner)
        sd[b + "fn.to_out.bias"] = r(DIM)
    sd["decoder.decoder_norm.weight"] = 1 + r(DIM, std=0.1)
    sd["decoder.decoder_norm.bias"] = r(DIM, std=0.1)
    sd["decoder.mask_norm.weight"] = 1 + r(n_cls, std=0.1)
    sd["decoder.mask_norm.bias"] = r(n_cls, std=0.1)
    return sd


def adamw_state(sd):
    params = [torch.nn.Parameter(v.clone()) for v in sd.values()]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    return opt.state_dict()


def save(obj, name):
    path = os.path.join(OUT, name)
    torch.save(obj, path)
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mita_repo", help="a checkout of QishuaiWen/MiTA")
    args = ap.parse_args()
    stub_imports()
    g = torch.Generator().manual_seed(0)

    deit = timm_vit(g, img=28, patch=7)
    save(deit, "weights_deit.pth")
    distilled = timm_vit(g, img=28, patch=7, distilled=True)
    save(distilled, "weights_deit_distilled.pth")
    ema = collections.OrderedDict((k, v * 0.5) for k, v in deit.items())
    save({"model": deit, "optimizer": adamw_state(deit), "lr_scheduler": {"last_epoch": 3, "base_lrs": [1e-3]},
          "epoch": 3, "model_ema": ema, "scaler": {"scale": 65536.0, "growth_factor": 2.0},
          "args": argparse.Namespace(model="deit_tiny_patch16_224", lr=1e-3)}, "weights_deit_wrapper.pth")
    save(collections.OrderedDict(("module." + k, v) for k, v in deit.items()), "weights_deit_ddp.pth")

    dim, bias = DIM, True
    kinds = {
        "mita": ("mita_attention", "MiTA_Attention", lambda c: c(dim, num_heads=1, qkv_bias=bias, pool_size=2,
                                                                  kv_topk=2)),
        "mita_dwc": ("mita_attention_conv", "MiTA_Attention_Conv", lambda c: c(dim, num_heads=1, qkv_bias=bias)),
        "mita_gate": ("mita_attention_conv_gate", "MiTA_Attention_Conv_Gate",
                      lambda c: c(dim, num_heads=1, qkv_bias=bias)),
        "mita_route": ("mita_attention_route", "MiTA_Attention_Route",
                       lambda c: c(dim, num_heads=1, qkv_bias=bias)),
        "agent": ("agent_attention", "Agent_Attention", lambda c: c(dim, num_heads=1, qkv_bias=bias)),
        "agent_bias": ("agent_attention_bias", "Agent_Attention_Bias", lambda c: c(dim, num_heads=1, qkv_bias=bias)),
        "linear": ("linear_attention", "Linear_Attention", lambda c: c(dim, num_heads=2, qkv_bias=bias)),
    }
    for kind, (filename, cls_name, make) in kinds.items():
        cls = load_official(args.mita_repo, filename, cls_name)
        base = timm_vit(g, img=28, patch=2) if kind == "agent_bias" else timm_vit(g, img=28, patch=7)
        save(with_attention(base, lambda: make(cls)), f"weights_mita_{kind}.pth")

    seg = segmenter(g)
    # The optimizer entry as segm/train.py saves it, without moments (they would only make the file bigger).
    save({"model": seg, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-3, "momentum": 0.9}]}, "epoch": 63,
          "n_cls": 3}, "weights_segmenter.pth")

    x = (torch.randn(2, 1, 28, 28, generator=g)).float()
    logits, _ = vit_forward(deit, x)
    dlogits, parts = vit_forward(distilled, x, distilled=True)
    save(collections.OrderedDict([("input", x), ("deit.logits", logits.float()), ("distilled.logits", dlogits.float()),
                                  ("distilled.head_cls", parts["head_cls"].float()),
                                  ("distilled.head_dist", parts["head_dist"].float())]), "weights_expected.pth")


if __name__ == "__main__":
    main()
