// Fused MiTA ops (see mita.h): argument checks, allocation, the CPU or CUDA kernels (kernels/*/mita.h), and the
// joint attention's backward node. On CUDA the backward's shared-branch sums dR and dV̂ are GEMMs over the
// per-query probabilities and logit gradients that the kernel writes.
#include "ops/mita.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "autograd/node.h"
#include "kernels/cpu/landmark_pool.h"
#include "kernels/cpu/mita.h"
#include "kernels/cuda/mita/landmark_pool.h"
#include "kernels/cuda/mita/mita.h"
#include "kernels/cuda/mita/mita_expert.h"
#include "kernels/cuda/mita/mita_flash.h"
#include "kernels/cuda/mita/mita_mma.h"
#include "kernels/cuda/mita/mita_topk.h"
#include "kernels/dispatch.h"
#include "ops/elementwise.h"
#include "ops/head_layout.h"
#include "ops/matmul.h"
#include "ops/mita_joint.h"
#include "ops/nn_functional.h"

namespace vt::ops {

namespace {

MitaRouting empty_routing(int64_t B, int64_t H, int64_t N, int64_t m, int64_t topk, Device dev) {
  return {Tensor::empty({B, H, m, topk}, DType::i32, dev), Tensor::empty({B, H, N}, DType::i32, dev),
          Tensor::empty({B, H, N}, DType::i32, dev), Tensor::empty({B, H, m + 1}, DType::i32, dev)};
}

namespace kc = kernels::cuda;

kernels::MitaRoutingArrays routing_arrays(const MitaRouting& r) {
  return {r.expert_keys.data<int32_t>(), r.experts.data<int32_t>(), r.order.data<int32_t>(), r.offsets.data<int32_t>()};
}

void check_routing(const MitaRouting& r, const Tensor& q, int64_t m, Device dev) {
  const int64_t B = q.size(0), H = q.size(1), N = q.size(2);
  for (const Tensor* t : {&r.expert_keys, &r.experts, &r.order, &r.offsets})
    VT_CHECK(t->defined() && t->dtype() == DType::i32 && t->is_contiguous() && t->device() == dev,
             "[mita_attention] routing tensors must be contiguous i32 on ", dev.str(), ", got ",
             t->defined() ? t->describe() : std::string("an undefined tensor"));
  VT_CHECK(r.expert_keys.dim() == 4 && r.expert_keys.size(0) == B && r.expert_keys.size(1) == H &&
               r.expert_keys.size(2) == m,
           "[mita_attention] routing.expert_keys ", r.expert_keys.describe(), " should be [", B, ", ", H, ", ", m,
           ", k]");
  VT_CHECK(r.experts.shape() == Shape({B, H, N}) && r.order.shape() == Shape({B, H, N}) &&
               r.offsets.shape() == Shape({B, H, m + 1}),
           "[mita_attention] routing experts/order ", r.experts.describe(), " should be [", B, ", ", H, ", ", N,
           "] and offsets ", r.offsets.describe(), " [", B, ", ", H, ", ", m + 1, "]");
}

}  // namespace

// bf16 with the shared branch runs on tensor cores, in one of two kernel families with the same results:
//  - masked flash (cuda/mita_flash): every query against all m + N slots with a mask, dense-flash tiles;
//  - per expert (cuda/mita_expert): an expert's 64-query tiles against its m + k slots, streamed, any m and k.
// The choice follows the MMA work: the masked kernels do about N·(m + N) products; the per-expert ones pad each
// expert's queries to warps of 16 rows (about N + 16m rows) against ⌈(m + k)/64⌉·64 slots, and pay for gathering
// the slots of every expert, counted as a factor 2 (fitted to the H200 timings of
// MitaExpertCuda.DISABLED_TimingAgainstDense: masked wins at DeiT's N = 197, m = k = 25, and at N = 1024,
// m = k = 128; per expert at N = 1025, m = k = 49 and from N = 2048 at m = k = 128).
// VT_MITA_JOINT=masked|expert overrides the choice (benchmarks). Route-only keeps the CUDA-core kernels: there, with
// all of a row's mass on k slots, rounding P and dS to bf16 before their MMAs (as FlashAttention-2 does) gave
// dk/dq errors 2.1× the rounded f64 answer's on the H200, over the bf16 rule's 2×
// (MitaCuda.JointAttentionForwardAndGradientsMatchTheCpu); with the shared slots it holds.
JointKernel choose_joint_kernel(const JointSaved& sv, const kernels::MitaShape& s) {
  if (sv.q.dtype() != DType::bf16 || !s.shared) return JointKernel::cuda_cores;
  for (const Tensor* t : {&sv.q, &sv.k, &sv.v, &sv.out, &sv.r, &sv.v_hat})
    if (!kc::flash_attention_aligned(head_view(*t))) return JointKernel::cuda_cores;
  const bool masked = kc::mita_flash_supported(s), expert = kc::mita_expert_supported(s);
  if (const char* force = std::getenv("VT_MITA_JOINT")) {
    if (std::strcmp(force, "masked") == 0 && masked) return JointKernel::masked_flash;
    if (std::strcmp(force, "expert") == 0 && expert) return JointKernel::expert;
  }
  if (!expert) return masked ? JointKernel::masked_flash : JointKernel::cuda_cores;
  if (!masked) return JointKernel::expert;
  auto up64 = [](int64_t x) { return (x + 63) / 64 * 64; };
  // MMA work of each; the per-expert kernels' shorter tiles run faster per product, so they win up to 1.5× the
  // work (H200: at N = 1024, m = k = 128 per expert 479 vs masked 443 training steps/s with 1.33× the work; at
  // DeiT's N = 197, m = k = 25, 1.74× the work, masked is faster).
  const int64_t masked_work = s.N * (s.m + s.N), expert_work = 2 * (s.N + 16 * s.m) * up64(s.m + s.k);
  return 2 * expert_work < 3 * masked_work ? JointKernel::expert : JointKernel::masked_flash;
}

void joint_forward(JointSaved& sv) {
  const Tensor& q = sv.q;
  const Device dev = q.device();
  const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3), m = sv.routing.offsets.size(2) - 1,
                kk = sv.routing.expert_keys.size(3);
  const MitaAttentionOptions& o = sv.options;
  sv.out = empty_bnhd(B, H, N, d, q.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        const kernels::AttentionView none{};
        kernels::cpu::mita_attention_forward(q.dtype(), head_view(sv.out), head_view(q), head_view(sv.k),
                                             head_view(sv.v), o.shared ? head_view(sv.r) : none,
                                             o.shared ? head_view(sv.v_hat) : none, routing_arrays(sv.routing),
                                             joint_shape<double>(q, m, kk, o));
      },
      [&](kernels::Cuda c) {
        VT_CHECK(kc::mita_supports_head_dim(d), "[mita_attention] CUDA kernels support head dims 16, 32, 64, 128, got ",
                 d);
        sv.lse = Tensor::empty({B, H, N}, DType::f32, dev);
        const kernels::MitaShape s = joint_shape<float>(q, m, kk, o);
        sv.kernel = choose_joint_kernel(sv, s);
        if (sv.kernel == JointKernel::expert) {
          kc::mita_joint_forward_mma(head_view(sv.out), sv.lse.data<float>(), head_view(q), head_view(sv.k),
                                     head_view(sv.v), head_view(sv.r), head_view(sv.v_hat), routing_arrays(sv.routing),
                                     s, c.stream);
          return;
        }
        if (sv.kernel == JointKernel::masked_flash) {
          Tensor workspace = Tensor::empty({kc::mita_flash_workspace(s)}, DType::f32, dev);
          kc::mita_flash_forward(head_view(sv.out), sv.lse.data<float>(), head_view(q), head_view(sv.k),
                                 head_view(sv.v), head_view(o.shared ? sv.r : q), head_view(o.shared ? sv.v_hat : q),
                                 routing_arrays(sv.routing), s, workspace.data<float>(), c.stream);
          return;
        }
        kc::mita_attention_forward(q.dtype(), head_view(sv.out), sv.lse.data<float>(), head_view(q), head_view(sv.k),
                                   head_view(sv.v), head_view(o.shared ? sv.r : q), head_view(o.shared ? sv.v_hat : q),
                                   routing_arrays(sv.routing), s, c.stream);
      });
}

