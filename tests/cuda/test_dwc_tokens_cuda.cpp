// The channels-last depth-wise 3×3 conv on token rows (kernels/cuda/mita/dwc_tokens.h) against the NCHW conv of the CPU
// (ops::depthwise_conv2d and its gradients) on the same values: v a strided slice of a packed [B, N, 3C] tensor,
// the grid rows 1..N-1 (CLS first), odd G and C. f32 within float rounding of 9-term sums (forward, input
// gradient) and of B·G²-term sums (weight and bias gradients); bf16 by the bf16 rule. G = 32 and 130 split the grid
// into bands of rows (130 also needs more than 48 KB of shared memory a block); C = 72 leaves a part-filled channel
// chunk; odd C takes the one-channel path.
#include <gtest/gtest.h>

#include "device_test_util.h"
#include "kernels/cuda/mita/dwc_tokens.h"
#include "kernels/cuda/stream.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

namespace kc = kernels::cuda;

kc::TokenRows rows_of(const Tensor& t) { return {t.raw_data(), t.strides()[0], t.strides()[1]}; }

// [B, N, C] rows 1..N-1 as [B, C, G, G] and back.
Tensor to_grid(const Tensor& t, int64_t G) {
  return t.slice(1, 1, t.size(1)).transpose(1, 2).contiguous().reshape({t.size(0), t.size(2), G, G});
}
Tensor from_grid(const Tensor& grid, int64_t N) {
  const int64_t B = grid.size(0), C = grid.size(1);
  return ops::concat({Tensor::zeros({B, 1, C}, grid.dtype()), grid.reshape({B, C, N - 1}).transpose(1, 2)}, 1);
}

TEST(DwcTokensCuda, ConvInputAndWeightGradientsMatchTheNchwConv) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 500;
  struct Case {
    int64_t B, G, C;
  };
  for (const Case& cs : {Case{3, 14, 40}, Case{2, 5, 7}, Case{1, 1, 3}, Case{2, 32, 72}, Case{1, 130, 8}})
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::string what = "B=" + std::to_string(cs.B) + " G=" + std::to_string(cs.G) +
                               " C=" + std::to_string(cs.C) + " " + dtype_name(dt);
      const int64_t B = cs.B, G = cs.G, C = cs.C, N = G * G + 1;
      const Tensor qkv = randn_cpu({B, N, 3 * C}, seed++, dt), out = randn_cpu({B, N, C}, seed++, dt);
      const Tensor w = randn_cpu({C, 1, 3, 3}, seed++, dt), b = randn_cpu({C}, seed++, dt);
      const Tensor g = randn_cpu({B, N, C}, seed++, dt);
      const Tensor v = qkv.slice(2, 2 * C, 3 * C);
      // Reference in f64 on the CPU.
      auto f64 = [](const Tensor& t) { return t.to(DType::f64); };
      const Tensor conv_ref = f64(out) + from_grid(ops::depthwise_conv2d(to_grid(f64(v), G), f64(w), f64(b)), N);
      Tensor dgrid, dw_ref, db_ref;
      ops::depthwise_conv2d_grads(to_grid(f64(g), G), to_grid(f64(v), G), f64(w), &dgrid, &dw_ref, &db_ref);
      const Tensor dx_ref = f64(out) + from_grid(dgrid, N);  // the input gradient added into `out`

      const Tensor qkv_d = qkv.to(kGpu), out_d = out.to(kGpu), w_d = w.to(kGpu), b_d = b.to(kGpu), g_d = g.to(kGpu);
      const Tensor v_d = qkv_d.slice(2, 2 * C, 3 * C);
      const kernels::KernelStream stream = kc::current_stream();
      Tensor sum = Tensor::empty({B, N, C}, dt, kGpu);
      kc::depthwise3x3_tokens(dt, sum.raw_data(), out_d.raw_data(), rows_of(v_d), w_d.raw_data(), b_d.raw_data(), false,
                              B, N, C, 1, G, stream);
      Tensor dx = out_d.clone();  // in place, as the backward adds into its own dv
      kc::depthwise3x3_tokens(dt, dx.raw_data(), dx.raw_data(), rows_of(g_d), w_d.raw_data(), nullptr, true, B, N, C, 1,
                              G, stream);
      Tensor dw = Tensor::empty({C, 1, 3, 3}, dt, kGpu), db = Tensor::empty({C}, dt, kGpu);
      Tensor scratch = Tensor::empty({kc::depthwise3x3_tokens_scratch(B, C, G)}, DType::f32, kGpu);
      kc::depthwise3x3_tokens_weight_grad(dt, dw.raw_data(), db.raw_data(), rows_of(g_d), rows_of(v_d), B, C, 1, G,
                                          scratch.data<float>(), stream);
      if (dt == DType::f32) {
        EXPECT_LE(max_abs_diff(sum, conv_ref), 1e-5 * max_abs(conv_ref)) << what << " forward";
        EXPECT_LE(max_abs_diff(dx, dx_ref), 1e-5 * max_abs(dx_ref)) << what << " input gradient";
        EXPECT_LE(max_abs_diff(dw, dw_ref), 1e-5 * max_abs(dw_ref)) << what << " weight gradient";
        EXPECT_LE(max_abs_diff(db, db_ref), 1e-5 * max_abs(db_ref)) << what << " bias gradient";
      } else {
        expect_bf16_rule(sum, conv_ref.to(DType::bf16), conv_ref, (what + " forward").c_str());
        expect_bf16_rule(dx, dx_ref.to(DType::bf16), dx_ref, (what + " input gradient").c_str());
        expect_bf16_rule(dw, dw_ref.to(DType::bf16), dw_ref, (what + " weight gradient").c_str());
        expect_bf16_rule(db, db_ref.to(DType::bf16), db_ref, (what + " bias gradient").c_str());
      }
    }
}

}  // namespace
}  // namespace vt::test
