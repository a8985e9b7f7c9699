// MiTA's joint attention on tensor cores — the masked flash kernels (kernels/cuda/mita/mita_flash.cu) and the
// per-expert kernels (kernels/cuda/mita/mita_expert.h: mita_joint_forward_mma + mita_expert_backward, atomics and
// deterministic) — against an f64 reference computed here on the same bf16-rounded inputs and the same routing
// (ops::mita_route on the CPU).
//
// bf16 rule (issue 4): our max error vs the f64 reference must be ≤ 2× that of a plain bf16 implementation of
// the joint softmax, defined as in test_flash_attention.cpp: every GEMM takes bf16 operands, accumulates in f32
// and writes bf16 (so the logits, P, out, dP, dS, dq, dk, dv, dr, dv̂ are bf16-rounded); softmax and its backward
// run in f32 on those values. Ours writes dr, dv̂ in f32, which only helps it.
// The reference itself is checked against the CPU MiTA kernels (kernels/cpu/mita.h) in f64; that test runs
// without a GPU. Operands are laid out as in training: q, k, v strided views of one packed [B, N, 3C] tensor,
// out and dout [B, N, C], gradients written into a packed [B, N, 3C] tensor pre-filled with junk (every row must
// be written, not added to).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/device_test_util.h"
#include "kernels/cpu/mita.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/mita/mita.h"
#include "kernels/cuda/mita/mita_expert.h"
#include "kernels/cuda/mita/mita_flash.h"
#include "kernels/cuda/mita/mita_mma.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

namespace kc = kernels::cuda;

struct Config {
  int64_t N, m, k, d;
  bool shared;
};

// Inputs as [B, H, rows, d] row-major values that bf16 represents exactly, and their routing.
struct Problem {
  Config c{};
  int64_t B = 2, H = 2;
  double scale = 0, shared_scale = 0;
  std::vector<double> q, k, v, r, vh, dout;
  std::vector<int32_t> expert_keys, experts, order, offsets;
  int64_t P() const { return c.shared ? c.m : 0; }
};

struct Result {
  std::vector<double> out, lse, dq, dk, dv, dr, dvh;
};

double round_bf16(double x) { return float(bf16(static_cast<float>(x))); }
double identity(double x) { return x; }

std::vector<int32_t> ints(const Tensor& t) {
  Tensor c = t.to(cpu()).contiguous();
  return std::vector<int32_t>(c.data<int32_t>(), c.data<int32_t>() + c.numel());
}

// The kernel family under test.
enum class Family { masked, expert_atomics, expert_deterministic };

Problem make_problem(const Config& c, uint32_t seed, int64_t B = 2, int64_t H = 2) {
  Problem p;
  p.c = c;
  p.B = B, p.H = H;
  p.scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  p.shared_scale = 0.7 * p.scale;  // differs from scale, so a slot with the wrong scale shows
  const Shape rows{p.B, p.H, c.N, c.d}, slots{p.B, p.H, c.m, c.d};
  // std 1.5 makes the softmax peaked enough that the masking and rescaling paths matter.
  Tensor q = randn_cpu(rows, seed, DType::bf16, 1.5), k = randn_cpu(rows, seed + 1, DType::bf16, 1.5);
  Tensor r = randn_cpu(slots, seed + 2, DType::bf16, 1.5);
  p.q = q.to_vector(), p.k = k.to_vector(), p.r = r.to_vector();
  p.v = randn_cpu(rows, seed + 3, DType::bf16).to_vector();
  p.vh = randn_cpu(slots, seed + 4, DType::bf16).to_vector();
  p.dout = randn_cpu(rows, seed + 5, DType::bf16).to_vector();
  const ops::MitaRouting routing = ops::mita_route(q.to(DType::f32), k.to(DType::f32), r.to(DType::f32), c.k);
  p.expert_keys = ints(routing.expert_keys), p.experts = ints(routing.experts);
  p.order = ints(routing.order), p.offsets = ints(routing.offsets);
  return p;
}

