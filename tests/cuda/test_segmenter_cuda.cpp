// The Segmenter (models/segmenter, CBT and linear decoders) on the GPU: f32 against the CPU model with the same
// weights, a bf16-autocast MiTA + CBT training step, and the segmentation path of `vitrain bench`.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/device_test_util.h"
#include "engine/bench.h"
#include "models/segmenter.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

// 64² images, patch 16 (4x4 grid, N = 17), dim 48, 3 heads (head dim 16), 5 classes, a 2-layer CBT with 2x2 reps.
models::SegmenterConfig tiny_seg(const std::string& decoder, const std::string& attention) {
  io::ModelConfig m;
  m.name = "vit_tiny_patch16_384";
  m.img_size = 64, m.embed_dim = 48, m.depth = 2, m.num_heads = 3, m.num_classes = 5, m.layer_norm_eps = 1e-5;
  m.drop_path_rate = 0.0;  // the CPU and GPU models must compute the same function
  m.attention.type = attention;
  if (attention == "mita") m.attention.m = m.attention.k = 4;
  m.decoder.type = decoder, m.decoder.layers = 2, m.decoder.heads = 2, m.decoder.head_dim = 8;
  m.decoder.reps_grid = 2;
  return models::segmenter_config(m, 11);
}

Tensor label_maps(int64_t B, int64_t S, int64_t K) {
  std::vector<double> v(static_cast<size_t>(B * S * S));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 0 ? 255.0 : static_cast<double>((i / 7) % K);
  return Tensor::from_vector(v, {B, S, S}, DType::i64);
}

bool finite(const Tensor& t) {
  for (double v : t.to(cpu()).to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

TEST(SegmenterCuda, F32MatchesTheCpuModel) {
  VT_REQUIRE_DEVICE();
  for (const char* decoder : {"cbt", "linear"}) {
    models::Segmenter cpu_model(tiny_seg(decoder, "dense")), gpu_model(tiny_seg(decoder, "dense"));  // same seed
    gpu_model.to(kGpu);
    const Tensor images = randn_cpu({2, 3, 64, 64}, 3);
    const Tensor labels = label_maps(2, 64, 5);
    const Tensor ref = cpu_model.forward(images);
    const Tensor out = gpu_model.forward(images.to(kGpu));
    ASSERT_EQ(out.shape(), (Shape{2, 5, 64, 64}));
    EXPECT_EQ(out.dtype(), DType::f32);
    // f32 with other summation orders (cuBLAS, fused norms); mask_norm rescales over 5 classes, so allow 1e-3.
    EXPECT_LT(max_abs_diff(out, ref), 1e-3) << decoder;
    ops::pixel_cross_entropy(ref, labels).backward();
    ops::pixel_cross_entropy(out, labels.to(kGpu)).backward();
    const auto cpu_params = cpu_model.named_parameters(), gpu_params = gpu_model.named_parameters();
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      const Tensor& g_ref = cpu_params[i].second.grad();
      const Tensor& g = gpu_params[i].second.grad();
      ASSERT_TRUE(g.defined() && g_ref.defined()) << cpu_params[i].first;
      EXPECT_LT(max_abs_diff(g, g_ref), 1e-3 * std::max(1.0, max_abs(g_ref))) << decoder << " " << cpu_params[i].first;
    }
  }
}

TEST(SegmenterCuda, MitaCbtTrainingStepUnderBf16Autocast) {
  VT_REQUIRE_DEVICE();
  models::Segmenter model(tiny_seg("cbt", "mita"));
  model.to(kGpu);
  const Tensor images = randn_cpu({2, 3, 64, 64}, 4).to(kGpu);
  Tensor logits;
  {
    nn::AutocastGuard autocast(DType::bf16);
    logits = model.forward(images);
    ASSERT_EQ(logits.dtype(), DType::f32);  // the masks and their upsampling stay f32
    ops::pixel_cross_entropy(logits, label_maps(2, 64, 5).to(kGpu)).backward();
  }
  EXPECT_TRUE(finite(logits));
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), DType::f32) << name;
    EXPECT_TRUE(finite(p.grad())) << name;
  }
}

TEST(SegmenterCuda, BenchRunsTheSegmentationPath) {
  VT_REQUIRE_DEVICE();
  engine::BenchOptions o;
  o.model = "vit_tiny_patch16_384";
  o.segmenter = tiny_seg("cbt", "mita");
  o.attention = o.segmenter->backbone.attention;
  o.batch_size = 2, o.steps = 2, o.warmup = 1, o.device = "cuda", o.amp = true, o.infer = true;
  const engine::BenchResult r = engine::run_bench(o);
  EXPECT_GT(r.train_img_per_s, 0);
  EXPECT_GT(r.infer_img_per_s, 0);
  EXPECT_TRUE(r.train_peak.has_value());
  EXPECT_TRUE(std::isfinite(r.last_loss));
  EXPECT_NE(engine::bench_json(o, r).find("\"task\":\"segmentation\""), std::string::npos);
}

}  // namespace
}  // namespace vt::test
