// The backward engine: leaf gradients, accumulation across backward calls, a tensor used more than once,
// gradients that must not alias each other, no-grad mode, and the errors of backward().
#include <gtest/gtest.h>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace vt {
namespace {

Tensor leaf(const std::vector<double>& v, DType dtype = DType::f64) {
  Tensor t = Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, dtype);
  t.set_requires_grad(true);
  return t;
}

void expect_vec(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = t.to_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Autograd, LeafGradientsOfAProduct) {
  Tensor x = leaf({1, 2, 3}), w = leaf({0.5, -1, 4});
  Tensor y = x * w;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  ops::sum(y).backward();
  expect_vec(x.grad(), {0.5, -1, 4});
  expect_vec(w.grad(), {1, 2, 3});
  EXPECT_FALSE(y.grad().defined());  // non-leaf gradients are not kept
  EXPECT_EQ(x.grad().dtype(), DType::f64);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = leaf({1, -2, 3});
  for (int i = 0; i < 2; ++i) ops::sum(ops::square(x)).backward();  // a fresh graph each time
  expect_vec(x.grad(), {4, -8, 12});
  Tensor held = x.grad();
  ops::sum(x * 3.0).backward();
  expect_vec(x.grad(), {7, -5, 15});
  EXPECT_TRUE(x.grad().same(held));  // accumulated in place
}

TEST(Autograd, TensorUsedTwiceSumsBothPaths) {
  Tensor x = leaf({1.5, -2, 0.25});
  ops::sum(x * x).backward();
  expect_vec(x.grad(), {3, -4, 0.5});

  // x feeds four paths: (x*x + x) * (2x) = 2x^3 + 2x^2  ->  6x^2 + 4x
  Tensor z = leaf({1, -2, 0.5});
  ops::sum((z * z + z) * (z * 2.0)).backward();
  expect_vec(z.grad(), {10, 16, 3.5});

  // Diamond through a shared intermediate: a = 2z', b = a*a, c = a+b.
  Tensor u = leaf({0.5, 1});
  Tensor a = u * 2.0;
  ops::sum(a + a * a).backward();  // d/du (2u + 4u^2) = 2 + 8u
  expect_vec(u.grad(), {6, 10});
}

TEST(Autograd, GradientsOfDistinctLeavesDoNotAlias) {
  // add passes the same gradient tensor to both inputs; each leaf must own its memory.
  Tensor a = leaf({1, 2}), b = leaf({3, 4});
  ops::sum(a + b).backward();
  a.grad().fill_(100.0);
  expect_vec(b.grad(), {1, 1});
  EXPECT_NE(a.grad().impl().storage, b.grad().impl().storage);

  // The seed passed to backward is the caller's: the leaf gradient must not be it.
  Tensor c = leaf({1, 2});
  Tensor seed = Tensor::from_vector({5, 6}, {2}, DType::f64);
  (c + 0.0).backward(seed);
  seed.fill_(0.0);
  expect_vec(c.grad(), {5, 6});
  Tensor d = leaf({1, 2});
  Tensor seed2 = Tensor::from_vector({7, 8}, {2}, DType::f64);
  d.backward(seed2);  // backward straight from a leaf
  seed2.fill_(0.0);
  expect_vec(d.grad(), {7, 8});
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * x;
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[backward]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f64[3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(y.backward(Tensor::ones({2}, DType::f64)), Error);  // wrong seed shape
  y.backward(Tensor::from_vector({1, 0, -1}, {3}, DType::f64));    // vector-Jacobian product
  expect_vec(x.grad(), {2, 0, -6});
  Tensor c = Tensor::from_vector({1, 2}, {2}, DType::f64);
  EXPECT_THROW(ops::sum(c).backward(), Error);  // nothing requires grad
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = leaf({1, 2});
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::enabled());
    Tensor y = x * 2.0 + x;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(ops::sum(x).requires_grad());
    EXPECT_FALSE(x.reshape({2, 1}).requires_grad());
    { NoGradGuard nested; }
    EXPECT_FALSE(GradMode::enabled());  // the inner guard restores the outer state, not "on"
  }
  EXPECT_TRUE(GradMode::enabled());
  Tensor z = x * 2.0;
  EXPECT_TRUE(z.requires_grad());
  EXPECT_NE(z.grad_fn(), nullptr);
}