void joint_backward(const JointSaved& sv, const Tensor& grad, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                    Tensor& dr, Tensor& dvh, JointSharedTerms* shared_terms) {
  const Tensor& q = sv.q;
  const MitaAttentionOptions& options = sv.options;
  const Device dev = q.device();
  const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3), m = sv.routing.offsets.size(2) - 1,
                kk = sv.routing.expert_keys.size(3);
  const DType dt = q.dtype();
  Tensor dout = row_contiguous(grad.dtype() == dt ? grad : grad.to(dt));
  if (dev.is_cuda()) {
    kernels::on_cuda(dev, [&](kernels::Cuda c) {
      const kernels::MitaShape s = joint_shape<float>(q, m, kk, options);
      if (sv.kernel != JointKernel::cuda_cores) {  // both tensor-core families: shared branch, f32 dR and dV̂
        Tensor dr32 = Tensor::empty({B, H, m, d}, DType::f32, dev),
               dvh32 = Tensor::empty({B, H, m, d}, DType::f32, dev);
        if (sv.kernel == JointKernel::expert) {
          Tensor workspace =
              Tensor::empty({kc::mita_expert_backward_workspace(s, options.deterministic)}, DType::f32, dev);
          kc::mita_expert_backward(head_view(dq), head_view(dk), head_view(dv), dr32.data<float>(), dvh32.data<float>(),
                                   head_view(dout), head_view(q), head_view(sv.k), head_view(sv.v), head_view(sv.r),
                                   head_view(sv.v_hat), head_view(sv.out), sv.lse.data<float>(),
                                   routing_arrays(sv.routing), s, options.deterministic, workspace.data<float>(),
                                   c.stream);
        } else {
          Tensor workspace = Tensor::empty({kc::mita_flash_workspace(s)}, DType::f32, dev);
          kc::mita_flash_backward(head_view(dq), head_view(dk), head_view(dv), dr32.data<float>(), dvh32.data<float>(),
                                  head_view(dout), head_view(q), head_view(sv.k), head_view(sv.v), head_view(sv.r),
                                  head_view(sv.v_hat), head_view(sv.out), sv.lse.data<float>(),
                                  routing_arrays(sv.routing), s, workspace.data<float>(), c.stream);
        }
        if (shared_terms) {
          *shared_terms = JointSharedTerms{};
          shared_terms->dout = dout, shared_terms->dvh = dvh32, shared_terms->dr = dr32;
        } else {
          dvh = dvh32.to(dt);
          dr = dr32.to(dt);
        }
        return;
      }
      Tensor p_shared, ds_shared;
      if (options.shared) {
        p_shared = Tensor::empty({B, H, N, m}, DType::f32, dev);
        ds_shared = Tensor::empty({B, H, N, m}, DType::f32, dev);
      }
      Tensor workspace = Tensor::empty({kc::mita_backward_workspace(s, options.deterministic)}, DType::f32, dev);
      const Tensor& rr = options.shared ? sv.r : q;
      const Tensor& vv = options.shared ? sv.v_hat : q;
      kc::mita_attention_backward(
          dt, head_view(dq), head_view(dk), head_view(dv), options.shared ? p_shared.data<float>() : nullptr,
          options.shared ? ds_shared.data<float>() : nullptr, head_view(dout), head_view(q), head_view(sv.k),
          head_view(sv.v), head_view(rr), head_view(vv), head_view(sv.out), sv.lse.data<float>(),
          routing_arrays(sv.routing), s, options.deterministic, workspace.data<float>(), c.stream);
      if (options.shared && shared_terms) {
        *shared_terms = JointSharedTerms{};
        shared_terms->p_shared = p_shared, shared_terms->ds_shared = ds_shared, shared_terms->dout = dout;
      } else if (options.shared) {
        NoGradGuard no_grad;
        dvh = matmul(p_shared.transpose(-2, -1), dout).to(dt);  // Σ_n p_nj·dO_n
        dr = matmul(ds_shared.transpose(-2, -1), q).to(dt);     // Σ_n shared_scale·ds_nj·q_n
      }
    });
  } else {
    (void)shared_terms;
    if (options.shared) {
      dr = Tensor::empty({B, H, m, d}, dt, dev);
      dvh = Tensor::empty({B, H, m, d}, dt, dev);
    }
    const kernels::AttentionView none{};
    kernels::cpu::mita_attention_backward(
        dt, head_view(dq), head_view(dk), head_view(dv), options.shared ? head_view(dr) : none,
        options.shared ? head_view(dvh) : none, head_view(dout), head_view(q), head_view(sv.k), head_view(sv.v),
        options.shared ? head_view(sv.r) : none, options.shared ? head_view(sv.v_hat) : none,
        routing_arrays(sv.routing), joint_shape<double>(q, m, kk, options));
  }
}