// Forward and backward of the joint softmax with element type T; `bf` rounds where the plain bf16
// implementation writes a bf16 tensor (identity for the f64 reference).
template <typename T>
Result mita_cpu(const Problem& p, double (*bf)(double)) {
  const int64_t N = p.c.N, m = p.c.m, kk = p.c.k, d = p.c.d, P = p.P(), BH = p.B * p.H;
  Result res;
  res.out.assign(BH * N * d, 0), res.lse.assign(BH * N, 0), res.dq.assign(BH * N * d, 0);
  res.dk.assign(BH * N * d, 0), res.dv.assign(BH * N * d, 0), res.dr.assign(BH * m * d, 0);
  res.dvh.assign(BH * m * d, 0);
  auto dot = [d](const double* a, const double* b) {
    T s = 0;
    for (int64_t c = 0; c < d; ++c) s += static_cast<T>(a[c]) * static_cast<T>(b[c]);
    return s;
  };
  for (int64_t bh = 0; bh < BH; ++bh) {
    std::vector<T> gk(N * d, 0), gv(N * d, 0), gr(m * d, 0), gvh(m * d, 0);
    for (int64_t n = 0; n < N; ++n) {
      const double* qn = &p.q[(bh * N + n) * d];
      const double* go = &p.dout[(bh * N + n) * d];
      // slots: the P shared landmarks, then the expert's keys
      struct Slot {
        const double *key, *value;
        T scale;
        T *gkey, *gval;
      };
      std::vector<Slot> sl;
      for (int64_t j = 0; j < P; ++j)
        sl.push_back(
            {&p.r[(bh * m + j) * d], &p.vh[(bh * m + j) * d], static_cast<T>(p.shared_scale), &gr[j * d], &gvh[j * d]});
      const int32_t* keys = &p.expert_keys[(bh * m + p.experts[bh * N + n]) * kk];
      for (int64_t i = 0; i < kk; ++i)
        sl.push_back({&p.k[(bh * N + keys[i]) * d], &p.v[(bh * N + keys[i]) * d], static_cast<T>(p.scale),
                      &gk[keys[i] * d], &gv[keys[i] * d]});
      const size_t S = sl.size();
      std::vector<T> s(S), prob(S), dp(S), acc(d, 0);
      T mx = -INFINITY, sum = 0;
      for (size_t j = 0; j < S; ++j) mx = std::max(mx, s[j] = static_cast<T>(bf(dot(qn, sl[j].key) * sl[j].scale)));
      for (size_t j = 0; j < S; ++j) sum += std::exp(s[j] - mx);
      for (size_t j = 0; j < S; ++j) prob[j] = static_cast<T>(bf(std::exp(s[j] - mx) / sum));
      for (size_t j = 0; j < S; ++j)
        for (int64_t c = 0; c < d; ++c) acc[c] += prob[j] * static_cast<T>(sl[j].value[c]);
      for (int64_t c = 0; c < d; ++c) res.out[(bh * N + n) * d + c] = bf(acc[c]);
      res.lse[bh * N + n] = static_cast<double>(mx + std::log(sum));
      T ds = 0;
      for (size_t j = 0; j < S; ++j) ds += prob[j] * (dp[j] = static_cast<T>(bf(dot(go, sl[j].value))));
      std::fill(acc.begin(), acc.end(), T(0));
      for (size_t j = 0; j < S; ++j) {
        const T dS = static_cast<T>(bf(prob[j] * (dp[j] - ds)));
        for (int64_t c = 0; c < d; ++c) {
          acc[c] += dS * sl[j].scale * static_cast<T>(sl[j].key[c]);
          sl[j].gkey[c] += dS * sl[j].scale * static_cast<T>(qn[c]);
          sl[j].gval[c] += prob[j] * static_cast<T>(go[c]);
        }
      }
      for (int64_t c = 0; c < d; ++c) res.dq[(bh * N + n) * d + c] = bf(acc[c]);
    }
    for (int64_t i = 0; i < N * d; ++i) res.dk[bh * N * d + i] = bf(gk[i]), res.dv[bh * N * d + i] = bf(gv[i]);
    for (int64_t i = 0; i < m * d; ++i) res.dr[bh * m * d + i] = bf(gr[i]), res.dvh[bh * m * d + i] = bf(gvh[i]);
  }
  return res;
}

