// ops::mita_qkv_attention (mita.h): fused MiTA on the packed qkv(g), with the DWC and the gate when asked, as one
// backward node for the whole layer core. The shared branch V̂ = softmax(scale·R·Kᵀ)·V and its gradients run as
//  - flash: CUDA bf16, the landmarks as the m query rows of a flash attention over the N keys (forward and
//    backward on tensor cores; the joint backward's f32 dR and dV̂ feed it), unless each of a few CTAs would
//    stream a long sequence (B·H·⌈m/64⌉ < SMs/4 and N ≥ 16K: 4 CTAs over 64K keys took 3.8 ms a layer on the
//    H200). Which of flash and f32 ops is faster there is not settled: the Figure 5 model at N = 64K, batch 1
//    trained at 52.7 (43.7–60.5) steps/s with flash in a short run and 40.4 (35.3–45.7) with the f32 ops; the
//    fix is a flash pass split over the keys;
//  - fused: CUDA f32 or bf16, one CUDA-core kernel each way (kernels/cuda/mita/mita_shared.h) while the [m, N] logits of
//    one (b, h) fit in shared memory;
//  - composite: f32 ops (the CPU, and shapes neither kernel takes).
// VT_MITA_SHARED=flash|fused|composite overrides the choice where that kind applies (tests, benchmarks).
// Before all of them: on short sequences (DeiT's N = 197) the whole core — routing, V̂ and the joint softmax, and
// their gradients — runs as one kernel per direction with one CTA per (b, h) (kernels/cuda/mita/mita_small.h), when the
// routing is not given, the backward need not be deterministic and VT_MITA_JOINT names no other joint kernel.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "autograd/node.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/mita/dwc_tokens.h"
#include "kernels/cuda/mita/mita_shared.h"
#include "kernels/cuda/mita/mita_small.h"
#include "kernels/dispatch.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/head_layout.h"
#include "ops/index.h"
#include "ops/matmul.h"
#include "ops/mita.h"
#include "ops/mita_joint.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"

