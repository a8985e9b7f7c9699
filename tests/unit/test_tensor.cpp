// Tensor views and copies: shapes, strides, offsets and values of reshape/permute/transpose/slice/expand,
// when reshape copies, contiguous(), dtype conversion (bf16 round-to-nearest-even), broadcasting, and errors
// that name the op, the shapes and the dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autograd/gradcheck.h"
#include "ops/elementwise.h"

namespace vt {
namespace {

// 0, 1, 2, ... as f64 in `shape`: element values equal their row-major index, so views can be checked by index.
Tensor iota(const Shape& shape, DType dtype = DType::f64) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_vector(v, shape, dtype);
}

void expect_error(const std::function<void()>& fn, std::initializer_list<const char*> fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected a vt::Error";
  } catch (const Error& e) {
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(Tensor, FactoriesAndMetadata) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.describe(), "f32[2, 3, 4]");
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.size(-1), 4);
  Tensor s = Tensor::scalar(2.5, DType::f64);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(Tensor::full({2}, 7.0, DType::i32).to_vector(), (std::vector<double>{7, 7}));
  EXPECT_EQ(Tensor::arange(4).to_vector(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(Tensor::arange(4).dtype(), DType::i64);
  EXPECT_EQ(Tensor::arange(0).numel(), 0);
  EXPECT_THROW(Tensor::arange(-1), Error);
  expect_error([] { Tensor::from_vector({1, 2, 3}, {2, 2}); }, {"[from_vector]", "[2, 2]"});
  expect_error([] { Tensor::zeros({2, -1}); }, {"negative", "[2, -1]"});
}

TEST(Tensor, ReshapeOfContiguousIsAViewWithInference) {
  Tensor x = iota({2, 3, 4});
  Tensor r = x.reshape({4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(r.strides(), (Shape{6, 1}));
  EXPECT_EQ(r.to_vector(), x.to_vector());
  r.slice(0, 1, 2).fill_(-1.0);  // writes through to x: same storage
  EXPECT_EQ(x.to_vector()[6], -1.0);
  EXPECT_EQ(x.to_vector()[11], -1.0);
  EXPECT_EQ(x.to_vector()[12], 12.0);
  expect_error([&] { x.reshape({5, 5}); }, {"[reshape]", "f64[2, 3, 4]", "[5, 5]"});
  expect_error([&] { x.reshape({-1, -1}); }, {"[reshape]", "more than one -1"});
  expect_error([&] { x.reshape({5, -1}); }, {"[reshape]", "[5, -1]"});
}

TEST(Tensor, ReshapeOfNonContiguousCopies) {
  Tensor x = iota({3, 4});
  Tensor t = x.transpose(0, 1);  // [4, 3], strides [1, 4]
  ASSERT_FALSE(t.is_contiguous());
  Tensor r = t.reshape({12});
  EXPECT_TRUE(r.is_contiguous());
  std::vector<double> want;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) want.push_back(i * 4 + j);
  EXPECT_EQ(r.to_vector(), want);
  r.fill_(0.0);  // a copy: x is untouched
  EXPECT_EQ(x.to_vector()[1], 1.0);
  EXPECT_NE(r.impl().storage, x.impl().storage);
  // flatten / unsqueeze / squeeze go through reshape too.
  EXPECT_EQ(t.flatten().to_vector(), want);
  EXPECT_EQ(x.unsqueeze(1).shape(), (Shape{3, 1, 4}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(1).squeeze(1).shape(), (Shape{3, 4}));
  EXPECT_EQ(iota({2, 3, 4, 5}).flatten(1, 2).shape(), (Shape{2, 12, 5}));
  expect_error([&] { x.squeeze(0); }, {"[squeeze]", "f64[3, 4]"});
}

TEST(Tensor, PermuteAndTransposeStridesAndValues) {
  Tensor x = iota({2, 3, 5});  // strides [15, 5, 1]
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{5, 2, 3}));
  EXPECT_EQ(p.strides(), (Shape{1, 15, 5}));
  EXPECT_FALSE(p.is_contiguous());
  std::vector<double> v = p.to_vector(), want;
  for (int k = 0; k < 5; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(i * 15 + j * 5 + k);
  EXPECT_EQ(v, want);
  Tensor t = x.transpose(-1, -2);
  EXPECT_EQ(t.shape(), (Shape{2, 5, 3}));
  EXPECT_EQ(t.strides(), (Shape{15, 1, 5}));
  EXPECT_EQ(t.transpose(1, 2).to_vector(), x.to_vector());
  EXPECT_EQ(p.permute({1, 2, 0}).to_vector(), x.to_vector());  // inverse permutation
  expect_error([&] { x.permute({0, 1}); }, {"[permute]", "f64[2, 3, 5]"});
  expect_error([&] { x.permute({0, 1, 1}); }, {"[permute]", "repeated"});
  expect_error([&] { x.transpose(0, 3); }, {"[transpose]", "dim 3"});
}

TEST(Tensor, SliceStridesOffsetsAndValues) {
  Tensor x = iota({4, 7});
  Tensor s = x.slice(1, 2, 6);
  EXPECT_EQ(s.shape(), (Shape{4, 4}));
  EXPECT_EQ(s.strides(), (Shape{7, 1}));
  EXPECT_EQ(s.offset(), 2);
  EXPECT_FALSE(s.is_contiguous());
  Tensor st = x.slice(1, 1, 7, 2);  // columns 1, 3, 5
  EXPECT_EQ(st.shape(), (Shape{4, 3}));
  EXPECT_EQ(st.strides(), (Shape{7, 2}));
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j : {1, 3, 5}) want.push_back(i * 7 + j);
  EXPECT_EQ(st.to_vector(), want);
  Tensor neg = x.slice(0, -2, 100);  // negative start, end clamped
  EXPECT_EQ(neg.shape(), (Shape{2, 7}));
  EXPECT_EQ(neg.offset(), 14);
  EXPECT_EQ(neg.to_vector()[0], 14.0);
  EXPECT_EQ(x.slice(1, 5, 2).numel(), 0);  // empty when end < start
  Tensor rows = x.slice(0, 1, 3);          // a row range is still contiguous
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.offset(), 7);
  // A slice of a slice composes offsets and strides.
  Tensor ss = st.slice(0, 1, 4, 2).slice(1, 1, 3);
  EXPECT_EQ(ss.shape(), (Shape{2, 2}));
  EXPECT_EQ(ss.to_vector(), (std::vector<double>{10, 12, 24, 26}));
  expect_error([&] { x.slice(1, 0, 3, 0); }, {"[slice]", "step"});
  expect_error([&] { x.slice(2, 0, 1); }, {"[slice]", "dim 2"});
}