namespace {

struct MitaAttentionBackward : Node {
  JointSaved saved;  // operands detached
  const char* name() const override { return "MitaAttentionBackward"; }

  std::vector<Tensor> backward(const Tensor& grad) override {
    const Tensor& q = saved.q;
    const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3);
    Tensor dq = empty_bnhd(B, H, N, d, q.dtype(), q.device()), dk = empty_bnhd(B, H, N, d, q.dtype(), q.device()),
           dv = empty_bnhd(B, H, N, d, q.dtype(), q.device());
    Tensor dr, dvh;
    joint_backward(saved, grad, dq, dk, dv, dr, dvh);
    std::vector<Tensor> grads{needs_grad(0) ? dq : Tensor(), needs_grad(1) ? dk : Tensor(),
                              needs_grad(2) ? dv : Tensor()};
    if (saved.options.shared) {
      grads.push_back(needs_grad(3) ? dr : Tensor());
      grads.push_back(needs_grad(4) ? dvh : Tensor());
    }
    return grads;
  }
  void release() override { saved = JointSaved{}; }
};

}  // namespace

bool mita_fused_supports(DType dtype, Device device, int64_t head_dim) {
  if (device.is_cpu()) return dtype == DType::f32 || dtype == DType::f64;
  return (dtype == DType::f32 || dtype == DType::bf16) && (head_dim <= 0 || kc::mita_supports_head_dim(head_dim));
}