namespace vt::ops {

namespace {

// Channels [c0, c0 + C) of x [B, N, W] (channels contiguous) as heads [B, H, N, C / H], timm's layout.
Tensor head_split_view(const Tensor& x, int64_t c0, int64_t C, int64_t H) {
  const int64_t d = C / H;
  return make_view(x, {x.size(0), H, x.size(1), d}, {x.strides()[0], d, x.strides()[1], 1}, x.offset() + c0);
}

// The shared branch's V̂ runs in f32 also for bf16 operands (its softmax is over all N keys).
Tensor widened(const Tensor& t) { return t.dtype() == DType::bf16 ? t.to(DType::f32) : t; }

namespace kc = kernels::cuda;

kc::TokenRows token_rows(const Tensor& t) { return {t.raw_data(), t.strides()[0], t.strides()[1]}; }

// The CUDA sizes of the saved operands: m from the landmarks, k from the routing.
kernels::MitaShape shared_shape(const JointSaved& sv) {
  return joint_shape<float>(sv.q, sv.r.size(2), sv.routing.expert_keys.size(3), sv.options);
}

enum class SharedBranch { composite, fused, flash, one_cta };  // one_cta: the whole core, mita_small.h

kernels::AttentionShape landmark_queries(const kernels::MitaShape& s) {  // the m landmarks against the N keys
  return {s.B, s.H, s.m, s.d, s.scale, s.N};
}

SharedBranch choose_shared_branch(const JointSaved& sv) {
  if (!sv.q.device().is_cuda()) return SharedBranch::composite;
  const kernels::MitaShape s = shared_shape(sv);
  const char* force = std::getenv("VT_MITA_SHARED");
  if (force && std::strcmp(force, "composite") == 0) return SharedBranch::composite;
  bool flash = sv.q.dtype() == DType::bf16 && kc::flash_attention_supports(s.d);
  for (const Tensor* t : {&sv.q, &sv.k, &sv.v, &sv.r}) flash = flash && kc::flash_attention_aligned(head_view(*t));
  const bool fused = kc::mita_shared_supported(s);
  if (force && std::strcmp(force, "fused") == 0 && fused) return SharedBranch::fused;
  if (force && std::strcmp(force, "flash") == 0 && flash) return SharedBranch::flash;
  if (flash && kc::flash_attention_fills_device(landmark_queries(s))) return SharedBranch::flash;
  return fused ? SharedBranch::fused : SharedBranch::composite;
}

kc::MitaSmallPool small_pool(const kernels::LandmarkPoolShape& pool) {
  return {static_cast<int>(pool.first), static_cast<int>(pool.L), static_cast<int>(pool.grid),
          static_cast<int>(pool.pool)};
}

// q, k, v: head views of the packed qkv.
bool one_cta_applies(const JointSaved& sv, int64_t m, int64_t topk, const kernels::LandmarkPoolShape& pool,
                     const MitaRouting* fixed) {
  const MitaAttentionOptions& o = sv.options;
  if (fixed || !sv.q.device().is_cuda() || sv.q.dtype() != DType::bf16 || !o.shared || o.deterministic) return false;
  if (const char* force = std::getenv("VT_MITA_JOINT"); force && std::strcmp(force, "small") != 0) return false;
  for (const Tensor* t : {&sv.q, &sv.k, &sv.v})
    if (!kc::flash_attention_aligned(head_view(*t))) return false;
  const kernels::MitaShape s = joint_shape<float>(sv.q, m, topk, o);  // o.shared: checked above
  return kc::mita_small_supported(s) && kc::mita_small_pool_fits(small_pool(pool), s);
}

// The landmarks (sv.r, pooled from q inside the kernel), routing, V̂, out and lse in one launch; lse_shared
// [B, H, m]: V̂'s softmax log-normaliser, for the backward.
void one_cta_forward(JointSaved& sv, int64_t m, int64_t topk, const kernels::LandmarkPoolShape& pool,
                     Tensor& lse_shared) {
  const Device dev = sv.q.device();
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    const kernels::MitaShape s = joint_shape<float>(sv.q, m, topk, sv.options);
    auto ints = [&](Shape shape) { return Tensor::empty(std::move(shape), DType::i32, dev); };
    sv.routing = {ints({s.B, s.H, m, topk}), ints({s.B, s.H, s.N}), ints({s.B, s.H, s.N}), ints({s.B, s.H, m + 1})};
    sv.r = Tensor::empty({s.B, m, s.H, s.d}, DType::bf16, dev).transpose(1, 2);  // [B, H, m, d] as the pooled [B, m, C]
    sv.v_hat = Tensor::empty({s.B, s.H, m, s.d}, DType::bf16, dev);
    sv.out = empty_bnhd(s.B, s.H, s.N, s.d, DType::bf16, dev);
    sv.lse = Tensor::empty({s.B, s.H, s.N}, DType::f32, dev);
    lse_shared = Tensor::empty({s.B, s.H, m}, DType::f32, dev);
    kc::mita_small_forward(head_view(sv.out), sv.lse.data<float>(), lse_shared.data<float>(), sv.v_hat.raw_data(),
                           sv.routing.expert_keys.data<int32_t>(), sv.routing.experts.data<int32_t>(),
                           sv.routing.order.data<int32_t>(), sv.routing.offsets.data<int32_t>(), head_view(sv.r),
                           head_view(sv.q), head_view(sv.k), head_view(sv.v), small_pool(pool), s, c.stream);
  });
}

// Its backward: dq (with the landmarks' share through the pooling), dk, dv through their [B, H, N, d] views.
void one_cta_backward(const JointSaved& sv, const Tensor& lse_shared, const kernels::LandmarkPoolShape& pool,
                      const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  kernels::on_cuda(sv.q.device(), [&](kernels::Cuda c) {
    const MitaRouting& rt = sv.routing;
    const kernels::MitaShape s = joint_shape<float>(sv.q, rt.expert_keys.size(2), rt.expert_keys.size(3), sv.options);
    const Tensor dr0 = Tensor::empty({s.B, s.m, s.H * s.d}, DType::f32, sv.q.device());  // the landmarks' gradient
    Tensor scratch = Tensor::empty({kc::mita_small_backward_scratch(s)}, DType::f32, sv.q.device());
    const kernels::MitaRoutingArrays index{rt.expert_keys.data<int32_t>(), rt.experts.data<int32_t>(),
                                           rt.order.data<int32_t>(), rt.offsets.data<int32_t>()};
    kc::mita_small_backward(head_view(dq), head_view(dk), head_view(dv), dr0.data<float>(), head_view(dout),
                            head_view(sv.q), head_view(sv.k), head_view(sv.v), head_view(sv.r), head_view(sv.v_hat),
                            head_view(sv.out), sv.lse.data<float>(), lse_shared.data<float>(), index, small_pool(pool),
                            s, scratch.data<float>(), c.stream);
  });
}