// [B, H, N, d] values → [B, N, 3C] with them in part w (0: q, 1: k, 2: v) of every row; the others 0.
void pack_part(std::vector<double>& qkv, const std::vector<double>& x, const Problem& p, int64_t w) {
  const int64_t N = p.c.N, d = p.c.d, C = p.H * d;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < d; ++c)
          qkv[(b * N + n) * 3 * C + w * C + h * d + c] = x[((b * p.H + h) * N + n) * d + c];
}

// Part w of a [B, N, parts·C] tensor as a [B, H, N, d] tensor view.
Tensor heads_part(const Tensor& x, const Problem& p, int64_t w) {
  const int64_t C = p.H * p.c.d;
  return x.slice(2, w * C, (w + 1) * C).reshape({p.B, p.c.N, p.H, p.c.d}).permute({0, 2, 1, 3});
}

kernels::AttentionView view_of(const Tensor& t) {
  return {t.raw_data(), t.strides()[0], t.strides()[1], t.strides()[2]};
}

Tensor gpu_bf16(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_vector(v, shape, DType::bf16).to(kGpu);
}
Tensor gpu_i32(const std::vector<int32_t>& v) {
  return Tensor::from_vector(std::vector<double>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}, DType::i32)
      .to(kGpu);
}

Result run_kernels(const Problem& p, Family family) {
  const int64_t B = p.B, H = p.H, N = p.c.N, m = p.c.m, d = p.c.d, C = H * d;
  std::vector<double> packed(B * N * 3 * C, 0.0), dout_rows(B * N * C, 0.0);
  pack_part(packed, p.q, p, 0), pack_part(packed, p.k, p, 1), pack_part(packed, p.v, p, 2);
  std::vector<double> dout_packed(B * N * 3 * C, 0.0);
  pack_part(dout_packed, p.dout, p, 0);
  Tensor qkv = gpu_bf16(packed, {B, N, 3 * C});
  Tensor dout = heads_part(gpu_bf16(dout_packed, {B, N, 3 * C}).slice(2, 0, C).contiguous(), p, 0);
  Tensor q = heads_part(qkv, p, 0), k = heads_part(qkv, p, 1), v = heads_part(qkv, p, 2);
  Tensor r = gpu_bf16(p.r, {B, H, m, d}), vh = gpu_bf16(p.vh, {B, H, m, d});
  Tensor out_rows = Tensor::empty({B, N, C}, DType::bf16, kGpu), lse = Tensor::empty({B, H, N}, DType::f32, kGpu);
  Tensor out = heads_part(out_rows, p, 0);
  Tensor dqkv = Tensor::empty({B, N, 3 * C}, DType::bf16, kGpu);
  Tensor dr = Tensor::empty({B, H, m, d}, DType::f32, kGpu), dvh = Tensor::empty({B, H, m, d}, DType::f32, kGpu);
  for (const Tensor* t : {&dqkv, &dr, &dvh}) t->fill_(1000.0);  // junk that must be overwritten
  Tensor keys = gpu_i32(p.expert_keys), experts = gpu_i32(p.experts), order = gpu_i32(p.order),
         offsets = gpu_i32(p.offsets);
  const kernels::MitaRoutingArrays routing{keys.data<int32_t>(), experts.data<int32_t>(), order.data<int32_t>(),
                                           offsets.data<int32_t>()};
  const kernels::MitaShape s{
      B, H, N, m, p.c.k, d, static_cast<float>(p.scale), static_cast<float>(p.shared_scale), p.c.shared};
  const kernels::AttentionView dq_view = view_of(heads_part(dqkv, p, 0)), dk_view = view_of(heads_part(dqkv, p, 1)),
                               dv_view = view_of(heads_part(dqkv, p, 2));
  if (family == Family::masked) {
    EXPECT_TRUE(kc::mita_flash_supported(s));
    Tensor ws = Tensor::empty({kc::mita_flash_workspace(s)}, DType::f32, kGpu);
    ws.fill_(-1.0);  // the backward must not rely on what the forward left there
    kc::mita_flash_forward(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), view_of(r), view_of(vh),
                           routing, s, ws.data<float>(), nullptr);
    ws.fill_(-1.0);
    kc::mita_flash_backward(dq_view, dk_view, dv_view, dr.data<float>(), dvh.data<float>(), view_of(dout), view_of(q),
                            view_of(k), view_of(v), view_of(r), view_of(vh), view_of(out), lse.data<float>(), routing,
                            s, ws.data<float>(), nullptr);
  } else {
    const bool deterministic = family == Family::expert_deterministic;
    EXPECT_TRUE(kc::mita_expert_supported(s));
    Tensor ws = Tensor::empty({kc::mita_expert_backward_workspace(s, deterministic)}, DType::f32, kGpu);
    ws.fill_(-1.0);  // the backward must not rely on what is there
    kc::mita_joint_forward_mma(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), view_of(r),
                               view_of(vh), routing, s, nullptr);
    kc::mita_expert_backward(dq_view, dk_view, dv_view, dr.data<float>(), dvh.data<float>(), view_of(dout), view_of(q),
                             view_of(k), view_of(v), view_of(r), view_of(vh), view_of(out), lse.data<float>(), routing,
                             s, deterministic, ws.data<float>(), nullptr);
  }
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  Result res{out.to_vector(),
             lse.to_vector(),
             heads_part(dqkv, p, 0).to_vector(),
             heads_part(dqkv, p, 1).to_vector(),
             heads_part(dqkv, p, 2).to_vector(),
             {},
             {}};
  if (p.c.shared) res.dr = dr.to_vector(), res.dvh = dvh.to_vector();
  return res;
}

