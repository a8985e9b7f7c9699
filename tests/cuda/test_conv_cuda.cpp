// The patch-embedding conv (im2col by a strided device copy + cuBLASLt), the depth-wise 3×3 and 5×5 convs and adaptive
// average pooling on the GPU against the CPU ops on the same inputs, forward and backward, f32 and bf16
// (tolerances: tests/cuda/op_compare.h). Odd grids, non-contiguous inputs, overlapping pooling bins, upsampling
// bins and the 1-D pooling of MiTA's landmarks are covered.
#include <gtest/gtest.h>

#include "cuda/op_compare.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

OpFn patch_fn() {
  return [](const std::vector<Tensor>& t) { return ops::conv2d_patch(t[0], t[1], t[2]); };
}

TEST(ConvPatchCuda, ForwardBackward) {
  VT_REQUIRE_DEVICE();
  // x [2, 3, 28, 21], p = 7: a 4×3 grid, K = 147, D = 5.
  check_op("conv2d_patch 4x3 grid", patch_fn(),
           {randn_cpu({2, 3, 28, 21}, 1), randn_cpu({5, 3, 7, 7}, 2), randn_cpu({5}, 3)}, 4);
  // ViT-Tiny-like: 1 channel, p = 4, 7×7 grid, D = 192; and p = 1 (every pixel a patch), no bias.
  check_op("conv2d_patch 7x7 grid", patch_fn(),
           {randn_cpu({3, 1, 28, 28}, 5), randn_cpu({192, 1, 4, 4}, 6), randn_cpu({192}, 7)}, 8);
  check_op("conv2d_patch p=1 no bias", patch_fn(), {randn_cpu({1, 2, 3, 5}, 9), randn_cpu({7, 2, 1, 1}, 10), Tensor()},
           11);
}

TEST(ConvPatchCuda, NonContiguousInputAndNchwOutput) {
  VT_REQUIRE_DEVICE();
  // x as an NHWC buffer permuted to NCHW: the patch copy reads it through its strides.
  auto f = [](const std::vector<Tensor>& t) { return ops::conv2d_patch(t[0].permute({0, 3, 1, 2}), t[1], t[2]); };
  check_op("conv2d_patch NHWC input", f, {randn_cpu({2, 14, 21, 3}, 1), randn_cpu({6, 3, 7, 7}, 2), randn_cpu({6}, 3)},
           4);
  Tensor y = ops::conv2d_patch(randn_cpu({2, 3, 14, 21}, 5).to(kGpu), randn_cpu({6, 3, 7, 7}, 6).to(kGpu), Tensor());
  EXPECT_EQ(y.shape(), Shape({2, 6, 2, 3}));
  // Channels last in memory (the GEMM's token-major rows), so the tokens [B, G, D] are a contiguous view.
  EXPECT_EQ(y.strides(), Shape({36, 1, 18, 6}));
  EXPECT_TRUE(y.flatten(2).transpose(1, 2).is_contiguous());
}

OpFn dw_fn() {
  return [](const std::vector<Tensor>& t) { return ops::depthwise_conv2d(t[0], t[1], t[2]); };
}

TEST(DepthwiseConvCuda, ForwardBackward) {
  VT_REQUIRE_DEVICE();
  check_op("depthwise 7x9", dw_fn(), {randn_cpu({2, 5, 7, 9}, 1), randn_cpu({5, 1, 3, 3}, 2), randn_cpu({5}, 3)}, 4);
  check_op("depthwise 14x14 C=192", dw_fn(),
           {randn_cpu({3, 192, 14, 14}, 5), randn_cpu({192, 1, 3, 3}, 6), randn_cpu({192}, 7)}, 8);
  check_op("depthwise 1x1 no bias", dw_fn(), {randn_cpu({2, 3, 1, 1}, 9), randn_cpu({3, 1, 3, 3}, 10), Tensor()}, 11);
  check_op("depthwise 1x13", dw_fn(), {randn_cpu({1, 2, 1, 13}, 12), randn_cpu({2, 1, 3, 3}, 13), randn_cpu({2}, 14)},
           15);
  // 5×5 (BRA's LCE): BRA's 56×56 map at C = 64, a map narrower than the kernel, and no bias.
  check_op("depthwise 5x5 56x56 C=64", dw_fn(),
           {randn_cpu({2, 64, 56, 56}, 16), randn_cpu({64, 1, 5, 5}, 17), randn_cpu({64}, 18)}, 19);
  check_op("depthwise 5x5 3x2", dw_fn(), {randn_cpu({2, 3, 3, 2}, 20), randn_cpu({3, 1, 5, 5}, 21), randn_cpu({3}, 22)},
           23);
  check_op("depthwise 5x5 no bias", dw_fn(), {randn_cpu({1, 4, 7, 7}, 24), randn_cpu({4, 1, 5, 5}, 25), Tensor()}, 26);
}

TEST(DepthwiseConvCuda, RefusesSevenBySeven) {
  VT_REQUIRE_DEVICE();
  EXPECT_THROW(
      ops::depthwise_conv2d(randn_cpu({1, 2, 8, 8}, 1).to(kGpu), randn_cpu({2, 1, 7, 7}, 2).to(kGpu), Tensor()), Error);
}

TEST(AdaptiveAvgPoolCuda, TwoD) {
  VT_REQUIRE_DEVICE();
  auto pool = [](int64_t oh, int64_t ow) {
    return [oh, ow](const std::vector<Tensor>& t) { return ops::adaptive_avg_pool2d(t[0], oh, ow); };
  };
  check_op("pool2d 14x14 -> 7x7", pool(7, 7), {randn_cpu({2, 3, 14, 14}, 1)}, 2);
  check_op("pool2d 14x14 -> 5x3 (overlapping bins)", pool(5, 3), {randn_cpu({2, 3, 14, 14}, 3)}, 4);
  check_op("pool2d 3x5 -> 7x8 (upsampling)", pool(7, 8), {randn_cpu({2, 3, 5}, 5)}, 6);
  check_op("pool2d 64x64 -> 1x1", pool(1, 1), {randn_cpu({1, 2, 64, 64}, 7)}, 8);
  // A transposed (non-contiguous) input.
  auto tp = [](const std::vector<Tensor>& t) { return ops::adaptive_avg_pool2d(t[0].transpose(-1, -2), 4, 3); };
  check_op("pool2d transposed input", tp, {randn_cpu({2, 9, 11}, 9)}, 10);
}

TEST(AdaptiveAvgPoolCuda, OneD) {
  VT_REQUIRE_DEVICE();
  auto pool = [](int64_t out) {
    return [out](const std::vector<Tensor>& t) { return ops::adaptive_avg_pool1d(t[0], out); };
  };
  check_op("pool1d 196 -> 49", pool(49), {randn_cpu({2, 3, 196}, 1)}, 2);
  check_op("pool1d 197 -> 7", pool(7), {randn_cpu({4, 197}, 3)}, 4);
  check_op("pool1d 5 -> 9", pool(9), {randn_cpu({3, 5}, 5)}, 6);
}

}  // namespace
}  // namespace vt::test