// V̂ = softmax(scale·R·Kᵀ)·V on tensor cores; lse [B, H, m] (its softmax's log-normaliser) for the backward.
void flash_shared_forward(JointSaved& sv, Tensor& lse) {
  const Device dev = sv.q.device();
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    const kernels::MitaShape s = shared_shape(sv);
    lse = Tensor::empty({s.B, s.H, s.m}, DType::f32, dev);
    sv.v_hat = Tensor::empty({s.B, s.H, s.m, s.d}, sv.q.dtype(), dev);
    kc::flash_attention_forward(head_view(sv.v_hat), lse.data<float>(), head_view(sv.r), head_view(sv.k),
                                head_view(sv.v), landmark_queries(s), c.stream);
  });
}

// Its backward: V̂'s shares of dR, dK and dV ([B, H, m, d] and two [B, H, N, d], bf16) given dV̂ (bf16).
void flash_shared_backward(const JointSaved& sv, const Tensor& lse, const Tensor& dvh, Tensor& dR, Tensor& dK,
                           Tensor& dV) {
  const Device dev = sv.q.device();
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    const kernels::MitaShape s = shared_shape(sv);
    const kernels::AttentionShape shape = landmark_queries(s);
    dR = Tensor::empty({s.B, s.H, s.m, s.d}, sv.q.dtype(), dev);
    dK = empty_bnhd(s.B, s.H, s.N, s.d, sv.q.dtype(), dev);
    dV = empty_bnhd(s.B, s.H, s.N, s.d, sv.q.dtype(), dev);
    Tensor workspace = Tensor::empty({kc::flash_attention_backward_workspace(shape)}, DType::f32, dev);
    kc::flash_attention_backward(head_view(dR), head_view(dK), head_view(dV), head_view(dvh), head_view(sv.r),
                                 head_view(sv.k), head_view(sv.v), head_view(sv.v_hat), lse.data<float>(),
                                 workspace.data<float>(), shape, c.stream);
  });
}

// V̂ and P = softmax(scale·R·Kᵀ) by the fused CUDA kernel.
void fused_shared_forward(JointSaved& sv, Tensor& probs) {
  const Device dev = sv.q.device();
  kernels::on_cuda(dev, [&](kernels::Cuda c) {
    const kernels::MitaShape s = shared_shape(sv);
    probs = Tensor::empty({s.B, s.H, s.m, s.N}, DType::f32, dev);
    sv.v_hat = Tensor::empty({s.B, s.H, s.m, s.d}, sv.q.dtype(), dev);
    kc::mita_shared_forward(sv.q.dtype(), head_view(sv.v_hat), probs.data<float>(), head_view(sv.r), head_view(sv.k),
                            head_view(sv.v), s, c.stream);
  });
}

// The fused backward of the shared branch: adds its shares into dk, dv ([B, H, N, d] views) and returns
// dR [B, m, C] f32 (the joint attention's part included) from the joint backward's per-query terms.
Tensor fused_shared_backward(const JointSaved& sv, const Tensor& probs, const JointSharedTerms& terms, const Tensor& dk,
                             const Tensor& dv) {
  const Device dev = sv.q.device();
  return kernels::on_cuda(dev, [&](kernels::Cuda c) {
    const kernels::MitaShape s = shared_shape(sv);
    Tensor dr = Tensor::empty({s.B, s.m, s.H * s.d}, DType::f32, dev);
    auto f32_or_null = [](const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; };
    kc::mita_shared_backward(sv.q.dtype(), head_view(dk), head_view(dv), dr.data<float>(), probs.data<float>(),
                             f32_or_null(terms.p_shared), f32_or_null(terms.ds_shared), head_view(terms.dout),
                             head_view(sv.q), head_view(sv.r), head_view(sv.k), head_view(sv.v), s, c.stream,
                             f32_or_null(terms.dvh), f32_or_null(terms.dr));
    return dr;
  });
}

