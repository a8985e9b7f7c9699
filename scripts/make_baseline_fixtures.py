"""Writes tests/nn/fixtures/<kind>.pth: attention layers run by the authors' own modules (QishuaiWen/MiTA,
MiTA-DeiT/mita/*.py) with random weights on a random input, for tests/nn/test_baseline_fixtures.cpp,
tests/nn/test_official_mita_fixtures.cpp and tests/cuda/test_official_mita_cuda.cpp to compare ours against.
Kinds: flatten, inline, mhla, pola (the Table 2 linear-attention baselines); mita (MiTA_Attention), mita_dwc
(MiTA_Attention_Conv), mita_dwc_gate (MiTA_Attention_Conv_Gate), mita_route (MiTA_Attention_Route), agent
(Agent_Attention), agent_bias (Agent_Attention_Bias), linear (Linear_Attention).

Also bra and bra_qk_dim (BiFormer's BiLevelRoutingAttention, rayleizhu/BiFormer ops/bra_legacy.py), with
--biformer: the official module runs on the patch map as written, its KVGather wrapped to put the CLS token's
key/value beside every region's routed ones, and the CLS query attends all tokens (our CLS treatment,
models/bra_attention.h; add_cls_to_gather, bra_with_cls); its routing choices are redrawn until each wins by more
than 1e-3 (bra_routing_gap).

Usage:  /usr/bin/python3 scripts/make_baseline_fixtures.py [--biformer BIFORMER_DIR] MITA_MITA_DIR [OUT_DIR [KIND,...]]
  MITA_MITA_DIR  the official mita/ folder of a checkout, e.g.
                   git clone https://github.com/QishuaiWen/MiTA /tmp/mita-official
                   /usr/bin/python3 scripts/make_baseline_fixtures.py /tmp/mita-official/MiTA-DeiT/mita
  BIFORMER_DIR   a checkout of https://github.com/rayleizhu/BiFormer (its ops/bra_legacy.py is run), for bra
  OUT_DIR        default tests/nn/fixtures
  KINDS          default all of them, bra and bra_qk_dim only with --biformer (run all: each kind draws from one
                 random stream, in the order above, bra and bra_qk_dim last)
Needs only Debian's python3-torch (1.13, CPU). The stand-ins below fill in what the official files import and this
torch lacks: einops.rearrange, torch.compile (mhla.py), timm's trunc_normal_ (agent_attention*.py),
F.scaled_dot_product_attention (torch 2.0), and flash-attn's varlen calls (mixed_attention.py,
mita_attention_route.py): flash_attn_varlen_func, _flash_attn_varlen_forward and _flash_attn_varlen_backward as
per-segment softmax attention over cu_seqlens in plain PyTorch (the forward returns flash's log-sum-exp, the
backward is flash's, from the log-sum-exp it is given, so MixedAttention's own merge and backward run as written).
Source edits, each checked to apply exactly once: PoLA.py ships as comments (its lines are uncommented);
mita_attention_conv_gate.py as shipped cannot run: its forward unbinds `qkv` where it built `qkvg` (NameError),
so it unbinds `qkvg`; mixed_attention.py and mita_attention_route.py accumulate their outputs in a float32 /
float16 zero buffer (their training ran under fp16 autocast, index_add_ wants one dtype), which here takes the
input's dtype. The MiTA draws
are redrawn until every top-k and routing choice wins by more than 1e-3 (mita_margins), so a float32 run picks
the same keys and experts.

Each file holds, in float64: x (the input), the module's state dict under its official names (state.*), y =
module(x), g (a random cotangent), dx = d<y, g>/dx and d<y, g>/dp for every parameter p (grad.*); plus the sizes
as 0-d int64 tensors (size.*). Precision of the official computation: flatten runs in float32 (its forward casts to
float); linear's casts to float keep float64 (Tensor.float is the identity while it runs); the rest is float64.
"""
import os
import re
import sys
import types
from collections import OrderedDict