Tensor as_tensor(const std::vector<double>& v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, DType::f64);
}

std::string name_of(const Config& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "N=%ld m=%ld k=%ld d=%ld %s", static_cast<long>(c.N), static_cast<long>(c.m),
                static_cast<long>(c.k), static_cast<long>(c.d), c.shared ? "shared" : "route-only");
  return buf;
}

const char* family_name(Family f) {
  return f == Family::masked           ? "masked flash"
         : f == Family::expert_atomics ? "per expert"
                                       : "per expert, deterministic";
}

void check_config(const Config& c, uint32_t seed, Family family = Family::masked, int64_t B = 2, int64_t H = 2) {
  const std::string what = name_of(c) + " " + family_name(family);
  SCOPED_TRACE(what);
  const Problem p = make_problem(c, seed, B, H);
  const Result plain = mita_cpu<float>(p, round_bf16), ref = mita_cpu<double>(p, identity);
  const Result ours = run_kernels(p, family);
  auto rule = [&](const std::vector<double>& o, const std::vector<double>& pl, const std::vector<double>& rf,
                  const char* name, double floor) {
    expect_bf16_rule(as_tensor(o), as_tensor(pl), as_tensor(rf), (what + " " + name).c_str(), floor);
  };
  // dq and dk vanish where a softmax has a single dominant slot and the plain path may cancel exactly: tie their
  // floor to dv's scale, as test_flash_attention does.
  const double floor = 1e-5 * max_abs(as_tensor(ref.dv));
  rule(ours.out, plain.out, ref.out, "out", -1);
  rule(ours.lse, plain.lse, ref.lse, "lse", -1);
  rule(ours.dq, plain.dq, ref.dq, "dq", floor);
  rule(ours.dk, plain.dk, ref.dk, "dk", floor);
  rule(ours.dv, plain.dv, ref.dv, "dv", floor);
  if (c.shared) {
    rule(ours.dr, plain.dr, ref.dr, "dr", floor);
    rule(ours.dvh, plain.dvh, ref.dvh, "dv_hat", floor);
  }
}

// N ∈ {197, 50, 5}, (m, k) ∈ {(25, 25), (4, 7), (4, N)} (k capped at N), shared and route-only.
void check_head_dim(int64_t d) {
  uint32_t seed = static_cast<uint32_t>(100 * d);
  for (int64_t N : {197, 50, 5})
    for (auto [m, k] : {std::pair<int64_t, int64_t>{25, 25}, {4, 7}, {4, N}})
      for (bool shared : {true, false}) check_config({N, m, std::min(k, N), d, shared}, seed += 10);
}