// The DWC: v's patch tokens (rows 1..N-1 of v [B, N, C], a view of the packed qkv) as a G×G grid, depth-wise 3×3
// conv (+ bias), added to rows 1..N-1 of `out` [B, N, C] (contiguous): a new tensor. CUDA: one kernel on the token
// rows (kernels/cuda/mita/dwc_tokens.h); elsewhere through the NCHW conv and back.
Tensor dwc_forward(const Tensor& out, const Tensor& v, const Tensor& weight, const Tensor& bias, int64_t G) {
  const int64_t B = v.size(0), N = v.size(1), C = v.size(2);
  if (v.device().is_cuda()) {
    return kernels::on_cuda(v.device(), [&](kernels::Cuda c) {
      Tensor sum = Tensor::empty({B, N, C}, out.dtype(), out.device());
      kc::depthwise3x3_tokens(out.dtype(), sum.raw_data(), out.contiguous().raw_data(), token_rows(v),
                              weight.contiguous().raw_data(), bias.contiguous().raw_data(), false, B, N, C, 1, G,
                              c.stream);
      return sum;
    });
  }
  const Tensor grid = v.slice(1, 1, N).transpose(1, 2).contiguous().reshape({B, C, G, G});
  const Tensor conv = depthwise_conv2d(grid, weight, bias);
  return concat({out.slice(1, 0, 1), out.slice(1, 1, N) + conv.reshape({B, C, N - 1}).transpose(1, 2)}, 1);
}

// Its backward given g [B, N, C], the gradient of the sum: dv_sum (contiguous, this node's own) += the conv's input
// gradient on rows 1..N-1; dweight [C, 1, 3, 3] and dbias [C] when asked.
void dwc_backward(const Tensor& dv_sum, const Tensor& g, const Tensor& v, const Tensor& weight, int64_t G,
                  Tensor* dweight, Tensor* dbias) {
  const int64_t B = v.size(0), N = v.size(1), C = v.size(2);
  if (v.device().is_cuda()) {
    return kernels::on_cuda(v.device(), [&](kernels::Cuda c) {
      const kernels::KernelStream stream = c.stream;
      const Tensor gc = g.strides()[2] == 1 ? g : g.contiguous();
      VT_CHECK(dv_sum.is_contiguous(), "[mita_qkv_attention] the DWC gradient goes into a contiguous dv");
      kc::depthwise3x3_tokens(dv_sum.dtype(), dv_sum.raw_data(), dv_sum.raw_data(), token_rows(gc),
                              weight.contiguous().raw_data(), nullptr, true, B, N, C, 1, G, stream);
      if (dweight) *dweight = Tensor::empty({C, 1, 3, 3}, weight.dtype(), v.device());
      if (dbias) *dbias = Tensor::empty({C}, weight.dtype(), v.device());
      if (dweight || dbias) {
        Tensor scratch = Tensor::empty({kc::depthwise3x3_tokens_scratch(B, C, G)}, DType::f32, v.device());
        kc::depthwise3x3_tokens_weight_grad(weight.dtype(), dweight ? dweight->raw_data() : nullptr,
                                            dbias ? dbias->raw_data() : nullptr, token_rows(gc), token_rows(v), B, C, 1,
                                            G, scratch.data<float>(), stream);
      }
      return;
    });
  }
  const Tensor grid = v.slice(1, 1, N).transpose(1, 2).contiguous().reshape({B, C, G, G});
  const Tensor g_grid = g.slice(1, 1, N).transpose(1, 2).contiguous().reshape({B, C, G, G});
  Tensor dgrid;
  depthwise_conv2d_grads(g_grid, grid, weight, &dgrid, dweight, dbias);
  const Tensor tail = dv_sum.slice(1, 1, N);
  tail.copy_(tail + dgrid.reshape({B, C, N - 1}).transpose(1, 2));
}

// The packed tensor's q, k, v as head views, the state one_cta_applies reads.
JointSaved packed_operands(const Tensor& x, int64_t C, int64_t H, const MitaAttentionOptions& o) {
  JointSaved sv;
  sv.q = head_split_view(x, 0, C, H), sv.k = head_split_view(x, C, C, H), sv.v = head_split_view(x, 2 * C, C, H);
  sv.options = o;
  return sv;
}

