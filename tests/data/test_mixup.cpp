// Mixup / CutMix (timm batch mode): target sums, the mixed pixels, the corrected CutMix λ, the Beta draws,
// the switch probability, and the even-batch error.
#include <gtest/gtest.h>

#include "core/error.h"
#include "data/mixup.h"
#ifdef VT_WITH_CUDA
#include "cuda/device_test_util.h"
#endif

namespace vt::test {
namespace {

Tensor ramp_images(int64_t B, int64_t C, int64_t H, int64_t W) {
  Tensor t = Tensor::empty({B, C, H, W});
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i / (C * H * W)) + 0.001f * (i % 97);
  return t;
}

TEST(Mixup, BetaDrawsHaveTheRightMoments) {
  for (double a : {0.8, 1.0}) {
    double sum = 0, sum_sq = 0;
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
      data::SampleRng rng(2, 0, i);
      const double v = data::sample_beta(a, rng);
      ASSERT_GT(v, 0.0);
      ASSERT_LT(v, 1.0);
      sum += v;
      sum_sq += v * v;
    }
    const double mean = sum / n, var = sum_sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.01) << a;
    EXPECT_NEAR(var, 1.0 / (4 * (2 * a + 1)), 0.004) << a;
  }
}

TEST(Mixup, MixupBlendsWithTheFlippedBatchAndTargetsSumToOne) {
  data::MixupConfig cfg;
  cfg.num_classes = 5;
  Tensor x = ramp_images(4, 2, 3, 3);
  const std::vector<double> before = x.to_vector();
  const Tensor labels = Tensor::from_vector({0, 1, 2, 1}, {4}, DType::i64);
  data::MixDraw d;
  d.lam = 0.7;
  const Tensor t = data::apply_mix(x, labels, d, cfg);
  const std::vector<double> after = x.to_vector(), tv = t.to_vector();
  const int64_t per = 18;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t k = 0; k < per; ++k)
      EXPECT_NEAR(after[i * per + k], 0.7 * before[i * per + k] + 0.3 * before[(3 - i) * per + k], 1e-6);
  for (int64_t i = 0; i < 4; ++i) {
    double row = 0;
    for (int64_t k = 0; k < 5; ++k) row += tv[i * 5 + k];
    EXPECT_NEAR(row, 1.0, 1e-6);
  }
  // Row 0: own label 0 (weight 0.7), partner label 1 (0.3); smoothing 0.1 over 5 classes: off 0.02, on 0.92.
  EXPECT_NEAR(tv[0], 0.7 * 0.92 + 0.3 * 0.02, 1e-6);
  EXPECT_NEAR(tv[1], 0.7 * 0.02 + 0.3 * 0.92, 1e-6);
  EXPECT_NEAR(tv[2], 0.02, 1e-6);
}

TEST(Mixup, CutmixSwapsTheBoxAndCorrectsLambda) {
  data::MixupConfig cfg;
  cfg.num_classes = 3;
  cfg.mixup_alpha = 0;  // CutMix only
  int clipped = 0;
  for (int i = 0; i < 300; ++i) {
    data::SampleRng rng(4, 0, i);
    const data::MixDraw d = data::draw_mix(cfg, 16, 20, rng);
    ASSERT_TRUE(d.cutmix);
    const double area = static_cast<double>(d.y1 - d.y0) * (d.x1 - d.x0);
    EXPECT_NEAR(d.lam, 1.0 - area / (16 * 20), 1e-12);
    clipped += d.y0 == 0 || d.x0 == 0 || d.y1 == 16 || d.x1 == 20;
  }
  EXPECT_GT(clipped, 0);
  Tensor x = ramp_images(2, 1, 4, 5);
  const std::vector<double> before = x.to_vector();
  data::MixDraw d;
  d.cutmix = true;
  d.y0 = 1, d.y1 = 3, d.x0 = 2, d.x1 = 5;
  d.lam = 1.0 - 6.0 / 20;
  const Tensor t = data::apply_mix(x, Tensor::from_vector({0, 2}, {2}, DType::i64), d, cfg);
  const std::vector<double> after = x.to_vector();
  for (int y = 0; y < 4; ++y)
    for (int xx = 0; xx < 5; ++xx) {
      const bool in = y >= 1 && y < 3 && xx >= 2;
      EXPECT_EQ(after[y * 5 + xx], before[(in ? 20 : 0) + y * 5 + xx]);
      EXPECT_EQ(after[20 + y * 5 + xx], before[(in ? 0 : 20) + y * 5 + xx]);
    }
  EXPECT_NEAR(t.to_vector()[0], 0.7 * (0.9 + 0.1 / 3) + 0.3 * (0.1 / 3), 1e-6);
}

TEST(Mixup, SwitchProbabilityAndEvenBatch) {
  data::MixupConfig cfg;
  int cut = 0;
  for (int i = 0; i < 4000; ++i) {
    data::SampleRng rng(8, 1, i);
    cut += data::draw_mix(cfg, 8, 8, rng).cutmix;
  }
  EXPECT_NEAR(cut / 4000.0, 0.5, 0.03);
  Tensor odd = Tensor::zeros({3, 1, 2, 2});
  EXPECT_THROW(data::apply_mix(odd, Tensor::zeros({3}, DType::i64), {}, cfg), Error);
}

#ifdef VT_WITH_CUDA
// The device version applies the same draw with the same f32 operations (no FMA): bit-identical images and
// targets, for Mixup, CutMix (odd box, odd sizes), no mixing, and a pair sharing one label.
TEST(Mixup, CudaMatchesTheCpuBitForBit) {
  VT_REQUIRE_DEVICE();
  data::MixupConfig cfg;
  cfg.num_classes = 7;
  const Tensor labels = Tensor::from_vector({0, 6, 3, 3, 1, 2}, {6}, DType::i64);
  std::vector<data::MixDraw> draws(3);
  draws[0].lam = 0.6180339887;
  draws[1].cutmix = true;
  draws[1].y0 = 1, draws[1].y1 = 4, draws[1].x0 = 0, draws[1].x1 = 3;
  draws[1].lam = 1.0 - 9.0 / 35;
  for (const auto& d : draws) {
    Tensor cpu_x = randn_cpu({6, 3, 5, 7}, 11);
    Tensor gpu_x = cpu_x.to(kGpu);
    const Tensor cpu_t = data::apply_mix(cpu_x, labels, d, cfg);
    const Tensor gpu_t = data::apply_mix(gpu_x, labels.to(kGpu), d, cfg);
    EXPECT_EQ(gpu_t.device(), kGpu);
    EXPECT_EQ(max_abs_diff(gpu_x, cpu_x), 0.0) << "lam " << d.lam << " cutmix " << d.cutmix;
    EXPECT_EQ(max_abs_diff(gpu_t, cpu_t), 0.0) << "lam " << d.lam << " cutmix " << d.cutmix;
  }
  Tensor odd = Tensor::zeros({3, 1, 2, 2}, DType::f32, kGpu);
  EXPECT_THROW(data::apply_mix(odd, Tensor::zeros({3}, DType::i64, kGpu), {}, cfg), Error);
}
#endif

}  // namespace
}  // namespace vt::test
