#!/usr/bin/env python3
"""Writes the PyTorch checkpoint fixtures of tests/unit/test_torch_checkpoint.cpp into tests/ref/ (a few KB each).

Needs Debian's python3-torch (1.13): /usr/bin/python3 scripts/gen_torch_fixtures.py
  torch_state.pth          a timm-named state dict: f32/f16/bf16/f64/i64/i32/u8/bool, a strided view with an
                           offset, a transpose, two tensors sharing one storage, a 0-dim tensor
  torch_state.safetensors  the same tensors as vitrain reads them (f16 -> F32, bool -> U8), for bit-exact checks
  torch_state_legacy.pth   the same state dict in torch's pre-1.6 format (_use_new_zipfile_serialization=False)
  torch_deit.pth           DeiT's wrapper {'model', 'model_ema', 'optimizer', 'lr_scheduler', 'epoch', 'scaler',
                           'args': argparse.Namespace(...)}; model_ema = model * 2
  torch_timm_train.pth     timm's train checkpoint {'epoch', 'arch', 'state_dict', 'optimizer', 'version', 'args',
                           'state_dict_ema', 'metric'}; state_dict_ema = model * 2
  torch_timm_noema.pth     timm's layout without EMA
  torch_ddp.pth            the state dict with DistributedDataParallel's "module." prefix
  torch_evil_*.pth         torch zip archives whose pickle names a forbidden global; built by hand, never loaded
"""
import argparse
import collections
import json
import os
import struct
import subprocess
import zipfile

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref")


def state_dict():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)
    base = r(6, 8)
    shared = r(10)
    sd = collections.OrderedDict()
    sd["patch_embed.proj.weight"] = r(4, 3, 2, 2)
    sd["patch_embed.proj.bias"] = r(4)
    sd["cls_token"] = r(1, 1, 4).to(torch.bfloat16)
    sd["pos_embed"] = r(1, 5, 4).to(torch.float16)
    sd["blocks.0.attn.qkv.weight"] = base[1:5, 2:8:2]  # strided view with an offset into a bigger storage
    sd["blocks.0.attn.proj.weight"] = r(3, 4).t()       # transposed (column-major)
    sd["blocks.0.mlp.fc1.weight"] = shared[:6].view(2, 3)  # two tensors sharing one storage
    sd["blocks.0.mlp.fc1.bias"] = shared[4:]
    sd["norm.weight"] = r(4).double()
    sd["head.weight"] = r(3, 4)
    sd["head.bias"] = torch.zeros(3)
    sd["bn.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)  # 0-dim
    sd["rel_pos_index"] = torch.arange(-3, 9, dtype=torch.int32).view(3, 4)
    sd["mask_u8"] = torch.tensor([0, 1, 255, 7], dtype=torch.uint8)
    sd["mask_bool"] = torch.tensor([[True, False], [False, True]])
    sd["empty"] = torch.zeros(0, 4)
    return sd


def as_read(t):
    """The tensor as vitrain reads it: contiguous, f16 -> f32, bool -> u8."""
    if t.dtype == torch.float16:
        t = t.float()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.contiguous()


def write_safetensors(path, tensors):
    names = {torch.float64: "F64", torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64",
             torch.int32: "I32", torch.uint8: "U8"}
    header, data = {}, b""
    for name, t in tensors.items():
        t = as_read(t)
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def twice(sd):
    return collections.OrderedDict((k, v * 2 if v.is_floating_point() else v.clone()) for k, v in sd.items())


def evil_archive(path, pickle_bytes):
    """A torch zip archive whose data.pkl is `pickle_bytes` (entries stored, as torch writes them)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/version", "3\n")


def call_pickle(module, name, arg):
    """Protocol 2: GLOBAL module.name, then (arg,) and REDUCE: what __reduce__ = (module.name, (arg,)) pickles to."""
    a = arg.encode()
    return (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n" +
            b"X" + struct.pack("<I", len(a)) + a + b"\x85R.")


class Evil:
    """Pickles as a call to subprocess.check_output; only ever pickled (torch.save), never unpickled."""

    def __reduce__(self):
        return (subprocess.check_output, (["echo", "pwned"],))


def main():
    os.makedirs(OUT, exist_ok=True)
    p = lambda n: os.path.join(OUT, n)
    sd = state_dict()
    torch.save(sd, p("torch_state.pth"))
    write_safetensors(p("torch_state.safetensors"), sd)
    torch.save(sd, p("torch_state_legacy.pth"), _use_new_zipfile_serialization=False)
    ema = twice(sd)
    args = argparse.Namespace(model="deit_tiny_patch16_224", lr=5e-4, epochs=300, model_ema=True, resume="",
                              drop_path=0.1, input_size=224, seed=0, dist_url="env://", note=b"\x00\xffbytes",
                              tags={"a", "b"}, big=2**70, none=None, ratio=(3 / 4, 4 / 3))
    opt_state = {"state": {0: {"step": 10, "exp_avg": torch.ones(2, 2), "exp_avg_sq": torch.ones(2, 2)}},
                 "param_groups": [{"lr": 5e-4, "betas": (0.9, 0.999), "weight_decay": 0.05, "params": [0]}]}
    torch.save({"model": sd, "optimizer": opt_state, "lr_scheduler": {"last_epoch": 299, "base_lrs": [5e-4]},
                "epoch": 299, "model_ema": ema, "scaler": {"scale": 65536.0, "_growth_tracker": 0}, "args": args},
               p("torch_deit.pth"))
    torch.save({"epoch": 10, "arch": "vit_tiny_patch16_224", "state_dict": sd, "optimizer": opt_state, "version": 2,
                "args": args, "state_dict_ema": ema, "metric": 71.25}, p("torch_timm_train.pth"))
    torch.save({"epoch": 10, "arch": "vit_tiny_patch16_224", "state_dict": sd, "version": 2, "metric": 71.25},
               p("torch_timm_noema.pth"))
    torch.save(collections.OrderedDict(("module." + k, v) for k, v in sd.items()), p("torch_ddp.pth"))
    evil_archive(p("torch_evil_os_system.pth"), call_pickle("os", "system", "echo pwned"))
    evil_archive(p("torch_evil_posix_system.pth"), call_pickle("posix", "system", "echo pwned"))
    evil_archive(p("torch_evil_builtins_eval.pth"), call_pickle("builtins", "eval", "print('pwned')"))
    # A real checkpoint layout with the payload in an entry vitrain does not even take ('args').
    torch.save({"model": sd, "args": Evil()}, p("torch_evil_in_args.pth"))
    for n in sorted(os.listdir(OUT)):
        if n.startswith("torch_"):
            print(f"{n}: {os.path.getsize(p(n))} bytes")


if __name__ == "__main__":
    main()
