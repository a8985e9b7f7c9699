// The fused MiTA ops (ops/mita.h) on the CPU: the routing rules (top-k sets, tie order, arg-max, grouping), a
// finite-difference gradcheck of the joint attention in f64 with the routing held fixed, and the fused layer
// against the op-by-op reference (forward and gradients) over the pooling variants, route-only and both scales;
// the packed-qkv training path (one node for the whole core) against the three-slice path and the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "autograd/gradcheck.h"
#include "models/mita.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

using models::MitaDebug;
using models::MitaOptions;

Tensor heads_of(const Tensor& x, int64_t H) {  // [B, N, C] → [B, H, N, d] view
  return x.reshape({x.size(0), x.size(1), H, x.size(2) / H}).permute({0, 2, 1, 3});
}

std::vector<int32_t> ints(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  std::copy_n(t.contiguous().data<int32_t>(), v.size(), v.begin());
  return v;
}

TEST(MitaRoute, TopKSetsArgmaxAndGroupingMatchTheReferenceSelections) {
  const int64_t B = 2, N = 17, C = 12, H = 3;
  MitaOptions o = opts(H, 4, 5, 1, false, "shifted", "official");
  o.impl = "reference";
  Tensor q = randn_t({B, N, C}, 1), k = randn_t({B, N, C}, 2), v = randn_t({B, N, C}, 3);
  MitaDebug dbg;
  models::mita_core(q, k, v, o, &dbg);
  Tensor R = heads_of(models::mita_landmarks(q, o), H);
  ops::MitaRouting r = ops::mita_route(heads_of(q, H), heads_of(k, H), R, o.k);
  // Expert key sets: the reference lists them by descending score, the fused op by ascending index.
  const std::vector<double> ref_keys = dbg.expert_keys.to_vector();
  const std::vector<int32_t> keys = ints(r.expert_keys);
  for (size_t row = 0; row < keys.size() / o.k; ++row) {
    std::vector<int64_t> want(ref_keys.begin() + row * o.k, ref_keys.begin() + (row + 1) * o.k);
    std::sort(want.begin(), want.end());
    std::vector<int64_t> got(keys.begin() + row * o.k, keys.begin() + (row + 1) * o.k);
    EXPECT_EQ(got, want) << "expert row " << row;
  }
  const std::vector<double> ref_experts = dbg.experts.to_vector();
  const std::vector<int32_t> experts = ints(r.experts), order = ints(r.order), offsets = ints(r.offsets);
  for (size_t i = 0; i < experts.size(); ++i) EXPECT_EQ(experts[i], ref_experts[i]) << "query " << i;
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int32_t* off = &offsets[bh * (o.m + 1)];
    EXPECT_EQ(off[0], 0);
    EXPECT_EQ(off[o.m], N);
    for (int64_t j = 0; j < o.m; ++j)
      for (int32_t t = off[j]; t < off[j + 1]; ++t) {
        const int32_t n = order[bh * N + t];
        EXPECT_EQ(experts[bh * N + n], j);
        if (t > off[j]) {
          EXPECT_LT(order[bh * N + t - 1], n) << "queries ascend inside an expert";
        }
      }
  }
}

