#!/usr/bin/env python3
"""Makes the DeiT-Tiny parity fixture for tests/nn/test_deit_reference.cpp.

The 5.7M weights are too big to commit, so weights and input come from a deterministic formula that
tests/nn/formula_weights.h implements identically in C++; only timm's outputs are stored.

Formula (keep in sync with tests/nn/formula_weights.h). For a tensor named `name` with n elements, flat
(row-major) index i = 0..n-1, computed in float64 and then rounded to float32:
    phase(name) = fnv1a32(utf8(name)) / 2**32 * (2*pi)
        FNV-1a 32-bit: h = 0x811c9dc5, then for each byte h = (h ^ byte) * 0x01000193 mod 2**32
    wave_i      = sin((0.1 + 1e-4 * i) * i + phase(name))   a chirp: Linear rows get distinct frequencies (full rank)
    value_i     = offset(name) + amp(name) * wave_i
    LayerNorm weights (the module name before ".weight" starts with "norm"): offset 1, amp 0.1
    other names ending in ".bias":                                            offset 0, amp 0.01
    everything else (Linear/conv weights, pos_embed, cls_token):              offset 0, amp 0.03 (std ~0.021)
    input images [2, 3, 224, 224]: name "input", offset 0, amp 1;  targets [2] = {3, 917}.
The float64 timm model gets the float32-rounded values, so the C++ f32 model has exactly the same weights.

Run (timm's deit_tiny_patch16_224 with pretrained=False, float64 on CPU, eval mode; its default drop_rate and
drop_path_rate are 0, so train mode would give the same numbers), forward, cross-entropy with label smoothing
0.1, backward. Stored (safetensors):
    logits [2, 1000] f32, loss [1] f64,
    gstat.<param> [18] f64 for every parameter: gradient sum, sum of squares, then g[k*n//16] for k = 0..15,
    check.input and check.<param> for 4 parameters [2] f64: sum and sum of squares of the formula values.

GPU machine:  env -u LD_LIBRARY_PATH python3 scripts/gen_deit_reference.py tests/ref/deit_tiny_ref.safetensors
"""
import json
import math
import os
import struct
import sys

import torch

TARGETS = [3, 917]
INPUT_SHAPE = (2, 3, 224, 224)
CHECKED_PARAMS = ["patch_embed.proj.weight", "blocks.5.attn.qkv.weight", "blocks.11.norm2.weight", "head.bias"]
LABEL_SMOOTHING = 0.1


def fnv1a32(name: str) -> int:
    h = 0x811C9DC5
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def phase(name: str) -> float:
    return fnv1a32(name) / 4294967296.0 * (2.0 * math.pi)


def offset_amp(name: str):
    if name == "input":
        return 0.0, 1.0
    parts = name.split(".")
    if parts[-1] == "weight" and len(parts) >= 2 and parts[-2].startswith("norm"):
        return 1.0, 0.1
    if parts[-1] == "bias":
        return 0.0, 0.01
    return 0.0, 0.03


def formula(name: str, shape) -> torch.Tensor:
    """The formula values, rounded to float32, returned as float64."""
    n = math.prod(shape)
    t = torch.arange(n, dtype=torch.float64)
    off, amp = offset_amp(name)
    v = off + amp * torch.sin((0.1 + 1e-4 * t) * t + phase(name))
    return v.float().double().reshape(shape)


def build_timm_model() -> torch.nn.Module:
    """The model under test; the only timm-dependent part (a dry run can substitute its own)."""
    import timm
    return timm.create_model("deit_tiny_patch16_224", pretrained=False)


def grad_stats(g: torch.Tensor) -> torch.Tensor:
    flat = g.detach().double().reshape(-1)
    n = flat.numel()
    samples = [flat[k * n // 16] for k in range(16)]
    return torch.stack([flat.sum(), (flat * flat).sum()] + samples)


def write_safetensors(path: str, tensors: dict, meta: dict) -> None:
    """safetensors.torch.save_file when installed; else the same format written by hand (f32, f64, i64)."""
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    try:
        from safetensors.torch import save_file
        save_file(tensors, path, metadata=meta)
        return
    except ImportError:
        pass
    codes = {torch.float32: ("F32", "f"), torch.float64: ("F64", "d"), torch.int64: ("I64", "q")}
    header, blobs, pos = {"__metadata__": meta}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        tag, fmt = codes[t.dtype]
        vals = t.reshape(-1).tolist()
        blob = struct.pack("<%d%s" % (len(vals), fmt), *vals)
        header[name] = {"dtype": tag, "shape": list(t.shape), "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def generate(model: torch.nn.Module, out_path: str, meta: dict) -> None:
    model = model.double().eval()
    params = dict(model.named_parameters())
    for name in CHECKED_PARAMS:
        assert name in params, f"{name} not a parameter: names {list(params)[:8]}..."
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(formula(name, tuple(p.shape)))
    x = formula("input", INPUT_SHAPE)
    target = torch.tensor(TARGETS, dtype=torch.int64)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, target, label_smoothing=LABEL_SMOOTHING)
    loss.backward()

    def check(v):
        return torch.stack([v.sum(), (v * v).sum()])

    tensors = {"logits": logits.detach().float().contiguous(), "loss": loss.detach().reshape(1).double()}
    tensors["check.input"] = check(x)
    for name in CHECKED_PARAMS:
        tensors["check." + name] = check(params[name].detach())
    for name, p in params.items():
        assert p.grad is not None, f"no gradient for {name}"
        tensors["gstat." + name] = grad_stats(p.grad)
    meta = dict(meta, formula="offset+amp*sin((0.1+1e-4*i)*i+2pi*fnv1a32(name)/2^32), f32-rounded",
                mode="eval, float64 CPU", label_smoothing=str(LABEL_SMOOTHING), targets=json.dumps(TARGETS),
                num_params=str(len(params)))
    write_safetensors(out_path, tensors, meta)
    size = os.path.getsize(out_path)
    print(f"wrote {out_path}: {len(tensors)} tensors, {size} bytes ({size / 2**20:.3f} MiB), "
          f"{len(params)} parameters, loss {loss.item():.10f}")
    assert size < 1_500_000, "fixture too large to commit"


def main(out_path: str) -> None:
    import timm
    generate(build_timm_model(), out_path, {"timm": timm.__version__, "torch": torch.__version__,
                                            "model": "deit_tiny_patch16_224"})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/ref/deit_tiny_ref.safetensors")
