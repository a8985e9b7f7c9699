// gemm_lt's algorithm autotuning (kernels/cuda/blas.h, "Algorithm choice"): the timing runs of a new key must not
// change what the caller sees. With beta = 1 the timing writes a scratch D (had it written C, C would hold
// several products added up); with the bias epilogue and beta = 0 it writes C, which the real run overwrites.
// Results are compared with the f64 CPU product of the same (bf16) inputs. Each case has a shape no other test
// uses, so its key is new and gets timed; VT_GEMM_AUTOTUNE is read for every new key, so setenv here takes effect.
//
// Tolerances as in test_matmul_cuda.cpp: f32 output: the error of an f32 sum of K ≈ 200 O(1) products (bf16·bf16
// is exact in f32) is ~√K·u relative, far below 1e-5·max|ref|, while a corrupted C is off by O(max|C0|); bf16
// output: expect_bf16_rule.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "cuda/device_test_util.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/stream.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

using kernels::cuda::GemmEpilogue;
using kernels::cuda::GemmLtArgs;

// Sets VT_GEMM_AUTOTUNE for the scope and restores the previous value.
class AutotuneEnv {
 public:
  explicit AutotuneEnv(const char* value) {
    if (const char* old = std::getenv("VT_GEMM_AUTOTUNE")) old_ = old;
    ::setenv("VT_GEMM_AUTOTUNE", value, 1);
  }
  ~AutotuneEnv() {
    if (old_) ::setenv("VT_GEMM_AUTOTUNE", old_->c_str(), 1);
    else ::unsetenv("VT_GEMM_AUTOTUNE");
  }
  AutotuneEnv(const AutotuneEnv&) = delete;
  AutotuneEnv& operator=(const AutotuneEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

struct Case {
  std::string name;
  DType out = DType::f32;
  int64_t M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;
};

// Runs C = alpha·A·Bᵀ + beta·C0 (+ bias) with bf16 A [M, K], B [N, K] (a Linear forward) on the GPU and checks it
// against the f64 product; returns the GPU result (on the CPU).
Tensor run_and_check(const Case& c, uint32_t seed) {
  const Tensor a = randn_cpu({c.M, c.K}, seed, DType::bf16), b = randn_cpu({c.N, c.K}, seed + 1, DType::bf16);
  const Tensor c0 = randn_cpu({c.M, c.N}, seed + 2, c.out), bias = randn_cpu({c.N}, seed + 3, c.out);
  const Tensor ad = a.to(kGpu), bd = b.to(kGpu), cd = c0.to(kGpu), biasd = bias.to(kGpu);
  GemmLtArgs g;
  g.in_dtype = DType::bf16;
  g.out_dtype = c.out;
  g.M = c.M, g.N = c.N, g.K = c.K;
  g.alpha = c.alpha, g.beta = c.beta;
  g.A = {ad.raw_data(), false, c.K, 0};
  g.B = {bd.raw_data(), true, c.K, 0};
  g.C = cd.raw_data(), g.ldc = c.N;
  if (c.bias) g.epilogue = GemmEpilogue::bias, g.bias = biasd.raw_data();
  g.stream = kernels::cuda::current_stream();
  kernels::cuda::gemm_lt(g);

  Tensor ref = ops::mul(ops::matmul(a.to(DType::f64), b.to(DType::f64).transpose(0, 1)), double(c.alpha));
  if (c.beta != 0.0f) ref = ops::add(ref, ops::mul(c0.to(DType::f64), double(c.beta)));
  if (c.bias) ref = ops::add(ref, bias.to(DType::f64));
  const Tensor out = cd.to(cpu());
  if (c.out == DType::f32) {
    EXPECT_LE(max_abs_diff(out, ref), 1e-5 * max_abs(ref)) << c.name;
  } else {
    // Added to a bf16 C, the plain way rounds twice: alpha·A·B to bf16, then the sum (on the H200 cuBLASLt does the
    // same, with or without timing: 2.2x the error of one rounding). A timing run leaking into C would add whole
    // products instead.
    Tensor plain = ref.to(DType::bf16);
    if (c.beta != 0.0f) {
      const Tensor product = ops::mul(ops::matmul(a.to(DType::f64), b.to(DType::f64).transpose(0, 1)), double(c.alpha));
      Tensor sum = ops::add(product.to(DType::bf16).to(DType::f64), ops::mul(c0.to(DType::f64), double(c.beta)));
      if (c.bias) sum = ops::add(sum, bias.to(DType::f64));
      plain = sum.to(DType::bf16);
    }
    expect_bf16_rule(out, plain, ref, c.name.c_str());
  }
  return out;
}

TEST(GemmAutotuneCuda, TimingRunsLeaveResultsUnchanged) {
  VT_REQUIRE_DEVICE();
  AutotuneEnv env("1");
  const size_t tuned_before = kernels::cuda::gemm_lt_autotuned_count();
  const Case cases[] = {
      {"bf16->f32 beta=1 (accumulate)", DType::f32, 301, 264, 208, 1.0f, 1.0f, false},
      {"bf16->bf16 beta=1 alpha=0.5", DType::bf16, 299, 264, 208, 0.5f, 1.0f, false},
      {"bf16->bf16 bias beta=0", DType::bf16, 303, 136, 200, 1.0f, 0.0f, true},
      {"bf16->f32 bias beta=1", DType::f32, 305, 136, 200, 1.0f, 1.0f, true},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    const size_t entries = kernels::cuda::gemm_lt_cache_size(), tuned = kernels::cuda::gemm_lt_autotuned_count();
    const Tensor first = run_and_check(c, seed);
    EXPECT_EQ(kernels::cuda::gemm_lt_cache_size(), entries + 1) << c.name << ": its key should be new";
    std::printf("%s: autotuned %s\n", c.name.c_str(), kernels::cuda::gemm_lt_autotuned_count() > tuned ? "yes" : "no");
    // The cached choice computes the same key the same way: bit-identical on a second call.
    const Tensor again = run_and_check(c, seed);
    EXPECT_EQ(max_abs_diff(first, again), 0.0) << c.name;
    seed += 10;
  }
  // Each of these shapes gets many heuristic candidates on an H200, so at least one key was timed.
  EXPECT_GT(kernels::cuda::gemm_lt_autotuned_count(), tuned_before);
}

TEST(GemmAutotuneCuda, OffKeepsHeuristicChoice) {
  VT_REQUIRE_DEVICE();
  AutotuneEnv env("0");
  const size_t entries = kernels::cuda::gemm_lt_cache_size(), tuned = kernels::cuda::gemm_lt_autotuned_count();
  run_and_check({"bf16->f32 beta=1, autotune off", DType::f32, 307, 264, 208, 1.0f, 1.0f, false}, 200);
  run_and_check({"bf16->bf16 beta=1 alpha=0.5, autotune off", DType::bf16, 297, 264, 208, 0.5f, 1.0f, false}, 210);
  EXPECT_EQ(kernels::cuda::gemm_lt_cache_size(), entries + 2);
  EXPECT_EQ(kernels::cuda::gemm_lt_autotuned_count(), tuned);
}

}  // namespace
}  // namespace vt::test
