// scaled_dot_product_attention: the composite (matmul → softmax → matmul, what dense attention always did) as the
// CPU oracle and the f32 path, and the fused flash kernels for bf16 on CUDA with their own backward node, which
// saves q, k, v, out and the row log-sum-exp instead of the N×N probabilities.
#include "ops/attention.h"

#include <array>

#include "autograd/node.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/dispatch.h"
#include "ops/elementwise.h"
#include "ops/head_layout.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"

namespace vt::ops {

namespace {

Tensor composite_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  return matmul(softmax(matmul(q * scale, k.transpose(-2, -1)), -1), v);
}

void check_operands(const Tensor& q, const Tensor& k, const Tensor& v) {
  for (const Tensor* t : {&q, &k, &v})
    VT_CHECK(t->dim() == 4, "[scaled_dot_product_attention] q, k, v must be [B, H, N, d], got ", t->describe());
  VT_CHECK(q.shape() == k.shape() && q.shape() == v.shape(),
           "[scaled_dot_product_attention] q, k, v shapes differ: ", q.describe(), ", ", k.describe(), ", ",
           v.describe());
  VT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "[scaled_dot_product_attention] q, k, v dtypes differ");
}

namespace kc = kernels::cuda;

/// t itself when the kernels can read it in place (contiguous last dim, 16-byte aligned rows), else a copy.
Tensor kernel_ready(const Tensor& t) {
  Tensor x = row_contiguous(t);
  return kc::flash_attention_aligned(head_view(x)) ? x : x.contiguous();
}

kernels::AttentionShape shape_of(const Tensor& q, double scale) {
  return {q.size(0), q.size(1), q.size(2), q.size(3), static_cast<float>(scale)};
}

struct FlashAttentionBackward : Node {
  Tensor q, k, v, out, lse;  // detached; lse f32 [B, H, N]
  double scale = 1.0;
  const char* name() const override { return "FlashAttentionBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override {
    const Device dev = q.device();
    return kernels::on_cuda(dev, [&](kernels::Cuda c) -> std::vector<Tensor> {
      Tensor dout = kernel_ready(grad.dtype() == DType::bf16 ? grad : grad.to(DType::bf16));
      auto grad_like_q = [&] { return empty_bnhd(q.size(0), q.size(1), q.size(2), q.size(3), DType::bf16, dev); };
      Tensor dq = grad_like_q(), dk = grad_like_q(), dv = grad_like_q();
      const kernels::AttentionShape s = shape_of(q, scale);
      Tensor workspace = Tensor::empty({kc::flash_attention_backward_workspace(s)}, DType::f32, dev);
      kc::flash_attention_backward(head_view(dq), head_view(dk), head_view(dv), head_view(dout), head_view(q),
                                   head_view(k), head_view(v), head_view(out), lse.data<float>(),
                                   workspace.data<float>(), s, c.stream);
      return {needs_grad(0) ? dq : Tensor(), needs_grad(1) ? dk : Tensor(), needs_grad(2) ? dv : Tensor()};
    });
  }
  void release() override { q = k = v = out = lse = Tensor(); }
};

Tensor flash_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, double scale) {
  const Device dev = q_in.device();
  return kernels::on_cuda(dev, [&](kernels::Cuda c) {
    Tensor q = kernel_ready(q_in), k = kernel_ready(k_in), v = kernel_ready(v_in);
    const kernels::AttentionShape s = shape_of(q, scale);
    Tensor out = empty_bnhd(q.size(0), q.size(1), q.size(2), q.size(3), DType::bf16, dev);
    Tensor lse = Tensor::empty({s.B, s.H, s.N}, DType::f32, dev);
    kc::flash_attention_forward(head_view(out), lse.data<float>(), head_view(q), head_view(k), head_view(v), s,
                                c.stream);
    if (any_requires_grad({&q_in, &k_in, &v_in})) {
      auto node = std::make_shared<FlashAttentionBackward>();
      node->q = q;
      node->k = k;
      node->v = v;
      node->out = out.detach();
      node->lse = lse;
      node->scale = scale;
      attach_node(out, node, {&q_in, &k_in, &v_in});
    }
    return out;
  });
}

// The [B, H, N, d] views of q, k, v inside a packed [B, N, 3·H·d] tensor (no autograd).
std::array<Tensor, 3> unpack_qkv(const Tensor& qkv, int64_t heads) {
  const int64_t B = qkv.size(0), N = qkv.size(1), C = qkv.size(2) / 3, d = C / heads;
  const Shape& st = qkv.strides();
  std::array<Tensor, 3> out;
  for (int64_t i = 0; i < 3; ++i)
    out[i] = make_view(qkv, {B, heads, N, d}, {st[0], d * st[2], st[1], st[2]}, qkv.offset() + i * C * st[2]);
  return out;
}

