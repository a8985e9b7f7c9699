"""Writes tests/nn/fixtures/<kind>.pth: the MiTA paper's Table 2 linear-attention baselines run by the authors'
own modules (QishuaiWen/MiTA, mita/*.py), for tests/nn/test_baseline_fixtures.cpp to compare ours against.

Usage:  /usr/bin/python3 scripts/make_baseline_fixtures.py MITA_MITA_DIR [OUT_DIR]
  MITA_MITA_DIR  a folder holding the official files (focused_linear_attention.py, inline_attention.py, mhla.py,
                 PoLA.py), e.g. a checkout's mita/ (git clone the repository into a temp dir first).
  OUT_DIR        default tests/nn/fixtures
Needs only Debian's python3-torch (1.13, CPU). The official files import einops, which Debian 12 does not
package, and mhla.py decorates with torch.compile, which torch 1.13 lacks; the stand-ins below fill those two
names in and nothing of the authors' modules is rewritten (PoLA.py ships as comments: its lines are uncommented).

Each file holds, in float64: x (the input), the module's state dict under its official names, y = module(x),
g (a random cotangent) and dx = d<y, g>/dx; plus the sizes as 0-d int64 tensors.
"""
import importlib.util
import os
import re
import sys
import tempfile
import types
from collections import OrderedDict

import torch


# ---- stand-ins for what the official files import but this torch lacks ----

def _axes(side):
    """'b (h w) c' -> [['b'], ['h', 'w'], ['c']]"""
    groups, cur = [], None
    for tok in re.findall(r"\(|\)|[A-Za-z_0-9]+", side):
        if tok == "(":
            cur = []
        elif tok == ")":
            groups.append(cur)
            cur = None
        elif cur is not None:
            cur.append(tok)
        else:
            groups.append([tok])
    return groups


def rearrange(x, pattern, **sizes):
    """einops.rearrange for the reshape/transpose patterns the official files use (no ellipsis, no 1s)."""
    lhs, rhs = (_axes(s) for s in pattern.split("->"))
    assert len(lhs) == x.dim(), f"{pattern}: input has {x.dim()} dims"
    known = dict(sizes)
    for group, n in zip(lhs, x.shape):
        free = [a for a in group if a not in known]
        prod = 1
        for a in group:
            prod *= known.get(a, 1)
        assert len(free) <= 1, f"{pattern}: cannot infer {free}"
        if free:
            known[free[0]] = n // prod
    flat_in = [a for g in lhs for a in g]
    flat_out = [a for g in rhs for a in g]
    y = x.reshape([known[a] for a in flat_in]).permute([flat_in.index(a) for a in flat_out])
    out_shape = []
    for g in rhs:
        n = 1
        for a in g:
            n *= known[a]
        out_shape.append(n)
    return y.reshape(out_shape)


def install_stand_ins():
    einops = types.ModuleType("einops")
    einops.rearrange = rearrange

    def repeat(*args, **kwargs):
        raise NotImplementedError("einops.repeat stand-in: not used by the modules run here")

    einops.repeat = repeat
    sys.modules["einops"] = einops
    if not hasattr(torch, "compile"):
        torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)


