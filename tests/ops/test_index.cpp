// concat / split / index_select / gather / scatter_add / topk: forward against hand-computed small cases and
// element loops, gradients by finite differences, topk tie-breaking, and the validation errors.
#include <algorithm>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

Tensor f64(const std::vector<double>& v, const Shape& s) { return Tensor::from_vector(v, s, DType::f64); }
Tensor i64(const std::vector<double>& v, const Shape& s) { return Tensor::from_vector(v, s, DType::i64); }

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "missing '" << n << "' in: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected an error containing '" << needles[0] << "'";
}

TEST(Index, ConcatHandCasesAndGradcheck) {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3}), b = f64({7, 8}, {2, 1}), c = f64({9, 10, 11, 12}, {2, 2});
  expect_close(ops::concat({a, b, c}, 1).to_vector(), {1, 2, 3, 7, 9, 10, 4, 5, 6, 8, 11, 12}, 0, 0, "concat dim 1");
  expect_close(ops::concat({a, f64({0, -1, -2}, {1, 3})}, -2).to_vector(), {1, 2, 3, 4, 5, 6, 0, -1, -2}, 0, 0,
               "concat dim 0");
  EXPECT_EQ(ops::concat({a, b, c}, 1).shape(), Shape({2, 6}));
  // Non-contiguous input and an empty piece.
  expect_close(ops::concat({a.transpose(0, 1), Tensor::zeros({0, 2}, DType::f64)}, 0).to_vector(), {1, 4, 2, 5, 3, 6},
               0, 0, "concat transposed");

  OpCase g;
  g.name = "concat 3 pieces dim 1";
  g.inputs = {random_tensor({3, 2, 4}, 1), random_tensor({3, 5, 4}, 2), random_tensor({3, 1, 4}, 3)};
  g.fn = [](const std::vector<Tensor>& in) { return ops::concat(in, 1); };
  run_op_case(g);
}

TEST(Index, ConcatBackwardSkipsInputsWithoutGrad) {
  Tensor a = random_tensor({2, 3}, 4).set_requires_grad(true), b = random_tensor({2, 2}, 5);
  Tensor y = ops::concat({b, a}, 1);
  y.backward(f64({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5}));
  expect_close(a.grad().to_vector(), {3, 4, 5, 8, 9, 10}, 0, 0, "grad a");
  EXPECT_FALSE(b.grad().defined());
}

TEST(Index, SplitViewsAndGradcheck) {
  Tensor x = f64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {6, 2});
  auto parts = ops::split(x, {1, 3, 2}, 0);
  ASSERT_EQ(parts.size(), 3u);
  expect_close(parts[0].to_vector(), {0, 1}, 0, 0, "part 0");
  expect_close(parts[1].to_vector(), {2, 3, 4, 5, 6, 7}, 0, 0, "part 1");
  expect_close(parts[2].to_vector(), {8, 9, 10, 11}, 0, 0, "part 2");
  EXPECT_EQ(parts[1].raw_data(), static_cast<char*>(x.raw_data()) + 2 * sizeof(double)) << "pieces must be views";
  auto cols = ops::split(x, {0, 2}, -1);
  EXPECT_EQ(cols[0].shape(), Shape({6, 0}));

  OpCase g;
  g.name = "split then recombine";
  g.inputs = {random_tensor({3, 7}, 6)};
  g.fn = [](const std::vector<Tensor>& in) {
    auto p = ops::split(in[0], {2, 4, 1}, 1);
    return ops::concat({p[2] * 3.0, p[0]}, 1);  // the middle piece is dropped: its gradient must be zero
  };
  run_op_case(g);
  expect_error([&] { ops::split(x, {2, 3}, 0); }, {"[split]", "5"});
  expect_error([&] { ops::split(x, {7, -1}, 0); }, {"[split]"});
}

TEST(Index, IndexSelectHandCasesAndGradcheck) {
  Tensor x = f64({0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}, {3, 4});
  expect_close(ops::index_select(x, 0, i64({2, 0, 2}, {3})).to_vector(), {20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23},
               0, 0, "rows");
  expect_close(ops::index_select(x, 1, i64({3, 1}, {2})).to_vector(), {3, 1, 13, 11, 23, 21}, 0, 0, "cols");
  // Integer tensors are selectable too (e.g. labels).
  expect_close(ops::index_select(i64({5, 6, 7}, {3}), 0, i64({1, 1, 0}, {3})).to_vector(), {6, 6, 5}, 0, 0, "i64");

  OpCase g;
  g.name = "index_select dim 1 with repeats";
  g.inputs = {random_tensor({2, 5, 3}, 7), i64({4, 0, 4, 2, 4, 1, 3}, {7})};
  g.fn = [](const std::vector<Tensor>& in) { return ops::index_select(in[0], 1, in[1]); };
  g.reference = [](const std::vector<Tensor>& in) {
    auto xv = in[0].to_vector(), iv = in[1].to_vector();
    std::vector<double> out;
    for (int a = 0; a < 2; ++a)
      for (double j : iv)
        for (int c = 0; c < 3; ++c) out.push_back(xv[(a * 5 + static_cast<int>(j)) * 3 + c]);
    return out;
  };
  run_op_case(g);
}