TEST(MitaRoute, TiesGoToTheLowerIndex) {
  // All-equal keys and landmarks: every score ties, so expert j owns keys 0..k-1 and every query picks expert 0.
  const int64_t B = 1, H = 1, N = 9, m = 3, d = 4, kk = 4;
  Tensor q = Tensor::full({B, H, N, d}, 0.5, DType::f64), k = Tensor::full({B, H, N, d}, 1.0, DType::f64);
  Tensor R = Tensor::full({B, H, m, d}, 2.0, DType::f64);
  ops::MitaRouting r = ops::mita_route(q, k, R, kk);
  EXPECT_EQ(ints(r.expert_keys), std::vector<int32_t>({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(ints(r.experts), std::vector<int32_t>(N, 0));
  EXPECT_EQ(ints(r.offsets), std::vector<int32_t>({0, 9, 9, 9}));
}

TEST(MitaAttentionOp, GradcheckWithFixedRoutingSharedAndRouteOnly) {
  const int64_t B = 2, H = 2, N = 10, m = 3, kk = 4, d = 4;
  Tensor q = randn_t({B, H, N, d}, 11), k = randn_t({B, H, N, d}, 12), v = randn_t({B, H, N, d}, 13);
  Tensor R = randn_t({B, H, m, d}, 14), vh = randn_t({B, H, m, d}, 15);
  const ops::MitaRouting routing = ops::mita_route(q, k, R, kk);
  for (bool shared : {true, false}) {
    ops::MitaAttentionOptions o;
    o.scale = 0.5, o.shared_scale = 0.25, o.shared = shared;
    auto fn = [&](const std::vector<Tensor>& x) {
      return ops::mita_attention(x[0], x[1], x[2], x[3], x[4], routing, o);
    };
    GradcheckResult res = gradcheck(fn, {q, k, v, R, vh});
    EXPECT_TRUE(res.ok) << (shared ? "shared: " : "route-only: ") << res.detail;
  }
}

TEST(MitaAttentionOp, BadRoutingAndShapesNameTheOp) {
  Tensor q = randn_t({1, 1, 5, 4}, 1), R = randn_t({1, 1, 2, 4}, 2);
  ops::MitaRouting r = ops::mita_route(q, q, R, 2);
  ops::MitaAttentionOptions o;
  expect_error([&] { ops::mita_route(q, q, R, 6); }, "[mita_route] k = 6");
  expect_error([&] { ops::mita_attention(q, q, q, R, randn_t({1, 1, 3, 4}, 3), r, o); }, "[mita_attention] landmarks");
  ops::MitaRouting bad = r;
  bad.order = Tensor::zeros({1, 1, 4}, DType::i32);
  expect_error([&] { ops::mita_attention(q, q, q, R, R, bad, o); }, "[mita_attention] routing");
}

// The fused layer core equals the reference, forward and the gradients of q, k, v (f64).
TEST(MitaFused, EqualsReferenceForwardAndGradients) {
  struct Case {
    int64_t N;
    MitaOptions o;
  };
  const std::vector<Case> cases = {
      {17, opts(3, 4, 5, 1, false, "shifted", "official")},   // 4x4 grid → 2x2
      {17, opts(3, 9, 6, 1, false, "patches", "paper")},      // overlapping 2-D bins
      {12, opts(3, 3, 4, 1, false, "shifted", "official")},   // 1-D pooling
      {16, opts(3, 4, 5, 1, false, "sequence", "official")},  // all tokens, 1-D
      {17, opts(3, 4, 8, 1, true, "shifted", "official")},    // route-only
      {50, opts(2, 9, 10, 1, false, "shifted", "official")},
  };
  const int64_t B = 2, C = 12;
  uint64_t seed = 300;
  for (const Case& c : cases) {
    const std::string name = "N=" + std::to_string(c.N) + " " + c.o.landmark_pool + (c.o.route_only ? " route" : "");
    std::vector<Tensor> in;
    for (int i = 0; i < 3; ++i) in.push_back(randn_t({B, c.N, C}, seed++));
    Tensor w = randn_t({B, c.N, C}, seed++);
    std::vector<std::vector<double>> outs, grads;
    for (const char* impl : {"fused", "reference"}) {
      MitaOptions o = c.o;
      o.impl = impl;
      std::vector<Tensor> x;
      for (const Tensor& t : in) {
        Tensor leaf = t.detach();
        leaf.set_requires_grad(true);
        x.push_back(leaf);
      }
      Tensor out = models::mita_core(x[0], x[1], x[2], o);
      ops::sum(out * w).backward();
      outs.push_back(out.to_vector());
      for (const Tensor& t : x) grads.push_back(t.grad().to_vector());
    }
    expect_near_all(outs[0], outs[1], 1e-12, name + " forward");
    for (int i = 0; i < 3; ++i) expect_near_all(grads[i], grads[3 + i], 1e-10, name + " grad " + "qkv"[i]);
  }
}

// The packed-qkv path (models::mita_core_packed → ops::mita_qkv_attention) equals the fused three-slice path and
// the reference: forward and d(qkv) in f64, including a qkv whose rows are strided (the gated layer's qkvg).
TEST(MitaFused, PackedQkvPathEqualsTheSlicesAndTheReference) {
  struct Case {
    int64_t N;
    MitaOptions o;
  };
  const std::vector<Case> cases = {
      {17, opts(3, 4, 5, 1, false, "shifted", "official")}, {17, opts(3, 9, 6, 1, false, "patches", "paper")},
      {12, opts(3, 3, 4, 1, false, "shifted", "official")}, {16, opts(3, 4, 5, 1, false, "sequence", "official")},
      {17, opts(3, 4, 8, 1, true, "shifted", "official")},  {50, opts(2, 9, 10, 1, false, "shifted", "official")},
  };
  const int64_t B = 2, C = 12;
  uint64_t seed = 900;
  for (const Case& c : cases)
    for (int64_t width : {3 * C, 4 * C}) {
      const std::string name = "N=" + std::to_string(c.N) + " " + c.o.landmark_pool + (c.o.route_only ? " route" : "") +
                               (width > 3 * C ? " strided rows" : "");
      const Tensor base = randn_t({B, c.N, width}, seed++), w = randn_t({B, c.N, C}, seed++);
      std::vector<std::vector<double>> outs, grads;
      for (int path = 0; path < 3; ++path) {  // packed, fused slices, reference
        Tensor leaf = base.detach();
        leaf.set_requires_grad(true);
        const Tensor qkv = leaf.slice(2, 0, 3 * C);
        MitaOptions o = c.o;
        o.impl = path == 2 ? "reference" : "fused";
        Tensor out = path == 0
                         ? models::mita_core_packed(qkv, o)
                         : models::mita_core(qkv.slice(2, 0, C), qkv.slice(2, C, 2 * C), qkv.slice(2, 2 * C, 3 * C), o);
        ASSERT_TRUE(out.defined()) << name << ": the packed path should apply";
        ops::sum(out * w).backward();
        outs.push_back(out.to_vector());
        grads.push_back(leaf.grad().to_vector());
      }
      for (int path = 1; path < 3; ++path) {
        expect_near_all(outs[0], outs[path], 1e-12, name + " forward vs path " + std::to_string(path));
        expect_near_all(grads[0], grads[path], 1e-10, name + " d(qkv) vs path " + std::to_string(path));
      }
    }
}

// Where the packed path does not apply it says so with an undefined tensor and the layer takes the slices.
TEST(MitaFused, PackedQkvPathOnlyForTrainingWithFusedKernels) {
  const Tensor qkv = randn_t({2, 17, 36}, 5);
  MitaOptions o = opts(3, 4, 5, 1, false, "shifted", "official");
  EXPECT_FALSE(models::mita_core_packed(qkv, o).defined()) << "no gradient recorded: inference keeps the slices";
  Tensor leaf = qkv.detach();
  leaf.set_requires_grad(true);
  EXPECT_TRUE(models::mita_core_packed(leaf, o).defined());
  for (auto change : std::vector<std::function<void(MitaOptions&)>>{
           [](MitaOptions& x) { x.impl = "reference"; }, [](MitaOptions& x) { x.s = 2; },
           [](MitaOptions& x) { x.compress_only = true; }, [](MitaOptions& x) { x.landmark_pool = "random"; }}) {
    MitaOptions x = o;
    change(x);
    EXPECT_FALSE(models::mita_core_packed(leaf, x).defined());
  }
}

}  // namespace
}  // namespace vt::test
