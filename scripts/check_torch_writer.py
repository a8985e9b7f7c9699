#!/usr/bin/env python3
"""Checks that torch.load(path, weights_only=True) reads what vitrain's PyTorch writer writes, bit for bit.

Needs Debian's python3-torch and a build with the tools (ninja -C build torch_resave):
  /usr/bin/python3 scripts/check_torch_writer.py [BUILD_DIR=build]
Re-saves tests/ref/torch_state.safetensors and the DeiT fixture's EMA with build/bin/torch_resave, loads each
with torch (weights_only=True) and compares names, order, dtypes, shapes and bytes with the safetensors tensors /
the EMA that torch itself reads from the fixture (f16 read as f32, bool as uint8, as vitrain reads them).
Exits non-zero on any difference.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DTYPES = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16, "I64": torch.int64,
          "I32": torch.int32, "U8": torch.uint8}


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = e["data_offsets"]
        raw = bytearray(body[a:b])
        t = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"])
    return out


def as_read(t):
    if t.dtype == torch.float16:
        t = t.float()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.contiguous()


def raw(t):
    return t.contiguous().view(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)


def same(got, want, what):
    bad = []
    if list(got) != list(want):
        bad.append(f"{what}: names {list(got)} != {list(want)}")
    for k, w in want.items():
        g = got.get(k)
        if g is None or g.dtype != w.dtype or g.shape != w.shape or not torch.equal(raw(g), raw(w)):
            bad.append(f"{what}: tensor {k} differs")
    return bad


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    tool = os.path.join(build, "bin", "torch_resave")
    ref = os.path.join(ROOT, "tests", "ref")
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "state.pth")
        subprocess.run([tool, os.path.join(ref, "torch_state.safetensors"), out], check=True)
        bad += same(torch.load(out, weights_only=True), read_safetensors(os.path.join(ref, "torch_state.safetensors")),
                    "safetensors -> vitrain .pth -> torch")
        out = os.path.join(tmp, "ema.pth")
        subprocess.run([tool, os.path.join(ref, "torch_deit.pth"), out, "--ema"], check=True)
        ema = {k: as_read(v) for k, v in torch.load(os.path.join(ref, "torch_deit.pth"))["model_ema"].items()}
        bad += same(torch.load(out, weights_only=True), ema, "DeiT model_ema -> vitrain .pth -> torch")
    for b in bad:
        print("FAIL", b)
    print("check_torch_writer:", "FAILED" if bad else "torch.load(weights_only=True) reads vitrain's files bit for bit")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