MitaRouting mita_route(const Tensor& q_in, const Tensor& k_in, const Tensor& landmarks, int64_t topk) {
  for (const Tensor* t : {&q_in, &k_in, &landmarks})
    VT_CHECK(t->defined() && t->dim() == 4, "[mita_route] q, k, landmarks must be [B, H, rows, d], got ",
             t->defined() ? t->describe() : std::string("an undefined tensor"));
  VT_CHECK(q_in.shape() == k_in.shape(), "[mita_route] q ", q_in.describe(), " and k ", k_in.describe(),
           " must have the same shape");
  VT_CHECK(landmarks.size(0) == q_in.size(0) && landmarks.size(1) == q_in.size(1) && landmarks.size(3) == q_in.size(3),
           "[mita_route] landmarks ", landmarks.describe(), " do not match q ", q_in.describe());
  VT_CHECK(q_in.dtype() == k_in.dtype() && q_in.dtype() == landmarks.dtype(), "[mita_route] dtypes differ: q ",
           q_in.describe(), ", k ", k_in.describe(), ", landmarks ", landmarks.describe());
  const int64_t B = q_in.size(0), H = q_in.size(1), N = q_in.size(2), d = q_in.size(3), m = landmarks.size(2);
  VT_CHECK(topk >= 1 && topk <= N, "[mita_route] k = ", topk, " keys per expert must be in [1, N = ", N, "]");
  VT_CHECK(m >= 1, "[mita_route] needs at least one landmark");
  const Device dev = common_device("mita_route", {&q_in, &k_in, &landmarks});
  check_device_float(q_in, "mita_route");
  Tensor q = row_contiguous(q_in), k = row_contiguous(k_in), r = row_contiguous(landmarks);
  MitaRouting out;
  out = empty_routing(B, H, N, m, topk, dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::MitaShapeF64 s{B, H, N, m, topk, d};
        kernels::cpu::mita_route(q.dtype(), head_view(q), head_view(k), head_view(r), s,
                                 out.expert_keys.data<int32_t>(), out.experts.data<int32_t>(),
                                 out.order.data<int32_t>(), out.offsets.data<int32_t>());
      },
      [&](kernels::Cuda c) {
        const kernels::MitaShape s{B, H, N, m, topk, d, 1.f, 1.f, true};
        Tensor workspace = Tensor::empty({static_cast<int64_t>(kc::mita_route_workspace_bytes(s))}, DType::u8, dev);
        kc::mita_route(q.dtype(), head_view(q), head_view(k), head_view(r), s, out.expert_keys.data<int32_t>(),
                       out.experts.data<int32_t>(), out.order.data<int32_t>(), out.offsets.data<int32_t>(),
                       workspace.raw_data(), c.stream);
      });
  return out;
}

