// The Figure 5 sequence model (models/sequence_model.h): the m·k ≈ N/4 budget, forward shapes and finiteness for
// the dense and MiTA variants on the CPU, and the same parameter names and shapes for both kinds.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/node.h"
#include "models/sequence_model.h"
#include "ops/ops.h"
#include "test_util.h"

namespace vt::test {
namespace {

using models::SequenceConfig;
using models::SequenceTransformer;

constexpr int64_t kN = 64;

SequenceConfig small_cfg(const std::string& kind, const std::string& pool = "sequence") {
  SequenceConfig c = models::figure5_config(kind, kN, "reference");
  if (kind == "mita") c.attention.m = 4, c.attention.k = 4, c.attention.landmark_pool = pool;
  return c;
}

// The model if this build's MiTA layer accepts the landmark pool, else nullptr (the test then skips).
std::unique_ptr<SequenceTransformer> build_or_null(const SequenceConfig& c) {
  try {
    return std::make_unique<SequenceTransformer>(c);
  } catch (const Error& e) {
    if (std::string(e.what()).find("landmark_pool") == std::string::npos) throw;
    return nullptr;
  }
}

void expect_finite_forward(const SequenceTransformer& model) {
  Tensor x = Tensor::zeros({2, kN, 128});
  ops::normal_(x, 0, 1);
  NoGradGuard no_grad;
  Tensor y = model.forward(x);
  ASSERT_EQ(y.shape(), x.shape());
  for (double v : y.to_vector()) ASSERT_TRUE(std::isfinite(v));
}

TEST(SequenceModel, Figure5BudgetIsSqrtOfAQuarterOfN) {
  const std::vector<std::pair<int64_t, int64_t>> paper = {{1024, 16},   {4096, 32},    {16384, 64},
                                                          {65536, 128}, {262144, 256}, {1048576, 512}};
  for (auto [n, mk] : paper) {
    const auto b = models::figure5_mita_budget(n);
    EXPECT_EQ(b.m, mk) << "N = " << n;
    EXPECT_EQ(b.k, mk) << "N = " << n;
  }
  EXPECT_EQ(models::figure5_mita_budget(2048).m, 32);  // √512 ≈ 22.6 → 2^round(4.5) = 32
  EXPECT_EQ(models::figure5_mita_budget(197).m, 7);    // round(√49.25)
  EXPECT_EQ(models::figure5_mita_budget(400).k, 10);
  EXPECT_EQ(models::figure5_mita_budget(2).m, 1);
  EXPECT_EQ(models::figure5_mita_budget(1).k, 1);
  const auto cfg = models::figure5_config("mita", 16384);
  EXPECT_EQ(cfg.attention.landmark_pool, "sequence");
  EXPECT_EQ(cfg.attention.m, 64);
  EXPECT_EQ(cfg.depth, 3);
  EXPECT_EQ(cfg.dim, 128);
  EXPECT_EQ(cfg.heads, 2);
}

TEST(SequenceModel, DenseForwardKeepsTheShapeAndIsFinite) {
  SequenceTransformer model(small_cfg("dense"));
  model.eval();
  EXPECT_EQ(model.blocks.size(), 3u);
  expect_finite_forward(model);
}

TEST(SequenceModel, MitaForwardKeepsTheShapeAndIsFinite) {
  auto model = build_or_null(small_cfg("mita"));
  if (!model) GTEST_SKIP() << "model.attention.landmark_pool 'sequence' is not implemented in this build yet";
  model->eval();
  expect_finite_forward(*model);
}

TEST(SequenceModel, MitaWithPatchPoolingRunsOnAnyN) {
  // "patches" pools N - 1 = 63 tokens 1-D: the blocks accept an N with no square grid.
  SequenceTransformer model(small_cfg("mita", "patches"));
  model.eval();
  expect_finite_forward(model);
}

TEST(SequenceModel, DenseAndMitaHaveTheSameParameters) {
  SequenceTransformer dense(small_cfg("dense"));
  auto mita = build_or_null(small_cfg("mita"));
  if (!mita) mita = std::make_unique<SequenceTransformer>(small_cfg("mita", "patches"));
  const auto a = dense.named_parameters(), b = mita->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.shape(), b[i].second.shape()) << a[i].first;
  }
  EXPECT_EQ(a.front().first, "blocks.0.norm1.weight");
  EXPECT_EQ(a.back().first, "norm.bias");
  EXPECT_EQ(dense.num_parameters(),
            3 * (4 * 128 + 128 * 384 + 384 + 128 * 128 + 128 + 2 * 128 * 512 + 512 + 128) + 2 * 128);
}

}  // namespace
}  // namespace vt::test