struct QkvAttentionBackward : Node {
  Tensor qkv, out, lse;  // detached; out [B, H, N, d] view, lse f32 [B, H, N]
  int64_t heads = 1;
  double scale = 1.0;
  const char* name() const override { return "QkvAttentionBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override {
    const Device dev = qkv.device();
    return kernels::on_cuda(dev, [&](kernels::Cuda c) -> std::vector<Tensor> {
      const int64_t B = qkv.size(0), N = qkv.size(1), C = qkv.size(2) / 3;
      Tensor g = grad.dtype() == DType::bf16 ? grad : grad.to(DType::bf16);
      Tensor dout = kernel_ready(g.reshape({B, N, heads, C / heads}).permute({0, 2, 1, 3}));
      Tensor dqkv = Tensor::empty({B, N, 3 * C}, DType::bf16, dev);
      auto [q, k, v] = unpack_qkv(qkv, heads);
      auto [dq, dk, dv] = unpack_qkv(dqkv, heads);
      const kernels::AttentionShape s = shape_of(q, scale);
      Tensor workspace = Tensor::empty({kc::flash_attention_backward_workspace(s)}, DType::f32, dev);
      kc::flash_attention_backward(head_view(dq), head_view(dk), head_view(dv), head_view(dout), head_view(q),
                                   head_view(k), head_view(v), head_view(out), lse.data<float>(),
                                   workspace.data<float>(), s, c.stream);
      return {dqkv};
    });
  }
  void release() override { qkv = out = lse = Tensor(); }
};

// Fused path of qkv_attention, or an undefined tensor when the kernels cannot read qkv in place.
Tensor flash_qkv_attention(const Tensor& qkv_in, int64_t heads, double scale) {
  const Device dev = qkv_in.device();
  return kernels::on_cuda(dev, [&](kernels::Cuda c) {
    Tensor qkv = qkv_in.detach();
    if (qkv.strides()[2] != 1) qkv = qkv.contiguous();
    auto [q, k, v] = unpack_qkv(qkv, heads);
    for (const Tensor* t : {&q, &k, &v})
      if (!kc::flash_attention_aligned(head_view(*t))) return Tensor();
    const kernels::AttentionShape s = shape_of(q, scale);
    Tensor out = empty_bnhd(q.size(0), q.size(1), q.size(2), q.size(3), DType::bf16, dev);
    Tensor lse = Tensor::empty({s.B, s.H, s.N}, DType::f32, dev);
    kc::flash_attention_forward(head_view(out), lse.data<float>(), head_view(q), head_view(k), head_view(v), s,
                                c.stream);
    Tensor result = make_view(out, {s.B, s.N, s.H * s.d}, {s.N * s.H * s.d, s.H * s.d, 1}, 0);
    if (qkv_in.requires_grad()) {
      auto node = std::make_shared<QkvAttentionBackward>();
      node->qkv = qkv;
      node->out = out;
      node->lse = lse;
      node->heads = heads;
      node->scale = scale;
      attach_node(result, node, {&qkv_in});
    }
    return result;
  });
}

}  // namespace

Tensor qkv_attention(const Tensor& qkv, int64_t heads, double scale) {
  VT_CHECK(qkv.dim() == 3 && heads > 0 && qkv.size(2) % (3 * heads) == 0, "[qkv_attention] qkv must be [B, N, 3·",
           heads, "·d], got ", qkv.describe());
  const int64_t B = qkv.size(0), N = qkv.size(1), C = qkv.size(2) / 3, d = C / heads;
  const Device dev = common_device("qkv_attention", {&qkv});
  if (dev.is_cuda() && qkv.dtype() == DType::bf16 && kc::flash_attention_supports(d)) {
    Tensor out = flash_qkv_attention(qkv, heads, scale);
    if (out.defined()) return out;
  }
  Tensor t = qkv.reshape({B, N, 3, heads, d}).permute({2, 0, 3, 1, 4});
  Tensor q = t.slice(0, 0, 1).squeeze(0), k = t.slice(0, 1, 2).squeeze(0), v = t.slice(0, 2, 3).squeeze(0);
  return scaled_dot_product_attention(q, k, v, scale).transpose(1, 2).reshape({B, N, C});
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  check_operands(q, k, v);
  const Device dev = common_device("scaled_dot_product_attention", {&q, &k, &v});
  if (dev.is_cuda() && q.dtype() == DType::bf16 && kc::flash_attention_supports(q.size(3)))
    return flash_attention(q, k, v, scale);
  return composite_attention(q, k, v, scale);
}

}  // namespace vt::ops
