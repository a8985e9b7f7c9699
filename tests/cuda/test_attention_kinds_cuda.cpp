// Every attention kind inside a small ViT on the GPU: f32 logits and parameter gradients equal the CPU's (same
// weights, same input), and a bf16-autocast step runs and gives finite values. These kinds are composites of ops
// (the fused MiTA kernels are issue 5's), so this checks that every op they use works on CUDA, including MiTA's
// index building (expert keys read back to the host).
//
// Tolerance: both sides are f32 with different summation orders (cuBLASLt vs OpenBLAS, warp vs serial
// reductions) through 2 blocks of width 24: relative errors ~1e-6; we allow 2e-4·max|ref| per tensor. A wrong
// index or a missing term is off by O(1) of max|ref|. MiTA's discrete top-k/argmax could flip on a near-tie; the
// fixed seed keeps the inputs away from ties (a flip would show up as one large mismatch, not noise).
#include <cmath>
#include <utility>

#include "cuda/device_test_util.h"
#include "models/focused_linear_attention.h"
#include "models/linear_attention.h"
#include "models/registry.h"
#include "models/vit.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

models::ViTConfig micro(const std::string& type, bool dwc, bool gate, const std::string& bra_scale) {
  models::ViTConfig c = models::preset("vit_micro");  // 28×28 gray, patch 7: N = 17
  c.embed_dim = 24, c.depth = 2, c.num_heads = 3;
  c.attention.type = type;
  c.attention.m = 4, c.attention.k = 4;
  c.attention.dwc = dwc, c.attention.gate = gate;
  c.attention.agent_num = 4;
  c.attention.n_win = 2, c.attention.topk = 2;  // BRA: the 4x4 patch grid in 2x2 regions, each routed to 2
  c.attention.bra_scale = bra_scale;
  return c;
}

void check_kind(const std::string& type, bool dwc = false, bool gate = false,
                const std::string& bra_scale = "head_dim") {
  SCOPED_TRACE(type + (dwc ? "+dwc" : "") + (gate ? "+gate" : "") + (type == "bra" ? " " + bra_scale : ""));
  models::VisionTransformer cpu_model(micro(type, dwc, gate, bra_scale)), gpu_model(micro(type, dwc, gate, bra_scale));
  gpu_model.load_state_dict(cpu_model.state_dict());
  gpu_model.to(kGpu);
  const Tensor x = randn_cpu({3, 1, 28, 28}, 5);
  const Tensor y = Tensor::from_vector({1, 7, 3}, {3}, DType::i64);
  Tensor lc = cpu_model.forward(x);
  ops::cross_entropy(lc, y, 0.1).backward();
  Tensor lg = gpu_model.forward(x.to(kGpu));
  ops::cross_entropy(lg, y.to(kGpu), 0.1).backward();
  expect_gpu_model_equals_cpu(lg, lc, gpu_model, cpu_model, 2e-4);
  // One bf16-autocast forward/backward: runs, finite.
  Tensor loss;
  {
    nn::AutocastGuard autocast(DType::bf16);
    loss = ops::cross_entropy(gpu_model.forward(x.to(kGpu)), y.to(kGpu), 0.1);
  }
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item()));
  for (auto& [name, p] : gpu_model.named_parameters()) EXPECT_TRUE(std::isfinite(max_abs(p.grad()))) << name;
}

TEST(AttentionKindsCuda, DenseMatchesCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("dense");
}
TEST(AttentionKindsCuda, MitaMatchesCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("mita");
  check_kind("mita", true);
  check_kind("mita", true, true);
  check_kind("mita_route");
}
TEST(AttentionKindsCuda, BaselinesMatchCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("agent");
  check_kind("agent_bias");
  check_kind("linear");
}
TEST(AttentionKindsCuda, LinearBaselinesMatchCpu) {  // the Table 2 linear-attention baselines (MHLA: 8x8 padded grid)
  VT_REQUIRE_DEVICE();
  check_kind("flatten");
  check_kind("inline");
  check_kind("mhla");
  check_kind("pola");
}