bool mita_route_with_values(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor& landmarks,
                            int64_t topk, double scale, MitaRouting& routing, Tensor& v_hat) {
  const Device dev = q_in.device();
  // Below 16K keys the whole score row fits the top-k's shared memory and the plain routing reads it once; the
  // sampling needs N to be a multiple of kernels::cuda::kMitaSamples.
  if (!dev.is_cuda() || q_in.dim() != 4 || landmarks.dim() != 4 || q_in.size(2) < 16384 ||
      q_in.size(2) % kc::kMitaSamples != 0)
    return false;
  for (const Tensor* t : {&q_in, &k_in, &v_in, &landmarks})
    if (t->dtype() != DType::bf16 || t->device() != dev) return false;
  if (GradMode::enabled() && any_requires_grad({&q_in, &k_in, &v_in, &landmarks})) return false;
  if (q_in.shape() != k_in.shape() || q_in.shape() != v_in.shape() || landmarks.size(0) != q_in.size(0) ||
      landmarks.size(1) != q_in.size(1) || landmarks.size(3) != q_in.size(3) || topk < 1 || topk > q_in.size(2) ||
      topk > 2048)
    return false;
  return kernels::on_cuda(dev, [&](kernels::Cuda c) {
    Tensor q = row_contiguous(q_in), k = row_contiguous(k_in), v = row_contiguous(v_in), r = row_contiguous(landmarks);
    const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3), m = r.size(2);
    Tensor out = Tensor::empty({B, H, m, d}, DType::bf16, dev);
    const kernels::MitaShape s{B, H, N, m, topk, d, static_cast<float>(scale), 1.f, true};
    const kernels::AttentionView vq = head_view(q), vk = head_view(k), vv = head_view(v), vr = head_view(r),
                                 vo = head_view(out);
    if (!kc::mita_mma_usable(s, {&vq, &vk, &vv, &vr, &vo})) return false;
    MitaRouting rt = empty_routing(B, H, N, m, topk, dev);
    Tensor workspace =
        Tensor::empty({static_cast<int64_t>(kc::mita_route_with_values_workspace_bytes(s))}, DType::u8, dev);
    kc::mita_route_with_values(vq, vk, vv, vr, vo, s, rt.expert_keys.data<int32_t>(), rt.experts.data<int32_t>(),
                               rt.order.data<int32_t>(), rt.offsets.data<int32_t>(), workspace.raw_data(), c.stream);
    routing = rt;
    v_hat = out;
    return true;
  });
}

Tensor mita_shared_values(const Tensor& landmarks, const Tensor& k, const Tensor& v, double scale) {
  for (const Tensor* t : {&landmarks, &k, &v})
    VT_CHECK(t->defined() && t->dim() == 4, "[mita_shared_values] landmarks, k, v must be [B, H, rows, d], got ",
             t->defined() ? t->describe() : std::string("an undefined tensor"));
  VT_CHECK(k.shape() == v.shape() && landmarks.size(0) == k.size(0) && landmarks.size(1) == k.size(1) &&
               landmarks.size(3) == k.size(3),
           "[mita_shared_values] landmarks ", landmarks.describe(), ", k ", k.describe(), ", v ", v.describe(),
           " do not fit together");
  const Device dev = common_device("mita_shared_values", {&landmarks, &k, &v});
  const bool no_grad = !GradMode::enabled() || !any_requires_grad({&landmarks, &k, &v});
  if (dev.is_cuda() && no_grad && landmarks.dtype() == DType::bf16 && k.dtype() == DType::bf16 &&
      v.dtype() == DType::bf16) {
    Tensor fused = kernels::on_cuda(dev, [&](kernels::Cuda c) {
      Tensor r = row_contiguous(landmarks), kk = row_contiguous(k), vv = row_contiguous(v);
      const int64_t B = k.size(0), H = k.size(1), N = k.size(2), m = landmarks.size(2), d = k.size(3);
      Tensor out = Tensor::empty({B, H, m, d}, DType::bf16, dev);
      const kernels::MitaShape s{B, H, N, m, 1, d, static_cast<float>(scale), 1.f, true};
      const kernels::AttentionView vo = head_view(out), vr = head_view(r), vk = head_view(kk), vv_ = head_view(vv);
      if (kc::mita_mma_usable(s, {&vo, &vr, &vk, &vv_})) {
        Tensor workspace = Tensor::empty({kc::mita_landmark_workspace(s)}, DType::f32, dev);
        kc::mita_landmark_attention_forward(vo, vr, vk, vv_, s, workspace.data<float>(), c.stream);
        return out;
      }
      return Tensor();
    });
    if (fused.defined()) return fused;
  }
  // Logits in f32 also for bf16 operands (the landmarks' softmax is over all N keys); the result in v's dtype.
  const bool low = landmarks.dtype() == DType::bf16;
  Tensor r = low ? landmarks.to(DType::f32) : landmarks, kf = low ? k.to(DType::f32) : k;
  Tensor out = matmul(softmax(matmul(r * scale, kf.transpose(-2, -1)), -1), v);
  return out.dtype() == v.dtype() ? out : out.to(v.dtype());
}