struct MitaQkvBackward : Node {
  JointSaved joint;  // q, k, v: head views of the packed qkv; r: the landmarks [B, H, m, d]
  Tensor
      probs;  // composite, fused: P = softmax(scale·R·Kᵀ) [B, H, m, N] (f32, or f64); flash, one_cta: its lse [B, H, m]
  SharedBranch shared_branch = SharedBranch::composite;
  kernels::LandmarkPoolShape pool;
  Tensor dwc_v, dwc_weight;  // DWC only: v [B, N, C] (a view of the packed qkv) and the conv weight
  int64_t dwc_side = 0;      // G: the patch tokens form a G×G grid
  Tensor gate, pre_gate;     // gate only: g [B, N, C] (a view of qkvg) and the result before the gate
  const char* name() const override { return "MitaQkvBackward"; }

  std::vector<Tensor> backward(const Tensor& grad_out) override {
    // out = pre ⊙ SiLU(g): d(pre) = grad ⊙ SiLU(g), dg = grad ⊙ pre ⊙ σ(g)(1 + g(1 − σ(g))).
    Tensor grad = grad_out, dg;
    if (gate.defined()) std::tie(grad, dg) = silu_gate_grads(grad_out, pre_gate, gate);
    auto packed = [&](std::vector<Tensor> parts) {  // d(qkv) or d(qkvg)
      if (dg.defined()) parts.push_back(dg);
      return concat(parts, 2);
    };
    const Tensor& q = joint.q;
    const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3), C = H * d;
    const DType dt = q.dtype();
    const Device dev = q.device();
    auto bnhd = [&] { return empty_bnhd(B, H, N, d, dt, dev); };
    auto tokens = [&](const Tensor& t) { return t.transpose(1, 2).reshape({B, N, C}); };  // [B, N, H, d] memory
    Tensor dw, db;
    // The DWC's share of dv, added to tokens 1..N-1 of `dv_sum` (a tensor of this node's own).
    auto add_dwc = [&](Tensor dv_sum) {
      if (dwc_v.defined())
        dwc_backward(dv_sum, grad, dwc_v, dwc_weight, dwc_side, needs_grad(1) ? &dw : nullptr,
                     needs_grad(2) ? &db : nullptr);
      return dv_sum;
    };
    if (shared_branch == SharedBranch::one_cta) {
      const Tensor g = grad.contiguous().reshape({B, N, H, d}).transpose(1, 2);
      if (dwc_v.defined()) {  // the DWC's share goes into a contiguous dv
        const Tensor dq = bnhd(), dk = bnhd(), dv = bnhd();
        one_cta_backward(joint, probs, pool, g, dq, dk, dv);
        return {packed({tokens(dq), tokens(dk), add_dwc(tokens(dv))}), dw, db};
      }
      // d(qkv) written in place: the kernel's dq, dk, dv are head views of it, dg (the gate's) is copied in.
      Tensor dqkv = Tensor::empty({B, N, (dg.defined() ? 4 : 3) * C}, dt, dev);
      const JointSaved into = packed_operands(dqkv, C, H, joint.options);
      one_cta_backward(joint, probs, pool, g, into.q, into.k, into.v);
      if (dg.defined()) dqkv.slice(2, 3 * C, 4 * C).copy_(dg);
      return {dqkv, dw, db};
    }
    const Tensor dq = bnhd(), dk = bnhd(), dv = bnhd();
    Tensor dr, dvh;
    JointSharedTerms terms;
    const bool want_terms = shared_branch != SharedBranch::composite;
    joint_backward(joint, grad.reshape({B, N, H, d}).transpose(1, 2), dq, dk, dv, dr, dvh,
                   want_terms ? &terms : nullptr);
    if (!joint.options.shared) return {packed({tokens(dq), tokens(dk), add_dwc(tokens(dv))}), dw, db};
    if (shared_branch == SharedBranch::fused) {  // dk, dv receive V̂'s shares in place; dR laid out for the pooling
      const Tensor dR0 = fused_shared_backward(joint, probs, terms, dk, dv);
      const Tensor dq_all = tokens(dq) + landmark_pool_grad(dR0, pool, dt);
      return {packed({dq_all, tokens(dk), add_dwc(tokens(dv))}), dw, db};
    }