// The per-expert kernels take the shared branch only (route-only stays on the CUDA-core kernels).
void check_expert_head_dim(int64_t d, Family family) {
  uint32_t seed = static_cast<uint32_t>(100 * d + 7);
  for (int64_t N : {197, 50, 5})
    for (auto [m, k] : {std::pair<int64_t, int64_t>{25, 25}, {4, 7}, {4, N}, {70, 3}})
      check_config({N, m, std::min(k, N), d, true}, seed += 10, family);
}

TEST(MitaFlashCuda, MatchesReferenceHeadDim64) {
  VT_REQUIRE_DEVICE();
  check_head_dim(64);
}

TEST(MitaFlashCuda, MatchesReferenceHeadDim32) {
  VT_REQUIRE_DEVICE();
  check_head_dim(32);
}

TEST(MitaFlashCuda, MatchesReferenceHeadDim128AndLongerN) {
  VT_REQUIRE_DEVICE();
  check_config({1025, 49, 49, 128, true}, 7);
  check_config({1025, 49, 49, 64, false}, 8);
}

TEST(MitaExpertCuda, MatchesReferenceHeadDim64) {
  VT_REQUIRE_DEVICE();
  check_expert_head_dim(64, Family::expert_atomics);
  check_expert_head_dim(64, Family::expert_deterministic);
}

TEST(MitaExpertCuda, MatchesReferenceHeadDim32And128) {
  VT_REQUIRE_DEVICE();
  check_expert_head_dim(32, Family::expert_atomics);
  check_expert_head_dim(128, Family::expert_deterministic);
}

// The Long Range Arena setting m = k = 128 (256 slots: more than an expert's slots in shared memory) at
// N = 1K-4K, and a 64K sequence: experts with many queries (several 64-query tiles) and slots in several tiles.
TEST(MitaExpertCuda, ManySlotsAndLongSequences) {
  VT_REQUIRE_DEVICE();
  for (int64_t N : {1024, 2048, 4096}) {
    check_config({N, 128, 128, 32, true}, static_cast<uint32_t>(N), Family::expert_atomics);
    check_config({N, 128, 128, 64, true}, static_cast<uint32_t>(N + 1), Family::expert_deterministic);
  }
  check_config({65536, 128, 128, 64, true}, 65536, Family::expert_atomics, 1, 1);
}

TEST(MitaExpertCuda, DeterministicBackwardGivesTheSameBitsTwice) {
  VT_REQUIRE_DEVICE();
  const Problem p = make_problem({1024, 128, 128, 64, true}, 21);
  const Result a = run_kernels(p, Family::expert_deterministic), b = run_kernels(p, Family::expert_deterministic);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
  EXPECT_EQ(a.dr, b.dr);
  EXPECT_EQ(a.dvh, b.dvh);
}

// The test's f64 reference against the CPU MiTA kernels (f64) on the same inputs and routing: runs without a GPU.
TEST(MitaFlashCuda, ReferenceMatchesCpuKernels) {
  for (bool shared : {true, false}) {
    const Config c{37, 5, 6, 16, shared};
    const Problem p = make_problem(c, 3);
    const Result ref = mita_cpu<double>(p, identity);
    const int64_t B = p.B, H = p.H, N = c.N, m = c.m, d = c.d;
    auto view = [&](const std::vector<double>& x, int64_t rows) {
      return kernels::AttentionView{x.data(), H * rows * d, rows * d, d};
    };
    std::vector<double> out(B * H * N * d), dq(out.size()), dk(out.size()), dv(out.size()), dr(B * H * m * d),
        dvh(dr.size());
    const kernels::MitaRoutingArrays idx{p.expert_keys.data(), p.experts.data(), p.order.data(), p.offsets.data()};
    const kernels::MitaShapeF64 s{B, H, N, m, c.k, d, p.scale, p.shared_scale, shared};
    kernels::cpu::mita_attention_forward(DType::f64, view(out, N), view(p.q, N), view(p.k, N), view(p.v, N),
                                         view(p.r, m), view(p.vh, m), idx, s);
    kernels::cpu::mita_attention_backward(DType::f64, view(dq, N), view(dk, N), view(dv, N), view(dr, m), view(dvh, m),
                                          view(p.dout, N), view(p.q, N), view(p.k, N), view(p.v, N), view(p.r, m),
                                          view(p.vh, m), idx, s);
    EXPECT_LT(max_abs_diff(as_tensor(out), as_tensor(ref.out)), 1e-12) << shared;
    EXPECT_LT(max_abs_diff(as_tensor(dq), as_tensor(ref.dq)), 1e-10) << shared;
    EXPECT_LT(max_abs_diff(as_tensor(dk), as_tensor(ref.dk)), 1e-10) << shared;
    EXPECT_LT(max_abs_diff(as_tensor(dv), as_tensor(ref.dv)), 1e-10) << shared;
    if (shared) {
      EXPECT_LT(max_abs_diff(as_tensor(dr), as_tensor(ref.dr)), 1e-10);
      EXPECT_LT(max_abs_diff(as_tensor(dvh), as_tensor(ref.dvh)), 1e-10);
    }
    // lse of query 0 from its slots directly
    double sum = 0;
    const int32_t* keys = &p.expert_keys[p.experts[0] * c.k];
    auto dot = [&](const std::vector<double>& x, int64_t row) {
      double a = 0;
      for (int64_t i = 0; i < d; ++i) a += p.q[i] * x[row * d + i];
      return a;
    };
    for (int64_t j = 0; j < (shared ? m : 0); ++j) sum += std::exp(p.shared_scale * dot(p.r, j));
    for (int64_t i = 0; i < c.k; ++i) sum += std::exp(p.scale * dot(p.k, keys[i]));
    EXPECT_NEAR(ref.lse[0], std::log(sum), 1e-12) << shared;
  }
}