import torch
import torch.nn.functional as F


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
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = scaled_dot_product_attention

    timm, timm_models, timm_layers = (types.ModuleType(n) for n in ("timm", "timm.models", "timm.models.layers"))
    timm_layers.trunc_normal_ = torch.nn.init.trunc_normal_
    timm.models, timm_models.layers = timm_models, timm_layers
    sys.modules.update({"timm": timm, "timm.models": timm_models, "timm.models.layers": timm_layers})

    flash, interface = types.ModuleType("flash_attn"), types.ModuleType("flash_attn.flash_attn_interface")
    flash.flash_attn_varlen_func = flash_attn_varlen_func
    interface._flash_attn_varlen_forward = _flash_attn_varlen_forward
    interface._flash_attn_varlen_backward = _flash_attn_varlen_backward
    flash.flash_attn_interface = interface
    sys.modules.update({"flash_attn": flash, "flash_attn.flash_attn_interface": interface})


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    """torch 2.0's F.scaled_dot_product_attention as the official files call it: no mask, no dropout, scale 1/sqrt(d)."""
    assert attn_mask is None and dropout_p == 0.0 and not is_causal
    return torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1) @ v


def _segments(cu_q, cu_k):
    for b in range(cu_q.numel() - 1):
        yield slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))


def _logits(q, k, scale, causal):
    """q [nq, H, d], k [nk, H, d] -> [H, nq, nk]; causal as flash-attn 2.1+ (aligned to the bottom-right corner)."""
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    if causal:
        nq, nk = q.shape[0], k.shape[0]
        keep = torch.arange(nk).view(1, nk) <= torch.arange(nq).view(nq, 1) + (nk - nq)
        s = s.masked_fill(~keep, float("-inf"))
    return s


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, **unused):
    """Differentiable: out [total_q, H, d], each segment's queries attending its segment's keys."""
    assert dropout_p == 0.0
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    out = [torch.einsum("hqk,khd->qhd", torch.softmax(_logits(q[sq], k[sk], scale, causal), -1), v[sk])
           for sq, sk in _segments(cu_seqlens_q, cu_seqlens_k)]
    return torch.cat(out, 0)


def _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                               softmax_scale, causal, **unused):
    """flash-attn 2.x's return tuple (out, q, k, v, out_padded, softmax_lse [H, total_q], S_dmask, rng_state)."""
    assert dropout_p == 0.0
    out, lse = torch.empty_like(q), q.new_empty(q.shape[1], q.shape[0])
    for sq, sk in _segments(cu_seqlens_q, cu_seqlens_k):
        s = _logits(q[sq], k[sk], softmax_scale, causal)
        lse[:, sq] = torch.logsumexp(s, -1)
        out[sq] = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v[sk])
    return out, q, k, v, out, lse, None, None


def _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, **unused):
    """Flash's backward: P = exp(S - lse) with the lse given, dS = P (dP - rowsum(dout * out)); (dq, dk, dv, D)."""
    assert dropout_p == 0.0
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (dout * out).sum(-1).t()  # [H, total_q]
    for sq, sk in _segments(cu_seqlens_q, cu_seqlens_k):
        p = (_logits(q[sq], k[sk], softmax_scale, causal) - softmax_lse[:, sq].unsqueeze(-1)).exp()
        dv[sk] = torch.einsum("hqk,qhd->khd", p, dout[sq])
        ds = p * (torch.einsum("qhd,khd->hqk", dout[sq], v[sk]) - delta[:, sq].unsqueeze(-1))
        dq[sq] = torch.einsum("hqk,khd->qhd", ds, k[sk]) * softmax_scale
        dk[sk] = torch.einsum("hqk,qhd->khd", ds, q[sq]) * softmax_scale
    return dq, dk, dv, delta


def load_official(path, uncomment=False, edits=(), package="official_mita"):
    """The official file as module <package>.<name> (so its relative imports find the folder's files).
    edits: (old, new) source replacements, each of which must match exactly once."""
    src = open(path).read()
    for old, new in edits:
        assert src.count(old) == 1, f"{path}: expected one '{old}', found {src.count(old)}"
        src = src.replace(old, new)
    if uncomment:  # PoLA.py: the class is shipped commented out line by line, from its "# class" line on
        lines = src.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("# class "))
        src = "\n".join(["import torch", "import torch.nn as nn"] + lines[:start] +
                        [re.sub(r"^# ?", "", line) for line in lines[start:]])
    if package not in sys.modules:
        pkg = types.ModuleType(package)
        pkg.__path__ = [os.path.dirname(os.path.abspath(path))]  # its __init__.py is not run
        sys.modules[package] = pkg
    name = package + "." + os.path.splitext(os.path.basename(path))[0]
    mod = types.ModuleType(name)
    mod.__package__, mod.__file__ = package, path
    sys.modules[name] = mod
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


