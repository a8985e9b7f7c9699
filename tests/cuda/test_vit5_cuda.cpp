// ViT-5 (vit5_small) on the GPU: f32 logits and every parameter gradient equal the CPU model's (same weights, same
// image; MiTA's routing recorded on the CPU and replayed on the GPU, models::MitaRoutingTap), dense, MiTA and
// MiTA + DWC at the real size (201 tokens: CLS, 14x14 patches, 4 registers; d = 64), and a bf16-autocast training
// step is finite. Tolerances as tests/cuda/test_mita_cuda.cpp's DeiT-T comparison (f32, different summation orders).
#include <cmath>

#include "cuda/device_test_util.h"
#include "models/mita.h"
#include "models/registry.h"
#include "models/vit.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

models::ViTConfig vit5_small(const std::string& kind) {
  models::ViTConfig cfg = models::preset("vit5_small");
  if (kind != "dense") {
    cfg.attention.type = "mita";
    cfg.attention.m = 25, cfg.attention.k = 30;
    cfg.attention.landmark_pool = "patches";
    cfg.attention.dwc = kind == "mita_dwc";
  }
  return cfg;
}

void gpu_equals_cpu(const std::string& kind) {
  SCOPED_TRACE(kind);
  models::VisionTransformer cpu_model(vit5_small(kind)), gpu_model(vit5_small(kind));
  // LayerScale 1e-4 would hide the attention behind the residual: larger gammas make the comparison see it.
  for (auto& b : cpu_model.blocks) ops::mul_(b->gamma_1, 3000.0), ops::mul_(b->gamma_2, 3000.0);
  gpu_model.load_state_dict(cpu_model.state_dict());
  gpu_model.to(kGpu);
  const Tensor x = randn_cpu({2, 3, 224, 224}, 5);
  const Tensor y = Tensor::from_vector({1, 7}, {2}, DType::i64);
  models::MitaRoutingTap record(models::MitaRoutingTap::Mode::record);
  Tensor lc = cpu_model.forward(x);
  ops::cross_entropy(lc, y, 0.1).backward();
  if (kind != "dense") {
    ASSERT_EQ(record.routings.size(), 12u);
  }
  record.mode = models::MitaRoutingTap::Mode::replay;
  Tensor lg = gpu_model.forward(x.to(kGpu));
  ops::cross_entropy(lg, y.to(kGpu), 0.1).backward();
  expect_gpu_model_equals_cpu(lg, lc, gpu_model, cpu_model, 5e-4);
}

TEST(Vit5Cuda, SmallForwardBackwardEqualsTheCpuModel) {
  VT_REQUIRE_DEVICE();
  gpu_equals_cpu("dense");
  gpu_equals_cpu("mita");
  gpu_equals_cpu("mita_dwc");
}

TEST(Vit5Cuda, SmallBf16TrainingStepIsFinite) {
  VT_REQUIRE_DEVICE();
  for (const char* kind : {"dense", "mita", "mita_dwc"}) {
    SCOPED_TRACE(kind);
    models::VisionTransformer model(vit5_small(kind));
    model.to(kGpu);
    Tensor loss;
    {
      nn::AutocastGuard autocast(DType::bf16);
      loss = ops::cross_entropy(model.forward(randn_cpu({4, 3, 224, 224}, 3).to(kGpu)),
                                Tensor::from_vector({1, 2, 3, 4}, {4}, DType::i64).to(kGpu), 0.1);
    }
    loss.backward();
    EXPECT_TRUE(std::isfinite(loss.item()));
    for (auto& [name, p] : model.named_parameters()) EXPECT_TRUE(std::isfinite(max_abs(p.grad()))) << name;
  }
}

}  // namespace
}  // namespace vt::test