// DeiT-S with MiTA (B=256, H=6, N=197, d=64, m=k=25): the masked flash kernels against the joint-attention
// kernels (mita_attention_forward / _backward, atomics and deterministic; their dR/dV̂ GEMMs not included).
// Run with --gtest_also_run_disabled_tests.
TEST(MitaFlashCuda, DISABLED_Timing) {
  VT_REQUIRE_DEVICE();
  const int64_t B = 256, H = 6, N = 197, d = 64, m = 25, kk = 25, C = H * d;
  Problem shape_only;
  shape_only.B = B, shape_only.H = H, shape_only.c = {N, m, kk, d, true};
  Tensor qkv = randn_cpu({B, N, 3 * C}, 1, DType::bf16).to(kGpu);
  Tensor q = heads_part(qkv, shape_only, 0), k = heads_part(qkv, shape_only, 1), v = heads_part(qkv, shape_only, 2);
  Tensor r = randn_cpu({B, H, m, d}, 2, DType::bf16).to(kGpu), vh = randn_cpu({B, H, m, d}, 3, DType::bf16).to(kGpu);
  Tensor dout = randn_cpu({B, H, N, d}, 4, DType::bf16).to(kGpu);
  const ops::MitaRouting routing = ops::mita_route(q, k, r, kk);
  const kernels::MitaRoutingArrays ra{routing.expert_keys.data<int32_t>(), routing.experts.data<int32_t>(),
                                      routing.order.data<int32_t>(), routing.offsets.data<int32_t>()};
  const kernels::MitaShape s{B, H, N, m, kk, d, 0.125f, 0.125f, true};
  Tensor out = Tensor::empty({B, H, N, d}, DType::bf16, kGpu), lse = Tensor::empty({B, H, N}, DType::f32, kGpu);
  Tensor dq = Tensor::empty({B, H, N, d}, DType::bf16, kGpu), dk = Tensor::empty({B, H, N, d}, DType::bf16, kGpu);
  Tensor dv = Tensor::empty({B, H, N, d}, DType::bf16, kGpu);
  Tensor dr = Tensor::empty({B, H, m, d}, DType::f32, kGpu), dvh = Tensor::empty({B, H, m, d}, DType::f32, kGpu);
  Tensor p_shared = Tensor::empty({B, H, N, m}, DType::f32, kGpu),
         ds_shared = Tensor::empty({B, H, N, m}, DType::f32, kGpu);
  const int64_t ws_size = std::max(
      {kc::mita_flash_workspace(s), kc::mita_backward_workspace(s, true), kc::mita_backward_workspace(s, false)});
  Tensor ws = Tensor::empty({ws_size}, DType::f32, kGpu);
  auto flash_fwd = [&] {
    kc::mita_flash_forward(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), view_of(r), view_of(vh),
                           ra, s, ws.data<float>(), nullptr);
  };
  auto flash_bwd = [&] {
    kc::mita_flash_backward(view_of(dq), view_of(dk), view_of(dv), dr.data<float>(), dvh.data<float>(), view_of(dout),
                            view_of(q), view_of(k), view_of(v), view_of(r), view_of(vh), view_of(out),
                            lse.data<float>(), ra, s, ws.data<float>(), nullptr);
  };
  auto joint_fwd = [&] {
    kc::mita_attention_forward(DType::bf16, view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v),
                               view_of(r), view_of(vh), ra, s, nullptr);
  };
  auto joint_bwd = [&](bool deterministic) {
    kc::mita_attention_backward(DType::bf16, view_of(dq), view_of(dk), view_of(dv), p_shared.data<float>(),
                                ds_shared.data<float>(), view_of(dout), view_of(q), view_of(k), view_of(v), view_of(r),
                                view_of(vh), view_of(out), lse.data<float>(), ra, s, deterministic, ws.data<float>(),
                                nullptr);
  };
  const double flash_f = mean_ms(flash_fwd), flash_fb = mean_ms([&] { flash_fwd(), flash_bwd(); });
  const double joint_f = mean_ms(joint_fwd);
  const double joint_fb = mean_ms([&] { joint_fwd(), joint_bwd(false); });
  const double joint_fb_det = mean_ms([&] { joint_fwd(), joint_bwd(true); });
  std::printf("MiTA B=%ld H=%ld N=%ld d=%ld m=k=%ld per layer (ms):\n", static_cast<long>(B), static_cast<long>(H),
              static_cast<long>(N), static_cast<long>(d), static_cast<long>(m));
  std::printf("  mita_flash      fwd %.3f  fwd+bwd %.3f\n", flash_f, flash_fb);
  std::printf("  mita_attention  fwd %.3f  fwd+bwd %.3f (atomics)  %.3f (deterministic)\n", joint_f, joint_fb,
              joint_fb_det);
}

