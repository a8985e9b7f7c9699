// Reductions (sum, mean, max, argmax) and matrix products (matmul, bmm, linear): forward against f64 loops
// written here, gradients by gradcheck, over odd sizes, negative/unsorted dims, keepdim, transposed and
// broadcast operands, and the errors.
#include <cmath>

#include "ops/op_harness.h"

namespace vt::test {
namespace {

// Reference reduction over `dims` of a row-major f64 array with shape `s`, by a loop over every element.
// kind: 0 sum, 1 mean, 2 max value, 3 argmax (single dim only).
std::vector<double> reduce_ref(const std::vector<double>& x, const Shape& s, std::vector<int64_t> dims, int kind) {
  const int64_t nd = static_cast<int64_t>(s.size());
  if (dims.empty())
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  for (auto& d : dims) d = d < 0 ? d + nd : d;
  std::vector<bool> red(nd, false);
  for (auto d : dims) red[d] = true;
  Shape out_shape;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[d]) out_shape.push_back(s[d]);
  const int64_t n_out = numel(out_shape);
  std::vector<double> acc(n_out, kind >= 2 ? -INFINITY : 0.0), arg(n_out, -1);
  std::vector<int64_t> count(n_out, 0);
  std::vector<int64_t> idx(nd, 0);
  for (int64_t flat = 0; flat < static_cast<int64_t>(x.size()); ++flat) {
    int64_t o = 0, r = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (red[d]) r = r * s[d] + idx[d];
      else o = o * s[d] + idx[d];
    }
    if (kind >= 2) {
      if (x[flat] > acc[o]) acc[o] = x[flat], arg[o] = static_cast<double>(r);
    } else {
      acc[o] += x[flat];
    }
    ++count[o];
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  if (kind == 1)
    for (int64_t o = 0; o < n_out; ++o) acc[o] /= static_cast<double>(count[o]);
  return kind == 3 ? arg : acc;
}

Shape out_shape_of(const Shape& s, std::vector<int64_t> dims, bool keepdim) {
  const int64_t nd = static_cast<int64_t>(s.size());
  Shape out;
  for (int64_t d = 0; d < nd; ++d) {
    bool r = dims.empty();
    for (auto k : dims) r = r || (k < 0 ? k + nd : k) == d;
    if (!r) out.push_back(s[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

TEST(Reduce, SumAndMeanOverDimsMatchLoopAndGradcheck) {
  const Shape s = {3, 7, 5};
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {-1}, {0, 2}, {2, 0}, {0, 1}, {1, 2}, {0, 1, 2}};
  for (bool mean : {false, true})
    for (const auto& dims : dim_sets)
      for (bool keepdim : {false, true}) {
        OpCase c;
        c.name = std::string(mean ? "mean" : "sum") + " dims" + to_string(dims) + (keepdim ? " keepdim" : "");
        c.inputs = {random_tensor(s, 40)};
        c.fn = [=](const std::vector<Tensor>& in) {
          Tensor y = mean ? ops::mean(in[0], dims, keepdim) : ops::sum(in[0], dims, keepdim);
          EXPECT_EQ(y.shape(), out_shape_of(s, dims, keepdim)) << "shape";
          return y;
        };
        c.reference = [=](const std::vector<Tensor>& in) {
          return reduce_ref(in[0].to_vector(), s, dims, mean ? 1 : 0);
        };
        run_op_case(c);
      }
}

TEST(Reduce, SumOfNonContiguousInputs) {
  // A transposed view (leading-dim fast path must not be taken) and a sliced view with an offset.
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {1}, {0, 1}, {}}) {
    OpCase c;
    c.name = "sum of transpose dims" + to_string(dims);
    c.inputs = {random_tensor({7, 5}, 41)};
    c.fn = [=](const std::vector<Tensor>& in) { return ops::sum(in[0].transpose(0, 1), dims); };
    c.reference = [=](const std::vector<Tensor>& in) {
      return reduce_ref(in[0].transpose(0, 1).to_vector(), {5, 7}, dims, 0);
    };
    run_op_case(c);
    OpCase d;
    d.name = "mean of slice dims" + to_string(dims);
    d.inputs = {random_tensor({9, 6}, 42)};
    d.fn = [=](const std::vector<Tensor>& in) { return ops::mean(in[0].slice(0, 2, 9, 2).slice(1, 1, 6), dims); };
    d.reference = [=](const std::vector<Tensor>& in) {
      return reduce_ref(in[0].slice(0, 2, 9, 2).slice(1, 1, 6).to_vector(), {4, 5}, dims, 1);
    };
    run_op_case(d);
  }
}

TEST(Reduce, SumF32AccumulatesAccurately) {
  // 197 x 1025 values of 0.1 summed over the leading dim and over the last: both paths should be close to exact.
  Tensor x = Tensor::full({197, 1025}, 0.1, DType::f32);
  const double exact0 = 197 * static_cast<double>(0.1f), exact1 = 1025 * static_cast<double>(0.1f);
  for (double v : ops::sum(x, {0}).to_vector()) ASSERT_NEAR(v, exact0, 1e-5 * exact0);
  for (double v : ops::sum(x, {1}).to_vector()) ASSERT_NEAR(v, exact1, 1e-5 * exact1);
}

TEST(Reduce, MaxAndArgmaxOverEachDim) {
  const Shape s = {4, 7, 5};
  for (int64_t dim : {0, 1, 2, -1, -3})
    for (bool keepdim : {false, true}) {
      OpCase c;
      c.name = "max dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      c.inputs = {random_tensor(s, 43)};
      c.fn = [=](const std::vector<Tensor>& in) {
        auto [values, indices] = ops::max(in[0], dim, keepdim);
        EXPECT_EQ(values.shape(), out_shape_of(s, {dim}, keepdim));
        EXPECT_EQ(indices.dtype(), DType::i64);
        return values;
      };
      c.reference = [=](const std::vector<Tensor>& in) { return reduce_ref(in[0].to_vector(), s, {dim}, 2); };
      run_op_case(c);

      Tensor x = random_tensor(s, 44);
      Tensor am = ops::argmax(x, dim, keepdim);
      EXPECT_EQ(am.dtype(), DType::i64);
      EXPECT_EQ(am.shape(), out_shape_of(s, {dim}, keepdim));
      EXPECT_FALSE(am.requires_grad());
      EXPECT_EQ(am.to_vector(), reduce_ref(x.to_vector(), s, {dim}, 3)) << c.name;
      EXPECT_EQ(ops::max(x, dim, keepdim).second.to_vector(), am.to_vector());
    }
}

TEST(Reduce, MaxOfTransposedViewAndTies) {
  OpCase c;
  c.name = "max of transpose";
  c.inputs = {random_tensor({6, 9}, 45)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::max(in[0].transpose(0, 1), 1).first; };
  c.reference = [](const std::vector<Tensor>& in) {
    return reduce_ref(in[0].transpose(0, 1).to_vector(), {9, 6}, {1}, 2);
  };
  run_op_case(c);
  // Ties: the first maximal index, as torch documents; the gradient goes to that element only.
  Tensor x = Tensor::from_vector({1, 3, 3, 0, 2, 2, 2, 2}, {2, 4}, DType::f64);
  EXPECT_EQ(ops::argmax(x, 1).to_vector(), (std::vector<double>{1, 0}));
  x.set_requires_grad(true);
  ops::sum(ops::max(x, 1).first).backward();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{0, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(Reduce, ErrorsNameTheOp) {
  Tensor x = Tensor::zeros({3, 4});
  auto expect_error = [](const std::function<void()>& fn, std::initializer_list<const char*> fragments) {
    try {
      fn();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  };
  expect_error([&] { ops::sum(x, {0, -2}); }, {"[sum]", "repeated"});
  expect_error([&] { ops::mean(x, {2}); }, {"[mean]", "dim 2"});
  expect_error([&] { ops::max(x, 5); }, {"[max]", "dim 5"});
  expect_error([&] { ops::max(Tensor::zeros({3, 0}), 1); }, {"[max]", "empty"});
  expect_error([&] { ops::sum(Tensor::zeros({3}, DType::i64)); }, {"[sum]", "i64"});
  expect_error([] { ops::max(Tensor::scalar(1.0), 0); }, {"[max]", "f32[]"});
  // Reducing dim 0 of a 0-d tensor is the identity, as in torch.
  Tensor s = Tensor::scalar(2.5, DType::f64);
  EXPECT_EQ(ops::sum(s, {0}).item(), 2.5);
  EXPECT_EQ(ops::mean(s, {0}, true).shape(), Shape{});
}

// ---- matrix products ----

// a [..., M, K] @ b [..., K, N] with broadcast batch dims, by a triple loop over the expanded operands.
std::vector<double> matmul_ref(const Tensor& a, const Tensor& b) {
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "ref");
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  std::vector<double> av = a.expand(sa).to_vector(), bv = b.expand(sb).to_vector();
  std::vector<double> out(static_cast<size_t>(numel(batch) * M * N), 0.0);
  for (int64_t p = 0; p < numel(batch); ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += av[(p * M + i) * K + k] * bv[(p * K + k) * N + j];
        out[(p * M + i) * N + j] = s;
      }
  return out;
}

OpCase matmul_case(const std::string& name, Shape sa, Shape sb, std::function<Tensor(const Tensor&)> va,
                   std::function<Tensor(const Tensor&)> vb) {
  OpCase c;
  c.name = name;
  c.inputs = {random_tensor(sa, 50), random_tensor(sb, 51)};
  c.fn = [=](const std::vector<Tensor>& in) { return ops::matmul(va(in[0]), vb(in[1])); };
  c.reference = [=](const std::vector<Tensor>& in) { return matmul_ref(va(in[0]), vb(in[1])); };
  return c;
}

TEST(Matmul, ShapesBroadcastAndTransposedViewsMatchLoopAndGradcheck) {
  auto id = [](const Tensor& t) { return t; };
  auto tr = [](const Tensor& t) { return t.transpose(-1, -2); };
  std::vector<OpCase> cases = {
      matmul_case("2d", {7, 5}, {5, 3}, id, id),
      matmul_case("batched", {2, 7, 5}, {2, 5, 3}, id, id),
      matmul_case("shared rhs", {2, 3, 7, 5}, {5, 4}, id, id),
      matmul_case("shared lhs", {7, 5}, {3, 5, 4}, id, id),
      matmul_case("batch broadcast", {3, 1, 7, 5}, {2, 5, 4}, id, id),
      matmul_case("a @ b^T (q k^T)", {2, 7, 5}, {2, 6, 5}, id, tr),
      matmul_case("a^T @ b", {2, 5, 7}, {2, 5, 3}, tr, id),
      matmul_case("a^T @ b^T", {5, 7}, {3, 5}, tr, tr),
      matmul_case("broadcast with b^T", {3, 1, 7, 5}, {2, 4, 5}, id, tr),
      matmul_case("shared rhs^T", {2, 7, 5}, {4, 5}, id, tr),
      matmul_case(
          "permuted batch", {3, 2, 7, 5}, {3, 5, 4},
          [](const Tensor& t) {
            return t.permute({1, 0, 2, 3});
          },
          id),
      matmul_case(
          "sliced rows and cols", {9, 8}, {6, 5}, [](const Tensor& t) { return t.slice(0, 1, 8).slice(1, 2, 8); },
          [](const Tensor& t) { return t.slice(1, 0, 4); }),
      matmul_case(
          "expanded batch", {1, 7, 5}, {5, 3},
          [](const Tensor& t) {
            return t.expand({4, 7, 5});
          },
          id),
      // A size-1 batch dim whose stride is not the product of the later ones (a stepped slice).
      matmul_case(
          "stepped size-1 batch dim", {2, 2, 3, 4, 5}, {5, 3}, [](const Tensor& t) { return t.slice(1, 0, 2, 2); }, id),
      matmul_case(
          "stepped size-1 batch dim, batched rhs", {2, 2, 3, 4, 5}, {3, 5, 2},
          [](const Tensor& t) { return t.slice(1, 0, 2, 2); }, id),
      matmul_case("vector-like", {1, 5}, {5, 1}, id, id),
  };
  for (const auto& c : cases) run_op_case(c);
}

TEST(Matmul, F32MatchesF64Reference) {
  Tensor a = random_tensor({2, 197, 33}, 52), b = random_tensor({2, 33, 17}, 53);
  std::vector<double> want = matmul_ref(a, b);
  // b goes in as a transposed view of its transpose: the column-major operand path, in f32.
  Tensor bt = b.to(DType::f32).transpose(-1, -2).contiguous().transpose(-1, -2);
  std::vector<double> got = ops::matmul(a.to(DType::f32), bt).to_vector();
  expect_close(got, want, 1e-5, 1e-5, "f32 matmul");
}

TEST(Matmul, BmmMatchesLoopAndGradcheck) {
  OpCase c;
  c.name = "bmm";
  c.inputs = {random_tensor({3, 7, 5}, 54), random_tensor({3, 5, 4}, 55)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::bmm(in[0], in[1]); };
  c.reference = [](const std::vector<Tensor>& in) { return matmul_ref(in[0], in[1]); };
  run_op_case(c);
  EXPECT_THROW(ops::bmm(Tensor::zeros({3, 7, 5}), Tensor::zeros({2, 5, 4})), Error);
  EXPECT_THROW(ops::bmm(Tensor::zeros({7, 5}), Tensor::zeros({5, 4})), Error);
}

std::vector<double> linear_ref(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t in = w.size(1), out = w.size(0), M = x.numel() / in;
  std::vector<double> xv = x.to_vector(), wv = w.to_vector(), bv = b.defined() ? b.to_vector() : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(M * out));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.defined() ? bv[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += xv[r * in + i] * wv[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

TEST(Linear, WithAndWithoutBiasMatchLoopAndGradcheck) {
  for (bool bias : {true, false})
    for (const Shape& xs : {Shape{7, 5}, Shape{2, 3, 5}, Shape{5}}) {
      OpCase c;
      c.name = std::string("linear x") + to_string(xs) + (bias ? " bias" : " no bias");
      c.inputs = {random_tensor(xs, 60), random_tensor({4, 5}, 61)};
      if (bias) c.inputs.push_back(random_tensor({4}, 62));
      c.fn = [=](const std::vector<Tensor>& in) {
        Tensor y = ops::linear(in[0], in[1], bias ? in[2] : Tensor());
        Shape want = xs;
        want.back() = 4;
        EXPECT_EQ(y.shape(), want);
        return y;
      };
      c.reference = [=](const std::vector<Tensor>& in) { return linear_ref(in[0], in[1], bias ? in[2] : Tensor()); };
      run_op_case(c);
    }
  // A non-contiguous input and a transposed weight view.
  OpCase c;
  c.name = "linear of views";
  c.inputs = {random_tensor({5, 7}, 63), random_tensor({5, 4}, 64), random_tensor({4}, 65)};
  c.fn = [](const std::vector<Tensor>& in) { return ops::linear(in[0].transpose(0, 1), in[1].transpose(0, 1), in[2]); };
  c.reference = [](const std::vector<Tensor>& in) {
    return linear_ref(in[0].transpose(0, 1), in[1].transpose(0, 1), in[2]);
  };
  run_op_case(c);
}

TEST(Matmul, ShapeAndDtypeErrorsNameTheOperands) {
  auto expect_error = [](const std::function<void()>& fn, std::initializer_list<const char*> fragments) {
    try {
      fn();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  };
  expect_error(
      [] {
        ops::matmul(Tensor::zeros({7, 5}), Tensor::zeros({4, 3}));
      },
      {"[matmul]", "f32[7, 5]", "f32[4, 3]"});
  expect_error([] { ops::matmul(Tensor::zeros({5}), Tensor::zeros({5, 3})); }, {"[matmul]", "f32[5]"});
  expect_error(
      [] {
        ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 2}, DType::f64));
      },
      {"[matmul]", "f64[3, 2]"});
  expect_error([] { ops::matmul(Tensor::zeros({2, 7, 5}), Tensor::zeros({3, 5, 4})); }, {"[matmul]", "[2]", "[3]"});
  expect_error(
      [] {
        ops::linear(Tensor::zeros({7, 5}), Tensor::zeros({4, 6}), Tensor());
      },
      {"[linear]", "f32[7, 5]", "f32[4, 6]"});
  expect_error(
      [] {
        ops::linear(Tensor::zeros({7, 5}), Tensor::zeros({4, 5}), Tensor::zeros({3}));
      },
      {"[linear]", "f32[3]"});
  expect_error(
      [] {
        ops::linear(Tensor::zeros({7, 5}, DType::f64), Tensor::zeros({4, 5}), Tensor());
      },
      {"[linear]", "f64[7, 5]", "f32[4, 5]"});
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  { Tensor junk = Tensor::full({3, 4}, 7.0, DType::f64); }  // so reused memory is not zero by luck
  Tensor y = ops::matmul(Tensor::zeros({3, 0}, DType::f64), Tensor::zeros({0, 4}, DType::f64));
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  for (double v : y.to_vector()) EXPECT_EQ(v, 0.0);
}

}  // namespace
}  // namespace vt::test