def load_official(path, uncomment=False):
    src = open(path).read()
    if uncomment:  # PoLA.py: the class is shipped commented out line by line, from its "# class" line on
        lines = src.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("# class "))
        src = "\n".join(["import torch", "import torch.nn as nn"] + lines[:start] +
                        [re.sub(r"^# ?", "", line) for line in lines[start:]])
    tmp = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    tmp.write(src)
    tmp.close()
    name = "official_" + os.path.splitext(os.path.basename(path))[0].lower()
    spec = importlib.util.spec_from_file_location(name, tmp.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    os.unlink(tmp.name)
    return mod


# ---- one fixture ----

def randomize(module, gen, std):
    """Small random weights everywhere (also the zero-initialised scales and encodings, so they matter)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * std)


def run(module, x_shape, gen, sizes, out_path, dtype=torch.float64, std=0.3, call=None):
    """dtype: what the module runs in (float32 where the official code casts to float itself); saved as float64.
    call(module, x): how the module is called, when not module(x). The state dict at construction is saved too
    (init.*), before the weights are randomised."""
    init = {k: v.detach().double().clone() for k, v in module.state_dict().items()}
    module = module.to(dtype)
    module.eval()  # not chained: PoLA.py's eval() override returns None
    randomize(module, gen, std)
    x = torch.randn(x_shape, generator=gen, dtype=torch.float64).to(dtype).requires_grad_(True)
    y = call(module, x) if call else module(x)
    g = torch.randn(y.shape, generator=gen, dtype=torch.float64).to(dtype)
    (y * g).sum().backward()
    t = OrderedDict()
    t["x"] = x.detach().double()
    for k, v in module.state_dict().items():
        t["state." + k] = v.detach().double().clone()
    for k, v in init.items():
        if k.startswith("piece_attn."):  # the only initial value that is not a plain random or constant draw
            t["init." + k] = v
    t["y"] = y.detach().double()
    t["g"] = g.double()
    t["dx"] = x.grad.detach().double()
    for k, v in sizes.items():
        t["size." + k] = torch.tensor(v, dtype=torch.int64)
    torch.save(t, out_path)
    print(f"wrote {out_path}: {', '.join(f'{k} {tuple(v.shape)}' for k, v in t.items() if not k.startswith('size.'))}")


def main():
    src_dir = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else "tests/nn/fixtures"
    os.makedirs(out_dir, exist_ok=True)
    install_stand_ins()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2026)
    B, C, H, G = 2, 8, 2, 4  # CLS + a 4×4 patch grid
    N = 1 + G * G
    kinds = sys.argv[3].split(",") if len(sys.argv) > 3 else ["flatten", "inline", "mhla", "pola"]

    if "flatten" in kinds:
        m = load_official(os.path.join(src_dir, "focused_linear_attention.py"))
        layer = m.FocusedLinearAttention(C, num_heads=H, qkv_bias=True, n=N)
        # float32: the official forward casts q, k, v to float for its products (autocast off).
        run(layer, (B, N, C), gen, {"heads": H}, os.path.join(out_dir, "flatten.pth"), dtype=torch.float32)

    if "inline" in kinds:
        m = load_official(os.path.join(src_dir, "inline_attention.py"))
        layer = m.InLineAttention(C, num_heads=H, qkv_bias=True)
        run(layer, (B, N, C), gen, {"heads": H}, os.path.join(out_dir, "inline.pth"))

    if "mhla" in kinds:
        m = load_official(os.path.join(src_dir, "mhla.py"))
        # The official module is fixed to 16x16 tokens without CLS (256² images), in 4x4-token blocks; it takes
        # them block by block, as its forward_features lays them out with rearrange_patches. The fixture keeps
        # x, y and dx row-major: x goes through rearrange_patches, y is put back by the same permutation.
        Bm, Cm, Gm = 1, 4, 16
        Nm = Gm * Gm
        layer = m.MHLA(Cm, num_heads=H, proj_drop=0.0, qkv_bias=True)
        order = m.rearrange_patches(torch.arange(Nm, dtype=torch.float64).view(1, Nm, 1)).reshape(-1).long()

        def call(mod, x):
            y = mod(m.rearrange_patches(x)).reshape(x.shape[0], Nm, -1)
            return torch.zeros_like(y).index_copy(1, order, y)

        run(layer, (Bm, Nm, Cm), gen, {"heads": H}, os.path.join(out_dir, "mhla.pth"), call=call)

    if "pola" in kinds:
        m = load_official(os.path.join(src_dir, "PoLA.py"), uncomment=True)
        # window_size sizes the positional encoding: (1, N) gives it the N = CLS + patches the layer sees in a ViT.
        layer = m.PolaLinearAttention(C, window_size=(1, N), num_heads=H, qkv_bias=True)
        run(layer, (B, N, C), gen, {"heads": H}, os.path.join(out_dir, "pola.pth"),
            call=lambda mod, x: mod(x, G, G))


if __name__ == "__main__":
    main()