TEST(Index, GatherHandCasesAndGradcheck) {
  Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  // torch.gather(x, 1, [[2, 0], [1, 1]]) = [[3, 1], [5, 5]]
  expect_close(ops::gather(x, 1, i64({2, 0, 1, 1}, {2, 2})).to_vector(), {3, 1, 5, 5}, 0, 0, "dim 1");
  // torch.gather(x, 0, [[1, 0]]) = [[4, 2]] (index smaller than x in dim 1)
  expect_close(ops::gather(x, 0, i64({1, 0}, {1, 2})).to_vector(), {4, 2}, 0, 0, "dim 0");
  // Transposed (non-contiguous) input: xt = [[1, 4], [2, 5], [3, 6]]; gather(xt, 1, [[1], [0], [1]]) = [4, 2, 6]
  expect_close(ops::gather(x.transpose(0, 1), 1, i64({1, 0, 1}, {3, 1})).to_vector(), {4, 2, 6}, 0, 0, "strided");

  for (int64_t dim : {0, 1, 2}) {
    const Shape xs = {3, 4, 5};
    Shape is = {2, 3, 4};
    is[dim] = 7;  // more picks than the dim has: repeats accumulate in the gradient
    std::vector<double> iv(static_cast<size_t>(numel(is)));
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<double>((i * 7 + 3) % xs[dim]);
    OpCase g;
    g.name = "gather dim " + std::to_string(dim);
    g.inputs = {random_tensor(xs, 8 + dim), i64(iv, is)};
    g.fn = [dim](const std::vector<Tensor>& in) { return ops::gather(in[0], dim, in[1]); };
    g.reference = [dim, xs, is](const std::vector<Tensor>& in) {
      auto xv = in[0].to_vector(), idx = in[1].to_vector();
      std::vector<double> out;
      for (int64_t a = 0; a < is[0]; ++a)
        for (int64_t b = 0; b < is[1]; ++b)
          for (int64_t c = 0; c < is[2]; ++c) {
            int64_t p[3] = {a, b, c};
            p[dim] = static_cast<int64_t>(idx[(a * is[1] + b) * is[2] + c]);
            out.push_back(xv[(p[0] * xs[1] + p[1]) * xs[2] + p[2]]);
          }
      return out;
    };
    run_op_case(g);
  }
}

TEST(Index, ScatterAddHandCasesAndGradcheck) {
  Tensor base = f64({1, 1, 1, 1, 1, 1}, {2, 3});
  // dim 1: row 0 gets src [10, 20, 30] at columns [0, 2, 0]; row 1 gets [40, 50, 60] at [1, 1, 2]
  Tensor src = f64({10, 20, 30, 40, 50, 60}, {2, 3});
  expect_close(ops::scatter_add(base, 1, i64({0, 2, 0, 1, 1, 2}, {2, 3}), src).to_vector(), {41, 1, 21, 1, 91, 61}, 0,
               0, "dim 1");
  // dim 0 with an index smaller than src: only src[0][0..1] is used: rows [1, 1] of columns 0 and 1
  expect_close(ops::scatter_add(base, 0, i64({1, 1}, {1, 2}), src).to_vector(), {1, 1, 1, 11, 21, 1}, 0, 0, "dim 0");
  expect_close(base.to_vector(), {1, 1, 1, 1, 1, 1}, 0, 0, "base untouched");

  OpCase g;
  g.name = "scatter_add dim 1, src larger than index";
  g.inputs = {random_tensor({3, 4}, 12), i64({3, 0, 3, 1, 1, 1, 2, 0, 3}, {3, 3}), random_tensor({3, 5}, 13)};
  g.fn = [](const std::vector<Tensor>& in) { return ops::scatter_add(in[0], 1, in[1], in[2]); };
  g.reference = [](const std::vector<Tensor>& in) {
    auto out = in[0].to_vector(), idx = in[1].to_vector(), sv = in[2].to_vector();
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 3; ++j) out[r * 4 + static_cast<int>(idx[r * 3 + j])] += sv[r * 5 + j];
    return out;
  };
  run_op_case(g);
}

