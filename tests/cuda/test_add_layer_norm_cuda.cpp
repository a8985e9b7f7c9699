// The residual add fused with the LayerNorm after it (ops::add_layer_norm) on the GPU against the two separate ops
// on the GPU: the same f32 sum and the same normalisation arithmetic, so the same bits forward, and — the autograd
// graph being the same two nodes — the same gradients. Row widths hit the fused kernel (C = 384, 100) and the
// fallback (C = 390: not a multiple of 4); the addend is bf16 (autocast) or f32; the output bf16 or f32.
#include <gtest/gtest.h>

#include "device_test_util.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

struct Grads {
  Tensor h, n, dx, dy, dw, db;
};

Grads run(bool fused, const Tensor& x0, const Tensor& y0, const Tensor& w0, const Tensor& b0, DType out_dtype,
          const Tensor& dh, const Tensor& dn) {
  Tensor x = x0.detach(), y = y0.detach(), w = w0.detach(), b = b0.detach();
  for (Tensor* t : {&x, &y, &w, &b}) t->set_requires_grad(true);
  // x enters through a product so that it is not a leaf where h's two consumers meet (as in a ViT block).
  const Tensor xs = x * 1.0;
  Tensor h, n;
  if (fused) {
    std::tie(h, n) = ops::add_layer_norm(xs, y, w, b, 1e-6, out_dtype);
  } else {
    h = xs + y;
    n = ops::layer_norm(h, w, b, 1e-6, out_dtype);
  }
  (ops::sum(h * dh) + ops::sum(n.to(DType::f32) * dn)).backward();
  return {h.detach().to(cpu()), n.detach().to(cpu()), x.grad().to(cpu()),
          y.grad().to(cpu()),   w.grad().to(cpu()),   b.grad().to(cpu())};
}

TEST(AddLayerNormCuda, FusedEqualsTheAddAndTheNormBitForBit) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 300;
  for (int64_t C : {384, 100, 390})
    for (DType add_dtype : {DType::bf16, DType::f32})
      for (DType out_dtype : {DType::bf16, DType::f32}) {
        const std::string what =
            "C=" + std::to_string(C) + " add " + dtype_name(add_dtype) + " out " + dtype_name(out_dtype);
        const Tensor x = randn_cpu({3, 37, C}, seed++).to(kGpu), y = randn_cpu({3, 37, C}, seed++, add_dtype).to(kGpu);
        const Tensor w = randn_cpu({C}, seed++).to(kGpu), b = randn_cpu({C}, seed++).to(kGpu);
        const Tensor dh = randn_cpu({3, 37, C}, seed++).to(kGpu), dn = randn_cpu({3, 37, C}, seed++).to(kGpu);
        const Grads f = run(true, x, y, w, b, out_dtype, dh, dn), s = run(false, x, y, w, b, out_dtype, dh, dn);
        EXPECT_EQ(f.n.dtype(), out_dtype) << what;
        EXPECT_EQ(f.dy.dtype(), add_dtype) << what;
        EXPECT_EQ(max_abs_diff(f.h, s.h), 0.0) << what << " sum";
        EXPECT_EQ(max_abs_diff(f.n, s.n), 0.0) << what << " norm";
        EXPECT_EQ(max_abs_diff(f.dx, s.dx), 0.0) << what << " dx";
        EXPECT_EQ(max_abs_diff(f.dy, s.dy), 0.0) << what << " dy";
        EXPECT_EQ(max_abs_diff(f.dw, s.dw), 0.0) << what << " dw";
        EXPECT_EQ(max_abs_diff(f.db, s.db), 0.0) << what << " db";
      }
}

}  // namespace
}  // namespace vt::test
