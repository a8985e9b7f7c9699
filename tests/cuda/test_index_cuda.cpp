// concat / split / index_select / gather / scatter_add / topk on the GPU against the CPU ops on the same inputs,
// forward and backward, f32 and bf16 (tolerances: tests/cuda/op_compare.h; copies are exact, sums accumulate in
// f32 with atomics). Repeated indices (accumulating backward passes and scatter_add), strided inputs, and top-k
// with heavy ties, NaN, ±0 and ±inf, rows of 1 to 4097 elements and k up to 300 are covered; top-k indices must
// match the CPU exactly (ties: lower index first).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cuda/op_compare.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

Tensor random_index(const Shape& shape, int64_t bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = static_cast<double>(dist(rng));
  return Tensor::from_vector(v, shape, DType::i64);
}

TEST(IndexCuda, ConcatAndSplit) {
  VT_REQUIRE_DEVICE();
  auto cat1 = [](const std::vector<Tensor>& t) { return ops::concat({t[0], t[1], t[2]}, 1); };
  check_op("concat dim 1", cat1, {randn_cpu({2, 3, 5}, 1), randn_cpu({2, 1, 5}, 2), randn_cpu({2, 7, 5}, 3)}, 4);
  auto cat_last = [](const std::vector<Tensor>& t) { return ops::concat({t[0].transpose(0, 1), t[1]}, -1); };
  check_op("concat last dim, strided", cat_last, {randn_cpu({4, 3}, 5), randn_cpu({3, 2}, 6)}, 7);
  auto piece = [](const std::vector<Tensor>& t) { return ops::split(t[0], {2, 5, 1}, 1)[1]; };
  check_op("split piece", piece, {randn_cpu({3, 8, 4}, 8)}, 9);
}

TEST(IndexCuda, IndexSelectWithRepeats) {
  VT_REQUIRE_DEVICE();
  const Tensor idx = Tensor::from_vector({6, 0, 6, 2, 6}, {5}, DType::i64);
  auto f = [idx](const std::vector<Tensor>& t) { return ops::index_select(t[0], 1, idx.to(t[0].device())); };
  check_op("index_select dim 1", f, {randn_cpu({5, 7, 3}, 1)}, 2);
  const Tensor rows = random_index({300}, 197, 3);
  auto g = [rows](const std::vector<Tensor>& t) { return ops::index_select(t[0], 0, rows.to(t[0].device())); };
  check_op("index_select dim 0", g, {randn_cpu({197, 64}, 4)}, 5);
}

TEST(IndexCuda, GatherWithRepeats) {
  VT_REQUIRE_DEVICE();
  const Tensor idx = random_index({4, 6, 5}, 9, 1);
  auto f = [idx](const std::vector<Tensor>& t) { return ops::gather(t[0], 1, idx.to(t[0].device())); };
  check_op("gather dim 1", f, {randn_cpu({4, 9, 5}, 2)}, 3);
  // Strided input (a transpose) and the last dim; index smaller than the input in the other dims.
  const Tensor idx2 = random_index({3, 5, 11}, 7, 4);
  auto g = [idx2](const std::vector<Tensor>& t) {
    return ops::gather(t[0].transpose(1, 2), -1, idx2.to(t[0].device()));
  };
  check_op("gather last dim, strided", g, {randn_cpu({4, 7, 6}, 5)}, 6);
}

TEST(IndexCuda, ScatterAddWithRepeats) {
  VT_REQUIRE_DEVICE();
  const Tensor idx = random_index({4, 9, 3}, 7, 1);  // 9 picks out of 7 rows: repeats for sure
  auto f = [idx](const std::vector<Tensor>& t) { return ops::scatter_add(t[0], 1, idx.to(t[0].device()), t[1]); };
  // src [4, 10, 5] is larger than the index: its extra elements get a zero gradient.
  check_op("scatter_add dim 1", f, {randn_cpu({4, 7, 5}, 2), randn_cpu({4, 10, 5}, 3)}, 4);
  const Tensor all_same = Tensor::zeros({2, 300}, DType::i64);  // 300 additions into one element
  auto g = [all_same](const std::vector<Tensor>& t) {
    return ops::scatter_add(t[0], -1, all_same.to(t[0].device()), t[1]);
  };
  check_op("scatter_add one target", g, {randn_cpu({2, 3}, 5), randn_cpu({2, 300}, 6)}, 7);
}