TEST(Index, TopkSortedValuesIndicesAndGradcheck) {
  Tensor x = f64({0.5, -1, 3, 2, 7, 4, 4.5, -2, 0, 1}, {2, 5});
  auto [v, i] = ops::topk(x, 3, 1);
  expect_close(v.to_vector(), {7, 3, 2, 4.5, 4, 1}, 0, 0, "values");
  expect_close(i.to_vector(), {4, 2, 3, 1, 0, 4}, 0, 0, "indices");
  EXPECT_EQ(i.dtype(), DType::i64);
  auto [v0, i0] = ops::topk(x, 1, 0);  // along dim 0: max of each column
  expect_close(v0.to_vector(), {4, 4.5, 3, 2, 7}, 0, 0, "dim 0 values");
  expect_close(i0.to_vector(), {1, 1, 0, 0, 0}, 0, 0, "dim 0 indices");

  OpCase g;
  g.name = "topk dim 1 of [3, 7, 4]";
  g.inputs = {random_tensor({3, 7, 4}, 14)};
  g.fn = [](const std::vector<Tensor>& in) { return ops::topk(in[0], 3, 1).first; };
  run_op_case(g);
}

TEST(Index, TopkLargeRowsMatchFullSort) {
  Tensor x = random_tensor({301, 257}, 15, -1, 1, DType::f32);
  auto [v, i] = ops::topk(x, 5, 1);
  auto xv = x.to_vector(), vv = v.to_vector(), iv = i.to_vector();
  for (int64_t r = 0; r < 301; ++r) {
    std::vector<double> row(xv.begin() + r * 257, xv.begin() + (r + 1) * 257);
    std::vector<double> sorted = row;
    std::sort(sorted.rbegin(), sorted.rend());
    for (int64_t j = 0; j < 5; ++j) {
      ASSERT_EQ(vv[r * 5 + j], sorted[j]) << "row " << r;
      ASSERT_EQ(row[static_cast<size_t>(iv[r * 5 + j])], sorted[j]) << "row " << r;
    }
  }
}

TEST(Index, TopkBreaksTiesByLowerIndex) {
  auto [v, i] = ops::topk(f64({1, 3, 3, 2, 3, 2}, {6}), 4);
  expect_close(v.to_vector(), {3, 3, 3, 2}, 0, 0, "values");
  expect_close(i.to_vector(), {1, 2, 4, 3}, 0, 0, "indices");
  auto [vf, iff] = ops::topk(Tensor::from_vector({5, 5, 5, 5, 5, 5, 5}, {7}, DType::f32), 7);
  expect_close(iff.to_vector(), {0, 1, 2, 3, 4, 5, 6}, 0, 0, "all equal");
}

TEST(Index, OutOfRangeIndicesNameTheOpAndTheIndex) {
  Tensor x = Tensor::zeros({3, 4}, DType::f64);
  expect_error([&] { ops::index_select(x, 0, i64({0, 3}, {2})); }, {"[index_select]", "index 3"});
  expect_error([&] { ops::index_select(x, 1, i64({-1}, {1})); }, {"[index_select]", "index -1"});
  expect_error([&] { ops::index_select(x, 0, Tensor::zeros({2}, DType::i32)); }, {"[index_select]", "i64"});
  expect_error([&] { ops::index_select(x, 0, i64({0, 1}, {1, 2})); }, {"[index_select]", "1-D"});
  expect_error([&] { ops::gather(x, 1, i64({0, 4}, {1, 2})); }, {"[gather]", "index 4"});
  expect_error([&] { ops::gather(x, 1, i64({0, 0, 0, 0}, {4, 1})); }, {"[gather]", "larger"});
  expect_error([&] { ops::gather(x, 1, i64({0}, {1})); }, {"[gather]", "rank"});
  expect_error([&] { ops::scatter_add(x, 0, i64({5}, {1, 1}), x); }, {"[scatter_add]", "index 5"});
  expect_error([&] { ops::scatter_add(x, 0, i64({0, 0, 0, 0, 0}, {1, 5}), x); }, {"[scatter_add]", "larger"});
  expect_error([&] { ops::topk(x, 5, 1); }, {"[topk]", "k = 5"});
  expect_error([&] { ops::topk(x, -1, 1); }, {"[topk]"});
  expect_error([&] { ops::gather(x, 2, i64({0}, {1, 1})); }, {"[gather]"});
  expect_error([&] { ops::concat({x, Tensor::zeros({3, 4})}, 0); }, {"[concat]", "dtypes"});
  expect_error([&] { ops::concat({x, Tensor::zeros({2, 5}, DType::f64)}, 0); }, {"[concat]", "[2, 5]"});
  expect_error([&] { ops::concat({}, 0); }, {"[concat]"});
}

}  // namespace
}  // namespace vt::test