    // V̂ = P·V with P = softmax(scale·R·Kᵀ): its shares of dR, dK and dV.
    Tensor dR, dK, dV;
    if (shared_branch == SharedBranch::flash) {
      Tensor dr32 = terms.dr, dvh32 = terms.dvh;  // the tensor-core joint kernels sum them in f32
      if (!dvh32.defined()) {                     // the CUDA-core joint kernel gives the per-query terms instead
        NoGradGuard no_grad;
        dvh32 = matmul(terms.p_shared.transpose(-2, -1), terms.dout.to(DType::f32));
        dr32 = matmul(terms.ds_shared.transpose(-2, -1), q.to(DType::f32));
      }
      Tensor dR_shared;
      flash_shared_backward(joint, probs, dvh32.to(dt), dR_shared, dK, dV);
      dR = dr32 + dR_shared.to(DType::f32);
    } else {
      const Tensor dvh_w = widened(dvh), K = widened(joint.k), V = widened(joint.v), R = widened(joint.r);
      const Tensor dP = matmul(dvh_w, V.transpose(-2, -1));                                // [B, H, m, N]
      const Tensor dS = probs * (dP - sum(dP * probs, {-1}, true)) * joint.options.scale;  // d(R·Kᵀ)
      dR = widened(dr) + matmul(dS, K);                                                    // [B, H, m, d]
      dK = matmul(dS.transpose(-2, -1), R).to(dt), dV = matmul(probs.transpose(-2, -1), dvh_w).to(dt);
    }
    // The landmarks are pooled from q.
    const Tensor dR0 = dR.transpose(1, 2).contiguous().reshape({B, pool.m, C});
    const Tensor dq_all = tokens(dq) + landmark_pool_grad(dR0, pool, dt);
    // dk (laid out [B, N, H, d]) + dK ([B, H, N, d]): the sum keeps dk's layout, so the reshape is free.
    auto add_tokens = [&](const Tensor& a, const Tensor& b) {
      return (a.transpose(1, 2) + b.transpose(1, 2)).reshape({B, N, C});
    };
    return {packed({dq_all, add_tokens(dk, dK), add_dwc(add_tokens(dv, dV))}), dw, db};
  }
  void release() override {
    joint = JointSaved{};
    probs = dwc_v = dwc_weight = gate = pre_gate = Tensor();
  }
};

}  // namespace

bool mita_qkv_one_kernel(const Tensor& qkv, const MitaQkvOptions& o) {
  const int64_t blocks = o.gate ? 4 : 3;
  if (!qkv.defined() || qkv.dim() != 3 || qkv.size(2) % blocks != 0 || o.heads < 1 ||
      (qkv.size(2) / blocks) % o.heads != 0 || qkv.strides()[2] != 1)
    return false;
  const int64_t C = qkv.size(2) / blocks;
  return one_cta_applies(packed_operands(qkv, C, o.heads, o.attention), o.landmarks.m(), o.topk,
                         landmark_pool_shape(qkv.size(0), qkv.size(1), C, o.landmarks), nullptr);
}