# ---- one fixture ----

def randomize(module, gen, std):
    """Small random weights everywhere (also the zero-initialised scales and encodings, so they matter)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * std)


def run(module, x_shape, gen, sizes, out_path, dtype=torch.float64, std=0.3, call=None, accept=None):
    """dtype: what the module runs in (float32 where the official code casts to float itself); saved as float64.
    call(module, x): how the module is called, when not module(x). accept(module, x): False draws the weights and
    x again. The state dict at construction is saved too (init.*), before the weights are randomised."""
    init = {k: v.detach().double().clone() for k, v in module.state_dict().items()}
    module = module.to(dtype)
    module.eval()  # not chained: PoLA.py's eval() override returns None
    for _ in range(100):
        randomize(module, gen, std)
        x = torch.randn(x_shape, generator=gen, dtype=torch.float64).to(dtype).requires_grad_(True)
        if accept is None or accept(module, x):
            break
    else:
        raise RuntimeError(f"{out_path}: no draw accepted in 100")
    y = call(module, x) if call else module(x)
    g = torch.randn(y.shape, generator=gen, dtype=torch.float64).to(dtype)
    (y * g).sum().backward()
    t = OrderedDict()
    t["x"] = x.detach().double()
    for k, v in module.state_dict().items():
        t["state." + k] = v.detach().double().clone()
    for k, p in module.named_parameters():
        t["grad." + k] = p.grad.detach().double().clone()
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


def mita_margins(module, x, kv_topk):
    """The official MiTA's two discrete choices on x, recomputed from its own pooling: the smallest gap between the
    kv_topk-th and next key score of any landmark, and between the best and second landmark of any query. Far
    from 0, a float32 run (our GPU path) selects the same keys and experts."""
    with torch.no_grad():
        B, N, C = x.shape
        H, d = module.num_heads, module.head_dim
        in_proj = module.qkvg if hasattr(module, "qkvg") else module.qkv  # the Gate's q, k, v, g in that order
        q, k = in_proj(x).reshape(B, N, -1, C).unbind(2)[:2]
        G = int(N ** 0.5)
        r = module.pool(q[:, :-1].reshape(B, G, G, C).permute(0, 3, 1, 2)).reshape(B, C, -1).transpose(1, 2)
        heads = lambda t: t.reshape(B, -1, H, d).transpose(1, 2)
        keys = (heads(r) @ heads(k).transpose(-2, -1)).sort(-1, descending=True).values
        gate = (heads(r) @ heads(q).transpose(-2, -1)).sort(-2, descending=True).values
        return (keys[..., kv_topk - 1] - keys[..., kv_topk]).min().item(), (gate[:, :, 0] - gate[:, :, 1]).min().item()


def add_cls_to_gather(attn):
    """Our CLS treatment inside the official BiLevelRoutingAttention `attn` (models/bra_attention.h): its KVGather's
    result, each region's routed k/v [n, p², topk, w², c], gets the CLS token's k/v (attn.cls_kv, set by
    bra_with_cls) in front, as one set of 1 + topk·w² (the forward flattens the topk and w² axes together, so the
    attention is one softmax over CLS and the routed patches). Everything else runs as written."""
    gather = attn.kv_gather

    class GatherWithCls(torch.nn.Module):
        def forward(self, r_idx, r_weight, kv):
            sel = gather(r_idx=r_idx, r_weight=r_weight, kv=kv)  # (n, p², topk, w², c_kv)
            n, p2, k, w2, c = sel.shape
            cls = attn.cls_kv.reshape(n, 1, 1, 1, c).expand(n, p2, 1, 1, c)
            return torch.cat([cls, sel.reshape(n, p2, 1, k * w2, c)], 3)

    attn.kv_gather = GatherWithCls()


def bra_with_cls(attn, x, grid):
    """x [B, 1 + G², C], CLS first: the official module (add_cls_to_gather applied) on the G×G patch map (NHWC, as
    BiFormer calls it); the CLS query attends all N tokens with the module's own qkv, scale and wo (no LCE)."""
    B, N, C = x.shape
    q, kv = attn.qkv(x)  # the official QKVLinear: q [B, N, qk_dim], kv [B, N, qk_dim + dim]
    attn.cls_kv = kv[:, :1]
    patches = attn(x[:, 1:].reshape(B, grid, grid, C)).reshape(B, N - 1, C)
    heads = lambda t: t.reshape(B, t.shape[1], attn.num_heads, -1).transpose(1, 2)
    k, v = kv.split([attn.qk_dim, attn.dim], -1)
    p = torch.softmax((heads(q[:, :1]) * attn.scale) @ heads(k).transpose(-2, -1), -1)
    cls = attn.wo((p @ heads(v)).transpose(1, 2).reshape(B, 1, C))
    return torch.cat([cls, patches], 1)