Tensor mita_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor& landmarks,
                      const Tensor& v_hat_in, const MitaRouting& routing, const MitaAttentionOptions& options) {
  for (const Tensor* t : {&q_in, &k_in, &v_in})
    VT_CHECK(t->defined() && t->dim() == 4, "[mita_attention] q, k, v must be [B, H, N, d], got ",
             t->defined() ? t->describe() : std::string("an undefined tensor"));
  VT_CHECK(q_in.shape() == k_in.shape() && q_in.shape() == v_in.shape(), "[mita_attention] q ", q_in.describe(), ", k ",
           k_in.describe(), " and v ", v_in.describe(), " must have the same shape");
  VT_CHECK(q_in.dtype() == k_in.dtype() && q_in.dtype() == v_in.dtype(), "[mita_attention] q, k, v dtypes differ");
  const Device dev = common_device("mita_attention", {&q_in, &k_in, &v_in});
  check_device_float(q_in, "mita_attention");
  VT_CHECK(routing.offsets.defined() && routing.offsets.dim() == 3,
           "[mita_attention] routing.offsets must be [B, H, m + 1]");
  const int64_t B = q_in.size(0), H = q_in.size(1), N = q_in.size(2), d = q_in.size(3), m = routing.offsets.size(2) - 1;
  check_routing(routing, q_in, m, dev);
  const int64_t kk = routing.expert_keys.size(3);
  VT_CHECK(kk >= 1 && kk <= N, "[mita_attention] routing has k = ", kk, " keys per expert for N = ", N);
  if (options.shared) {
    for (const Tensor* t : {&landmarks, &v_hat_in}) {
      VT_CHECK(t->defined() && t->shape() == Shape({B, H, m, d}), "[mita_attention] landmarks and v_hat must be [", B,
               ", ", H, ", ", m, ", ", d, "], got ", t->defined() ? t->describe() : std::string("undefined"));
      VT_CHECK(t->dtype() == q_in.dtype() && t->device() == dev, "[mita_attention] landmarks/v_hat ", t->describe(),
               " must match q ", q_in.describe());
    }
  }
  JointSaved sv;
  sv.q = row_contiguous(q_in), sv.k = row_contiguous(k_in), sv.v = row_contiguous(v_in);
  if (options.shared) sv.r = row_contiguous(landmarks), sv.v_hat = row_contiguous(v_hat_in);
  sv.routing = routing;
  sv.options = options;
  joint_forward(sv);
  Tensor out = sv.out;
  sv.out = out.detach();
  const bool grad = options.shared ? any_requires_grad({&q_in, &k_in, &v_in, &landmarks, &v_hat_in})
                                   : any_requires_grad({&q_in, &k_in, &v_in});
  if (grad) {
    auto node = std::make_shared<MitaAttentionBackward>();
    node->saved = std::move(sv);
    if (options.shared) attach_node(out, node, {&q_in, &k_in, &v_in, &landmarks, &v_hat_in});
    else attach_node(out, node, {&q_in, &k_in, &v_in});
  }
  return out;
}