Tensor mita_qkv_attention(const Tensor& qkv, const MitaQkvOptions& o, const Tensor& dwc_weight, const Tensor& dwc_bias,
                          const MitaRouting* fixed, MitaRouting* used) {
  const int64_t blocks = o.gate ? 4 : 3;
  VT_CHECK(qkv.defined() && qkv.dim() == 3 && qkv.size(2) % blocks == 0, "[mita_qkv_attention] qkv",
           o.gate ? "g must be [B, N, 4C]" : " must be [B, N, 3C]", ", got ",
           qkv.defined() ? qkv.describe() : std::string("an undefined tensor"));
  const int64_t B = qkv.size(0), N = qkv.size(1), C = qkv.size(2) / blocks, H = o.heads;
  VT_CHECK(H >= 1 && C % H == 0, "[mita_qkv_attention] width ", C, " is not divisible by ", H, " heads");
  const int64_t d = C / H;
  VT_CHECK(mita_fused_supports(qkv.dtype(), qkv.device(), d), "[mita_qkv_attention] no fused kernels for ",
           qkv.describe(), " with head dim ", d);
  VT_CHECK(o.topk >= 1 && o.topk <= N, "[mita_qkv_attention] k = ", o.topk, " keys per expert must be in [1, N = ", N,
           "]");
  const bool dwc = dwc_weight.defined();
  VT_CHECK(dwc == dwc_bias.defined(), "[mita_qkv_attention] the DWC needs both its weight and its bias");
  int64_t G = 0;
  if (dwc) {
    while ((G + 1) * (G + 1) <= N - 1) ++G;
    VT_CHECK(G * G == N - 1, "[mita_qkv_attention] the DWC needs the ", N - 1,
             " tokens after CLS to form a square grid (N - 1 = G²)");
    VT_CHECK(dwc_weight.shape() == Shape({C, 1, 3, 3}) && dwc_bias.shape() == Shape({C}) &&
                 dwc_weight.dtype() == qkv.dtype() && dwc_bias.dtype() == qkv.dtype(),
             "[mita_qkv_attention] DWC weight ", dwc_weight.describe(), " and bias ", dwc_bias.describe(),
             " should be [", C, ", 1, 3, 3] and [", C, "] of ", dtype_name(qkv.dtype()));
  }
  const Tensor x = row_contiguous(qkv);
  JointSaved sv = packed_operands(x, C, H, o.attention);
  const Tensor &q = sv.q, &k = sv.k, &v = sv.v;
  const int64_t m = o.landmarks.m();
  const kernels::LandmarkPoolShape pool = landmark_pool_shape(B, N, C, o.landmarks);
  Tensor probs;
  SharedBranch shared_branch = SharedBranch::composite;
  if (one_cta_applies(sv, m, o.topk, pool, fixed)) {
    shared_branch = SharedBranch::one_cta;
    one_cta_forward(sv, m, o.topk, pool, probs);
  }
  if (shared_branch != SharedBranch::one_cta) {
    const Tensor r0 = mita_landmark_pool(x.slice(2, 0, C), o.landmarks);  // [B, m, C]
    sv.r = r0.reshape({B, m, H, d}).transpose(1, 2);                      // [B, H, m, d], rows contiguous
    sv.routing = fixed ? *fixed : mita_route(q, k, sv.r, o.topk);
    if (o.attention.shared) shared_branch = choose_shared_branch(sv);
    if (shared_branch == SharedBranch::flash) flash_shared_forward(sv, probs);
    if (shared_branch == SharedBranch::fused) fused_shared_forward(sv, probs);
    if (o.attention.shared && shared_branch == SharedBranch::composite) {
      NoGradGuard no_grad;
      probs = softmax(matmul(widened(sv.r) * o.attention.scale, widened(k).transpose(-2, -1)), -1);
      sv.v_hat = matmul(probs, widened(v)).to(x.dtype());
    }
    joint_forward(sv);
  }
  if (used) *used = sv.routing;
  Tensor out = sv.out.transpose(1, 2).reshape({B, N, C});  // free: the kernel writes [B, N, H, d]
  if (dwc) {  // v's patch tokens in their true places as a G×G grid, conv, added at tokens 1..N-1
    NoGradGuard no_grad;
    out = dwc_forward(out, x.slice(2, 2 * C, 3 * C), dwc_weight.detach(), dwc_bias.detach(), G);
  }
  Tensor pre_gate;
  if (o.gate) {
    NoGradGuard no_grad;
    pre_gate = out;
    out = silu_gate(out, x.slice(2, 3 * C, 4 * C));
  }
  if (any_requires_grad({&qkv, &dwc_weight, &dwc_bias})) {
    auto node = std::make_shared<MitaQkvBackward>();
    if (o.gate) node->gate = x.slice(2, 3 * C, 4 * C), node->pre_gate = pre_gate;
    if (dwc) node->dwc_v = x.slice(2, 2 * C, 3 * C), node->dwc_weight = dwc_weight.detach(), node->dwc_side = G;
    node->pool = pool;
    node->probs = probs;
    node->shared_branch = shared_branch;
    node->joint = std::move(sv);
    attach_node(out, node, {&qkv, &dwc_weight, &dwc_bias});
  }
  return out;
}

}  // namespace vt::ops