TEST(Tensor, ExpandUsesZeroStrides) {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  std::vector<double> v = e.to_vector();
  for (int a = 0; a < 2; ++a)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(v[(a * 3 + i) * 4 + j], i);
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  expect_error([&] { x.expand({2, 4}); }, {"[expand]", "f64[3, 1]", "[2, 4]"});
  expect_error([&] { x.expand({3}); }, {"[expand]"});
}

TEST(Tensor, ContiguousCloneAndCopy) {
  Tensor x = iota({3, 4});
  EXPECT_TRUE(x.contiguous().same(x));  // already contiguous: the same tensor
  Tensor t = x.transpose(0, 1);
  Tensor c = t.contiguous();
  EXPECT_FALSE(c.same(t));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.strides(), (Shape{3, 1}));
  EXPECT_EQ(c.to_vector(), t.to_vector());
  Tensor cl = x.clone();
  cl.fill_(5.0);
  EXPECT_EQ(x.to_vector()[0], 0.0);
  // copy_ and fill_ into a non-contiguous view write only the viewed elements.
  Tensor y = Tensor::zeros({3, 4}, DType::f64);
  y.slice(1, 1, 4, 2).copy_(Tensor::full({3, 2}, 9.0, DType::f32));
  y.slice(0, 2, 3).fill_(-1.0);
  EXPECT_EQ(y.to_vector(), (std::vector<double>{0, 9, 0, 9, 0, 9, 0, 9, -1, -1, -1, -1}));
  Tensor tv = y.transpose(0, 1);
  tv.fill_(3.0);
  for (double v : y.to_vector()) EXPECT_EQ(v, 3.0);
  expect_error([&] { y.copy_(Tensor::zeros({4, 3})); }, {"[copy_]", "f32[4, 3]", "f64[3, 4]"});
}