// GPU top-k vs CPU top-k of the same (f32) values: indices and values must be identical.
void expect_topk_matches(const Tensor& x_cpu, int64_t k, int64_t dim, DType dt, const std::string& what) {
  const Tensor xs = x_cpu.to(dt).to(DType::f32);  // the values the GPU sees
  auto [v_cpu, i_cpu] = ops::topk(xs, k, dim);
  auto [v_gpu, i_gpu] = ops::topk(x_cpu.to(dt).to(kGpu), k, dim);
  ASSERT_EQ(i_gpu.shape(), i_cpu.shape()) << what;
  EXPECT_EQ(i_gpu.dtype(), DType::i64) << what;
  EXPECT_EQ(v_gpu.dtype(), dt) << what;
  const std::vector<double> ig = i_gpu.to(cpu()).to_vector(), ic = i_cpu.to_vector();
  const std::vector<double> vg = v_gpu.to(cpu()).to_vector(), vc = v_cpu.to_vector();
  int bad = 0;
  for (size_t j = 0; j < ic.size(); ++j) {
    const bool same_value = vg[j] == vc[j] || (std::isnan(vg[j]) && std::isnan(vc[j]));
    if ((ig[j] != ic[j] || !same_value) && bad++ < 5)
      ADD_FAILURE() << what << " at " << j << ": GPU (" << vg[j] << ", " << ig[j] << ") CPU (" << vc[j] << ", " << ic[j]
                    << ")";
  }
}

TEST(TopkCuda, RandomRowsMatchCpu) {
  VT_REQUIRE_DEVICE();
  const int64_t rows[] = {1, 7, 197, 4097};
  uint32_t seed = 1;
  for (int64_t R : rows)
    for (int64_t k : {int64_t(1), int64_t(5), std::min<int64_t>(R, 300), R}) {
      if (k > R) continue;
      const std::string what = "topk R=" + std::to_string(R) + " k=" + std::to_string(k);
      expect_topk_matches(randn_cpu({3, R}, seed++), k, -1, DType::f32, what + " f32");
      expect_topk_matches(randn_cpu({3, R}, seed++), k, -1, DType::bf16, what + " bf16");
    }
}

TEST(TopkCuda, TiesNanZerosAndInfinities) {
  VT_REQUIRE_DEVICE();
  // Small integers: every row is mostly ties, so the order among equal values decides everything.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(0, 4);
  std::vector<double> v(4 * 1000);
  for (auto& x : v) x = small(rng);
  const Tensor ties = Tensor::from_vector(v, {4, 1000}, DType::f32);
  for (int64_t k : {1, 3, 100, 299, 1000}) {
    expect_topk_matches(ties, k, -1, DType::f32, "ties k=" + std::to_string(k));
    expect_topk_matches(ties, k, -1, DType::bf16, "ties bf16 k=" + std::to_string(k));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor special = Tensor::from_vector({0.0, -0.0, nan, 1.0, -inf, inf, nan, -0.0, 1.0, 0.0, -1.0}, {1, 11});
  for (int64_t k = 1; k <= 11; ++k) expect_topk_matches(special, k, -1, DType::f32, "special k=" + std::to_string(k));
  // All equal.
  expect_topk_matches(Tensor::full({2, 197}, 0.5), 50, -1, DType::f32, "all equal");
}

TEST(TopkCuda, OtherDimAndBackward) {
  VT_REQUIRE_DEVICE();
  expect_topk_matches(randn_cpu({2, 197, 5}, 1), 17, 1, DType::f32, "topk dim 1");
  auto f = [](const std::vector<Tensor>& t) { return ops::topk(t[0], 37, -1).first; };
  check_op("topk values", f, {randn_cpu({2, 3, 197}, 2)}, 3);
  auto g = [](const std::vector<Tensor>& t) { return ops::topk(t[0], 4, 0).first; };
  check_op("topk values dim 0", g, {randn_cpu({9, 6}, 4)}, 5);
}

}  // namespace
}  // namespace vt::test