// Per layer, ms: the joint attention's kernel families against dense flash attention at the same shape (q, k, v
// contiguous [B, H, N, d]; routing from mita_route; the shared branch's V̂ and the routing are not timed).
// DeiT-S (B 256, H 6, N 197, d 64, m = k = 25), Segmenter ViT-S 512² (B 8, N 1025, m = k = 49) and the LRA shapes
// (B 32, H 2, d 32, m = k = 128, N 1K-4K). Run with --gtest_also_run_disabled_tests.
TEST(MitaExpertCuda, DISABLED_TimingAgainstDense) {
  VT_REQUIRE_DEVICE();
  struct Case {
    const char* name;
    int64_t B, H, N, d, m, k;
  };
  for (const Case& c : {Case{"deit_s", 256, 6, 197, 64, 25, 25}, Case{"segmenter_s", 8, 6, 1025, 64, 49, 49},
                        Case{"lra_1k", 32, 2, 1024, 32, 128, 128}, Case{"lra_2k", 32, 2, 2048, 32, 128, 128},
                        Case{"lra_4k", 32, 2, 4096, 32, 128, 128}, Case{"long_64k", 1, 2, 65536, 64, 128, 128}}) {
    const int64_t B = c.B, H = c.H, N = c.N, d = c.d, m = c.m, kk = c.k;
    Tensor q = randn_cpu({B, H, N, d}, 1, DType::bf16).to(kGpu), k = randn_cpu({B, H, N, d}, 2, DType::bf16).to(kGpu);
    Tensor v = randn_cpu({B, H, N, d}, 3, DType::bf16).to(kGpu),
           dout = randn_cpu({B, H, N, d}, 4, DType::bf16).to(kGpu);
    Tensor r = randn_cpu({B, H, m, d}, 5, DType::bf16).to(kGpu), vh = randn_cpu({B, H, m, d}, 6, DType::bf16).to(kGpu);
    const ops::MitaRouting routing = ops::mita_route(q, k, r, kk);
    const kernels::MitaRoutingArrays ra{routing.expert_keys.data<int32_t>(), routing.experts.data<int32_t>(),
                                        routing.order.data<int32_t>(), routing.offsets.data<int32_t>()};
    const float scale = 1.f / std::sqrt(static_cast<float>(d));
    const kernels::MitaShape s{B, H, N, m, kk, d, scale, scale, true};
    Tensor out = Tensor::empty({B, H, N, d}, DType::bf16, kGpu), lse = Tensor::empty({B, H, N}, DType::f32, kGpu);
    Tensor dq = Tensor::empty({B, H, N, d}, DType::bf16, kGpu), dk = Tensor::empty({B, H, N, d}, DType::bf16, kGpu);
    Tensor dv = Tensor::empty({B, H, N, d}, DType::bf16, kGpu);
    Tensor dr = Tensor::empty({B, H, m, d}, DType::f32, kGpu), dvh = Tensor::empty({B, H, m, d}, DType::f32, kGpu);
    const kernels::AttentionShape dense_shape{B, H, N, d, scale};
    const bool masked = kc::mita_flash_supported(s);
    const int64_t ws_size =
        std::max({masked ? kc::mita_flash_workspace(s) : 0, kc::mita_expert_backward_workspace(s, true),
                  kc::mita_expert_backward_workspace(s, false), kc::flash_attention_backward_workspace(dense_shape)});
    Tensor ws = Tensor::empty({ws_size}, DType::f32, kGpu);
    auto expert_fwd = [&] {
      kc::mita_joint_forward_mma(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), view_of(r),
                                 view_of(vh), ra, s, nullptr);
    };
    auto expert_bwd = [&](bool det) {
      kc::mita_expert_backward(view_of(dq), view_of(dk), view_of(dv), dr.data<float>(), dvh.data<float>(),
                               view_of(dout), view_of(q), view_of(k), view_of(v), view_of(r), view_of(vh), view_of(out),
                               lse.data<float>(), ra, s, det, ws.data<float>(), nullptr);
    };
    auto dense_fwd = [&] {
      kc::flash_attention_forward(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), dense_shape,
                                  nullptr);
    };
    auto dense_bwd = [&] {
      kc::flash_attention_backward(view_of(dq), view_of(dk), view_of(dv), view_of(dout), view_of(q), view_of(k),
                                   view_of(v), view_of(out), lse.data<float>(), ws.data<float>(), dense_shape, nullptr);
    };
    const double e_f = mean_ms(expert_fwd), e_fb = mean_ms([&] { expert_fwd(), expert_bwd(false); });
    const double e_fb_det = mean_ms([&] { expert_fwd(), expert_bwd(true); });
    const double d_f = mean_ms(dense_fwd), d_fb = mean_ms([&] { dense_fwd(), dense_bwd(); });
    double m_f = -1, m_fb = -1;
    if (masked) {
      auto masked_fwd = [&] {
        kc::mita_flash_forward(view_of(out), lse.data<float>(), view_of(q), view_of(k), view_of(v), view_of(r),
                               view_of(vh), ra, s, ws.data<float>(), nullptr);
      };
      m_f = mean_ms(masked_fwd);
      m_fb = mean_ms([&] {
        masked_fwd();
        kc::mita_flash_backward(view_of(dq), view_of(dk), view_of(dv), dr.data<float>(), dvh.data<float>(),
                                view_of(dout), view_of(q), view_of(k), view_of(v), view_of(r), view_of(vh),
                                view_of(out), lse.data<float>(), ra, s, ws.data<float>(), nullptr);
      });
    }
    std::printf(
        "joint_timing %s B=%ld H=%ld N=%ld d=%ld m=%ld k=%ld | ms fwd / fwd+bwd: expert %.3f / %.3f (det %.3f)"
        " | masked %.3f / %.3f | dense flash %.3f / %.3f | dense/expert fwd+bwd %.2fx\n",
        c.name, static_cast<long>(B), static_cast<long>(H), static_cast<long>(N), static_cast<long>(d),
        static_cast<long>(m), static_cast<long>(kk), e_f, e_fb, e_fb_det, m_f, m_fb, d_f, d_fb, d_fb / e_fb);
  }
}

}  // namespace
}  // namespace vt::test