TEST(Tensor, DtypeRoundTrips) {
  Tensor f = Tensor::from_vector({0.5, -1.25, 3.0e7, 1.0 / 3.0}, {4}, DType::f32);
  EXPECT_EQ(f.to(DType::f64).to(DType::f32).to_vector(), f.to_vector());
  EXPECT_TRUE(f.to(DType::f32).same(f));
  EXPECT_EQ(f.to(DType::f64).to_vector()[3], static_cast<double>(1.0f / 3.0f));
  // Float to integer truncates toward zero, as a C++ cast (and torch) does.
  Tensor g = Tensor::from_vector({2.7, -2.7, 0.0, 100.0}, {4}, DType::f64);
  EXPECT_EQ(g.to(DType::i32).to_vector(), (std::vector<double>{2, -2, 0, 100}));
  EXPECT_EQ(g.to(DType::i64).to(DType::f32).to_vector(), (std::vector<double>{2, -2, 0, 100}));
  EXPECT_EQ(Tensor::from_vector({200, 3}, {2}, DType::u8).to(DType::f32).to_vector(), (std::vector<double>{200, 3}));
  // A conversion of a non-contiguous view keeps the logical order.
  Tensor t = iota({2, 3}).transpose(0, 1).to(DType::i64);
  EXPECT_EQ(t.to_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(t.is_contiguous());
}

TEST(Tensor, Bf16RoundsToNearestEven) {
  // bf16 keeps 8 significant bits: near 1 the spacing is 2^-7 = 0.0078125.
  const std::vector<double> in = {
      1.00390625,   // halfway 1 | 1.0078125: tie to even mantissa -> 1
      1.01171875,   // halfway 1.0078125 | 1.015625: tie to even -> 1.015625
      1.005,        // nearer 1.0078125
      1.0039,       // just below halfway -> 1
      -1.00390625,  // sign is symmetric
      3.0,          // exact
      65504.0,      // 2^16 - 32: rounds up to 65536
      1e-40,        // subnormal float survives as a (rounded) subnormal
      std::numeric_limits<double>::infinity(),
      3.4028234663852886e38,  // FLT_MAX rounds to +inf in bf16
  };
  const std::vector<double> want = {1.0,
                                    1.015625,
                                    1.0078125,
                                    1.0,
                                    -1.0,
                                    3.0,
                                    65536.0,
                                    static_cast<double>(static_cast<float>(bf16(1e-40f))),
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::infinity()};
  Tensor b = Tensor::from_vector(in, {static_cast<int64_t>(in.size())}, DType::f32).to(DType::bf16);
  EXPECT_EQ(b.dtype(), DType::bf16);
  std::vector<double> got = b.to_vector();
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(got[i], want[i]) << "input " << in[i];
  EXPECT_GT(got[7], 0.0);
  EXPECT_EQ(b.to(DType::f32).to_vector(), got);  // bf16 -> f32 is exact
  // f64 -> bf16 converts directly too, and NaN stays NaN.
  Tensor n = Tensor::from_vector({std::nan(""), 1.01171875}, {2}, DType::bf16);
  EXPECT_TRUE(std::isnan(n.to_vector()[0]));
  EXPECT_EQ(n.to_vector()[1], 1.015625);
  EXPECT_EQ(Tensor::full({2}, 1.00390625, DType::bf16).to_vector(), (std::vector<double>{1.0, 1.0}));
}

TEST(Broadcast, ShapesFollowNumpyRules) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 1}, "t"), (Shape{3, 4, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}, "t"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({2, 3}, {}, "t"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({1}, {0}, "t"), (Shape{0}));
  EXPECT_EQ(broadcast_shapes({7, 1}, {1, 197}, "t"), (Shape{7, 197}));
  EXPECT_EQ(broadcast_shapes({2, 1, 1, 4}, {3, 1}, "t"), (Shape{2, 1, 3, 4}));
  expect_error([] { broadcast_shapes({3, 4}, {5}, "myop"); }, {"[myop]", "[3, 4]", "[5]"});
  expect_error([] { broadcast_shapes({2, 3}, {3, 3}, "myop"); }, {"[myop]", "[2, 3]", "[3, 3]"});
}