// BRA (BiFormer's bi-level routing attention): the region routing (ops::topk of the region affinities), the
// per-image row offsets built on the device from the top-k indices, the gather of the routed regions' k/v
// (ops::index_select and its backward) and the 5x5 LCE conv (four depth-wise 3x3 convs) on the GPU; both scales.
TEST(AttentionKindsCuda, BraMatchesCpu) {
  VT_REQUIRE_DEVICE();
  check_kind("bra");
  check_kind("bra", false, false, "qk_dim");
}

// A layer's output on x without autocast and under bf16 autocast.
std::pair<Tensor, Tensor> f32_and_bf16_autocast_outputs(const models::Attention& layer, const Tensor& x) {
  Tensor f32_out = layer.forward(x);
  nn::AutocastGuard autocast(DType::bf16);
  return {f32_out, layer.forward(x)};
}

// Linear attention's core under bf16 autocast runs in f32, as the official module's autocast-off block: on bf16
// φ(Q), φ(K), V it returns f32 equal to the f32 core on the same values without autocast, which a bf16 core does
// not; inside the layer, the projections alone are bf16 (its output) and the result is close to the f32 layer.
TEST(AttentionKindsCuda, LinearAttentionCoreIsF32UnderAutocast) {
  VT_REQUIRE_DEVICE();
  const Shape s{2, 3, 17, 8};
  const Tensor q = ops::relu(randn_cpu(s, 70)).to(kGpu).to(DType::bf16);
  const Tensor k = ops::relu(randn_cpu(s, 71)).to(kGpu).to(DType::bf16);
  const Tensor v = randn_cpu(s, 72).to(kGpu).to(DType::bf16);
  const Tensor want = models::linear_attention_core(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32));
  Tensor got, bf16_core;
  {
    nn::AutocastGuard autocast(DType::bf16);
    got = models::linear_attention_core(q, k, v);
    bf16_core = ops::matmul(q, ops::matmul(k.transpose(-2, -1), v)) /
                (ops::matmul(q, ops::sum(k, {2}, true).transpose(-2, -1)) + 1e-6);
  }
  EXPECT_EQ(got.dtype(), DType::f32);
  EXPECT_EQ(max_abs_diff(got, want), 0.0);
  ASSERT_EQ(bf16_core.dtype(), DType::bf16);
  EXPECT_GT(max_abs_diff(bf16_core, want), 0.0);

  Generator gen(8);
  models::LinearAttention layer(24, 3, 0.0, gen);
  layer.to(kGpu);
  const auto [f32_out, amp_out] = f32_and_bf16_autocast_outputs(layer, randn_cpu({2, 17, 24}, 73).to(kGpu));
  EXPECT_EQ(amp_out.dtype(), DType::bf16);
  // Measured on the H200: 0.0168 against max|out| 0.48 (3.5%). The official module rounds the normalised q and k to
  // bf16 (`type_as`) before φ, and a query whose φ(q) keeps few positive entries has a small normaliser that
  // magnifies that rounding; 5% of max|out| leaves room for it, a bf16 core or a lost cast exceeds it.
  EXPECT_LE(max_abs_diff(amp_out, f32_out), 5e-2 * max_abs(f32_out));
}

// FLatten under bf16 autocast: the projections and relu(·) + 1e-6 are bf16, the focusing and the core f32 (by
// promotion, as in the official module), so the layer stays near its f32 result.
TEST(AttentionKindsCuda, FocusedLinearAttentionUnderAutocastStaysNearF32) {
  VT_REQUIRE_DEVICE();
  Generator gen(9);
  models::FocusedLinearAttention layer(24, 3, 17, 0.0, gen);
  layer.to(kGpu);
  const auto [f32_out, amp_out] = f32_and_bf16_autocast_outputs(layer, randn_cpu({2, 17, 24}, 74).to(kGpu));
  EXPECT_EQ(amp_out.dtype(), DType::bf16);
  EXPECT_LE(max_abs_diff(amp_out, f32_out), 2e-2 * max_abs(f32_out));
}

}  // namespace
}  // namespace vt::test