// ---- landmark pooling ----
namespace {

int64_t floor_isqrt(int64_t n) {
  int64_t r = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

struct LandmarkPoolBackward : Node {
  kernels::LandmarkPoolShape shape;  // strides unused: dx is contiguous
  DType dtype;
  const char* name() const override { return "LandmarkPoolBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override { return {landmark_pool_grad(grad, shape, dtype)}; }
};

}  // namespace

Tensor landmark_pool_grad(const Tensor& grad, const kernels::LandmarkPoolShape& shape, DType dtype) {
  Tensor g = (grad.dtype() == dtype ? grad : grad.to(dtype)).contiguous();
  const Device dev = g.device();
  Tensor dx = Tensor::empty({shape.B, shape.N, shape.C}, dtype, dev);
  kernels::dispatch(
      dev, [&] { kernels::cpu::landmark_pool_backward(dtype, dx.raw_data(), g.raw_data(), shape); },
      [&](kernels::Cuda c) {
        kernels::cuda::landmark_pool_backward(dtype, dx.raw_data(), g.raw_data(), shape, c.stream);
      });
  return dx;
}

MitaLandmarkLayout MitaLandmarkLayout::make(int64_t first, int64_t tokens, int64_t grid, int64_t m) {
  VT_CHECK(m >= 1, "[mita_landmark_pool] needs at least one landmark, got m = ", m);
  VT_CHECK(first >= 0 && tokens >= 1, "[mita_landmark_pool] tokens [", first, ", ", first + tokens,
           ") are not a range of tokens");
  VT_CHECK(grid >= 0, "[mita_landmark_pool] grid must be >= 0 (0: 1-D pooling), got ", grid);
  MitaLandmarkLayout layout;
  layout.first_ = first, layout.tokens_ = tokens, layout.grid_ = grid, layout.m_ = m;
  if (grid > 0) {
    VT_CHECK(grid * grid == tokens, "[mita_landmark_pool] a ", grid, "x", grid, " grid needs L = ", grid * grid,
             " tokens, got L = ", tokens);
    layout.pool_ = floor_isqrt(m);
    VT_CHECK(layout.pool_ * layout.pool_ == m, "[mita_landmark_pool] 2-D pooling needs m = p², got m = ", m);
  }
  return layout;
}

kernels::LandmarkPoolShape landmark_pool_shape(int64_t B, int64_t N, int64_t C, const MitaLandmarkLayout& layout,
                                               int64_t batch_stride, int64_t row_stride) {
  return {B, N, C, layout.first(), layout.tokens(), layout.grid(), layout.m(), layout.pool(), batch_stride, row_stride};
}

Tensor mita_landmark_pool(const Tensor& x, int64_t first, int64_t L, int64_t grid, int64_t m) {
  return mita_landmark_pool(x, MitaLandmarkLayout::make(first, L, grid, m));
}

Tensor mita_landmark_pool(const Tensor& x, const MitaLandmarkLayout& layout) {
  VT_CHECK(x.defined() && x.dim() == 3, "[mita_landmark_pool] x must be [B, N, C], got ",
           x.defined() ? x.describe() : std::string("an undefined tensor"));
  VT_CHECK(layout.m() >= 1, "[mita_landmark_pool] needs a layout from MitaLandmarkLayout::make");
  const int64_t B = x.size(0), N = x.size(1), C = x.size(2), m = layout.m();
  VT_CHECK(layout.first() + layout.tokens() <= N, "[mita_landmark_pool] tokens [", layout.first(), ", ",
           layout.first() + layout.tokens(), ") do not fit in the N = ", N, " tokens of ", x.describe());
  const Device dev = common_device("mita_landmark_pool", {&x});
  check_device_float(x, "mita_landmark_pool");
  Tensor xs = x.detach();
  if (xs.strides()[2] != 1 && C > 1) xs = xs.contiguous();
  const kernels::LandmarkPoolShape s = landmark_pool_shape(B, N, C, layout, xs.strides()[0], xs.strides()[1]);
  Tensor out = Tensor::empty({B, m, C}, x.dtype(), dev);
  kernels::dispatch(
      dev, [&] { kernels::cpu::landmark_pool_forward(x.dtype(), out.raw_data(), xs.raw_data(), s); },
      [&](kernels::Cuda c) {
        kernels::cuda::landmark_pool_forward(x.dtype(), out.raw_data(), xs.raw_data(), s, c.stream);
      });
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<LandmarkPoolBackward>();
    node->shape = s;
    node->dtype = x.dtype();
    attach_node(out, node, {&x});
  }
  return out;
}

}  // namespace vt::ops