def bra_routing_gap(a, x, grid):
    """The official routing on the patches of x recomputed from its own qkv: the smallest gap between the topk-th and
    the next region affinity of any region. Far from 0, a float32 run (our GPU path) routes to the same regions."""
    with torch.no_grad():
        B, N, C = x.shape
        n, w = a.n_win, grid // a.n_win
        q, kv = a.qkv(x[:, 1:].reshape(B, n, w, n, w, C).permute(0, 1, 3, 2, 4, 5).reshape(B, n * n, w * w, C))
        logits = (q.mean(2) * a.scale) @ kv[..., :a.qk_dim].mean(2).transpose(-2, -1)
        top = logits.sort(-1, descending=True).values
        return (top[..., a.topk - 1] - top[..., a.topk]).min().item()


def main():
    args = sys.argv[1:]
    biformer_dir = None
    if args and args[0] == "--biformer":
        biformer_dir, args = args[1], args[2:]
    src_dir = args[0]
    out_dir = args[1] if len(args) > 1 else "tests/nn/fixtures"
    os.makedirs(out_dir, exist_ok=True)
    install_stand_ins()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2026)
    B, C, H, G = 2, 8, 2, 4  # CLS + a 4×4 patch grid
    N = 1 + G * G
    kinds = (args[2].split(",") if len(args) > 2 else
             ["flatten", "inline", "mhla", "pola", "mita", "mita_dwc", "mita_dwc_gate", "mita_route", "agent",
              "agent_bias", "linear"] + (["bra", "bra_qk_dim"] if biformer_dir else []))
    if any(kind.startswith("bra") for kind in kinds) and not biformer_dir:
        sys.exit("bra fixtures need --biformer BIFORMER_DIR (a checkout of rayleizhu/BiFormer)")

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

    # DeiT's token count: CLS + a 14x14 patch grid (Agent_Attention_Bias is fixed to it). MiTA: C 32 in 2 heads of
    # 16, the smallest head width our CUDA MiTA kernels take; m = 25 landmarks, k = 25 keys (50 route-only).
    Bd, Gd = 1, 14
    Nd = 1 + Gd * Gd
    Cm, Hm, m, k = 32, 2, 25, 25
    mita_kinds = [("mita", "mita_attention.py", "MiTA_Attention", k, ()),
                  ("mita_dwc", "mita_attention_conv.py", "MiTA_Attention_Conv", k, ()),
                  ("mita_dwc_gate", "mita_attention_conv_gate.py", "MiTA_Attention_Conv_Gate", k,
                   [("q, k, v, g = qkv.unbind(0)", "q, k, v, g = qkvg.unbind(0)")]),
                  ("mita_route", "mita_attention_route.py", "MiTA_Attention_Route", 2 * k,
                   [("dtype=torch.float16)", "dtype=query.dtype)")])]
    if any(kind in kinds for kind, *_ in mita_kinds):
        load_official(os.path.join(src_dir, "mixed_attention.py"),
                      edits=[("dtype=torch.float32", "dtype=q.dtype")])  # what mita_attention*.py import
    for kind, file, cls, kv_topk, edits in mita_kinds:
        if kind not in kinds:
            continue
        layer = getattr(load_official(os.path.join(src_dir, file), edits=edits), cls)(Cm, num_heads=Hm, qkv_bias=True)
        assert layer.num_expert == m and layer.kv_topk * (2 if kind == "mita_route" else 1) == kv_topk

        def accept(mod, x, kv_topk=kv_topk, kind=kind):
            key_gap, route_gap = mita_margins(mod, x, kv_topk)
            print(f"{kind}: smallest top-k score gap {key_gap:.3g}, smallest routing gap {route_gap:.3g}")
            return min(key_gap, route_gap) > 1e-3

        run(layer, (Bd, Nd, Cm), gen, {"heads": Hm, "m": m, "k": kv_topk}, os.path.join(out_dir, kind + ".pth"),
            std=0.2, accept=accept)

    # Agent and linear attention: no kernel of ours asks for a head width; C 8 in 2 heads keeps the files small.
    Ca, Ha = 8, 2
    if "agent" in kinds:
        layer = load_official(os.path.join(src_dir, "agent_attention.py")).Agent_Attention(Ca, Ha, qkv_bias=True)
        run(layer, (Bd, Nd, Ca), gen, {"heads": Ha, "agent_num": layer.num_agent},
            os.path.join(out_dir, "agent.pth"))
    if "agent_bias" in kinds:
        m = load_official(os.path.join(src_dir, "agent_attention_bias.py"))
        layer = m.Agent_Attention_Bias(Ca, Ha, qkv_bias=True)
        run(layer, (Bd, Nd, Ca), gen, {"heads": Ha, "agent_num": layer.num_agent},
            os.path.join(out_dir, "agent_bias.pth"))
    if "linear" in kinds:
        layer = load_official(os.path.join(src_dir, "linear_attention.py")).Linear_Attention(Ca, num_heads=Ha)
        # The official forward casts to float (RMSNorm, and q, k, v for the products, autocast off): those casts
        # keep float64 here. In float32 the gradients carry its rounding times the conditioning of queries whose
        # ReLU features nearly vanish (normalizer near its 1e-6 floor): 4e-4 of max |dx| on one draw we tried.
        def call(mod, x):
            cast = torch.Tensor.float
            torch.Tensor.float = lambda t: t
            try:
                return mod(x)
            finally:
                torch.Tensor.float = cast

        run(layer, (Bd, Nd, Ca), gen, {"heads": Ha}, os.path.join(out_dir, "linear.pth"), call=call)

    # BRA: CLS + a 6x6 patch map in 3x3 regions of 2x2 patches (DeiT's 14x14 map in 7x7 regions has the same
    # region size), each routed to 4 of the 9; C 8 in 2 heads. The settings BiFormer's models use:
    # kv_downsample_mode 'identity', no routing parameters, hard non-differentiable routing, side_dwconv 5.
    # bra: qk_scale = d^-1/2 given to the constructor (model.attention.bra_scale head_dim);
    # bra_qk_dim: qk_scale None, the official default qk_dim^-1/2 = C^-1/2 (bra_scale qk_dim).
    Gb, n_win, topk = 6, 3, 4
    Nb = 1 + Gb * Gb
    for kind in ("bra", "bra_qk_dim"):
        if kind not in kinds:
            continue
        m = load_official(os.path.join(biformer_dir, "ops", "bra_legacy.py"), package="official_biformer")
        attn = m.BiLevelRoutingAttention(Ca, num_heads=Ha, n_win=n_win, qk_scale=(Ca // Ha) ** -0.5 if kind == "bra"
                                         else None, kv_downsample_mode="identity", topk=topk, param_attention="qkvo",
                                         param_routing=False, diff_routing=False, soft_routing=False, side_dwconv=5)
        add_cls_to_gather(attn)

        def accept(mod, x, kind=kind):
            gap = bra_routing_gap(mod, x, Gb)
            print(f"{kind}: smallest routing gap {gap:.3g}")
            return gap > 1e-3

        run(attn, (B, Nb, Ca), gen, {"heads": Ha, "n_win": n_win, "topk": topk, "qk_dim_scale": int(kind != "bra")},
            os.path.join(out_dir, kind + ".pth"), call=lambda mod, x: bra_with_cls(mod, x, Gb), accept=accept)


if __name__ == "__main__":
    main()