TEST(Autograd, DetachAndPartialRequiresGrad) {
  Tensor x = leaf({1, 2}), k = Tensor::from_vector({3, 4}, {2}, DType::f64);
  ops::sum(x * k + x.detach() * x.detach()).backward();
  expect_vec(x.grad(), {3, 4});
  EXPECT_FALSE(k.grad().defined());
  Tensor y = x * 2.0;
  EXPECT_THROW(y.set_requires_grad(true), Error);  // only leaves
}

TEST(Autograd, GradientThroughViewsReachesTheBase) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64);
  x.set_requires_grad(true);
  Tensor y = x.transpose(0, 1).slice(0, 1, 3) * 10.0;  // elements x[:, 1:3]
  ops::sum(y).backward();
  expect_vec(x.grad(), {0, 10, 10, 0, 10, 10});
  EXPECT_EQ(x.grad().shape(), (Shape{2, 3}));
}

TEST(Autograd, F32LeafGetsF32Gradient) {
  Tensor x = leaf({1, 2}, DType::f32);
  ops::sum(x.to(DType::f64) * 3.0).backward();
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  expect_vec(x.grad(), {3, 3});
}

// y = 2x that opts in to folding a pending gradient for x, and counts how often it did.
struct FoldingDouble : Node {
  int folds = 0;
  const char* name() const override { return "FoldingDouble"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g * 2.0}; }
  bool can_fold_pending(size_t input, const Tensor& pending) const override {
    return input == 0 && pending.dtype() == DType::f64;
  }
  std::vector<Tensor> backward_folding(const Tensor& g, size_t, const Tensor& pending) override {
    ++folds;
    return {pending + g * 2.0};
  }
};

Tensor folding_double(const Tensor& x, const std::shared_ptr<FoldingDouble>& node) {
  Tensor y = (x * 2.0).detach();
  attach_node(y, node, {&x});
  return y;
}

TEST(Autograd, NodeFoldsTheGradientPendingForItsInput) {
  // d/dx of (2h + 3h), h = x·1, is 5 whichever way the sum is made. h is not a leaf: each use of a leaf gets its
  // own AccumulateGrad, so only a non-leaf input has one producer where gradients meet.
  Tensor x = leaf({1, -2, 0.5});
  auto node = std::make_shared<FoldingDouble>();
  Tensor h = x * 1.0;
  ops::sum(folding_double(h, node) + h * 3.0).backward();  // the mul runs first: its gradient waits for h
  EXPECT_EQ(node->folds, 1);
  expect_vec(x.grad(), {5, 5, 5});

  // Here the folding node runs first: nothing is pending yet, so the engine adds as usual.
  Tensor z = leaf({1, -2, 0.5});
  auto node2 = std::make_shared<FoldingDouble>();
  Tensor hz = z * 1.0;
  ops::sum(hz * 3.0 + folding_double(hz, node2)).backward();
  EXPECT_EQ(node2->folds, 0);
  expect_vec(z.grad(), {5, 5, 5});

  // The add hands one gradient tensor to both inputs; folding must not change it in place.
  Tensor u = leaf({4, 5});
  auto node3 = std::make_shared<FoldingDouble>();
  Tensor s = u * 1.0;  // a non-leaf producer shared by both branches
  ops::sum(folding_double(s, node3) + s).backward();
  EXPECT_EQ(node3->folds, 1);
  expect_vec(u.grad(), {3, 3});
}

}  // namespace
}  // namespace vt