TEST(Broadcast, BinaryOpValuesAndErrors) {
  Tensor a = iota({2, 1, 3}), b = iota({4, 1}) * 10.0;
  Tensor c = a + b;
  ASSERT_EQ(c.shape(), (Shape{2, 4, 3}));
  std::vector<double> v = c.to_vector();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(v[(i * 4 + j) * 3 + k], (i * 3 + k) + 10.0 * j);
  // Broadcasting against a non-contiguous view.
  Tensor d = iota({3, 2}).transpose(0, 1) * iota({3});
  EXPECT_EQ(d.to_vector(), (std::vector<double>{0, 2, 8, 0, 3, 10}));
  expect_error([] { ops::sub(Tensor::zeros({2, 3}), Tensor::zeros({2})); }, {"[sub]", "[2, 3]", "[2]"});
  expect_error([] { ops::div(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)); }, {"[div]", "f32[2]", "f64[2]"});
}

TEST(Tensor, ErrorsNameTheOpAndDtypes) {
  Tensor x = Tensor::zeros({2, 3});
  expect_error([&] { x.data<double>(); }, {"[data]", "f32", "f64"});
  expect_error([&] { x.item(); }, {"[item]", "f32[2, 3]"});
  expect_error([] { Tensor::zeros({2}, DType::i64).set_requires_grad(true); }, {"[requires_grad]", "i64[2]"});
  expect_error([&] { x.size(2); }, {"[size]", "dim 2"});
  expect_error([] { Tensor().shape(); }, {"undefined"});
}

TEST(Tensor, ZeroDimTensors) {
  // Dim 0 of a 0-d tensor is accepted where torch accepts it; everything else errors instead of
  // reading shape()[0] of an empty shape.
  Tensor s = Tensor::scalar(2.5, DType::f64);
  EXPECT_EQ(s.squeeze(0).shape(), Shape{});
  EXPECT_EQ(s.transpose(0, 0).shape(), Shape{});
  EXPECT_EQ(s.unsqueeze(0).shape(), Shape{1});
  EXPECT_EQ(s.flatten().shape(), Shape{1});
  EXPECT_EQ(s.expand({3}).to_vector(), (std::vector<double>{2.5, 2.5, 2.5}));
  expect_error([&] { s.size(0); }, {"[size]", "f64[]"});
  expect_error([&] { s.slice(0, 0, 1); }, {"[slice]", "f64[]"});
  expect_error([&] { s.transpose(0, 1); }, {"[transpose]", "dim 1"});
  expect_error([] { Tensor::zeros({3, 1}).expand({-1, 3, 1}); }, {"[expand]", "[-1, 3, 1]"});
}

TEST(Tensor, ViewChainGradcheck) {
  // reshape of a permuted (non-contiguous) view, slices with steps and an expand, all differentiable.
  std::vector<double> v(2 * 3 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i));
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor p = in[0].permute({2, 0, 1});                                             // [5, 2, 3]
    Tensor r = p.reshape({5, 6}).slice(0, 1, 5, 2);                                  // [2, 6]
    Tensor e = in[0].slice(2, 0, 1).expand({2, 3, 6}).flatten(0, 1).slice(0, 0, 2);  // [2, 6]
    return (r * e).transpose(0, 1).contiguous().unsqueeze(0).to(DType::f64);
  };
  GradcheckResult res = gradcheck(fn, {Tensor::from_vector(v, {2, 3, 5}, DType::f64)});
  EXPECT_TRUE(res.ok) << res.detail;
  // The same chain through bf16 and f32 conversions carries gradients back in f64.
  auto cast = [](const std::vector<Tensor>& in) { return (in[0].to(DType::f32) * 2.0).to(DType::f64); };
  GradcheckResult rc = gradcheck(cast, {Tensor::from_vector({0.5, 0.25, -1.0}, {3}, DType::f64)}, 1e-3, 1e-3);
  EXPECT_TRUE(rc.ok) << rc.detail;
}

}  // namespace
}  // namespace vt
