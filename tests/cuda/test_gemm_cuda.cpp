// cuBLASLt GEMM (kernels/cuda/blas.h) against an element-by-element f64 loop written here, with the CPU GEMM
// (kernels/cpu/gemm_batched, f32) checked against the same reference and tolerance. Covers the four transpose
// combinations, padded leading dimensions, strided and broadcast (stride 0) batches, alpha/beta, the bias and
// bias+GELU(tanh) epilogues, f32 and bf16 inputs. GPU tests skip with the reason when no CUDA device can be used;
// the argument checks run everywhere (they fail before any CUDA call).
//
// Tolerances. f32 (and bf16 inputs with f32 output: a bf16·bf16 product is exact in f32, 8+8 significant bits,
// so only the f32 accumulation errs): a sum of K products in f32 errs by at most ~K·u·Σ|a·b| (u = 2^-24,
// any summation order); we allow (K + 4)·u·S with S = |alpha|·Σ|a·b| + |beta·C0| + |bias|, a wrong index or
// operand is off by O(S/√K) or more. GELU: its slope is below 1.13, so the pre-activation tolerance carries
// over, plus 3e-4·|x| for the epilogue's own tanh evaluation (in case a fast hardware tanh is used). Because the
// erf GELU differs from the tanh form by up to ~5e-4, we also require the result to sit closer to the tanh
// reference than to the erf one. bf16 output: plain = the f64 result rounded to bf16 (inputs already bf16), and
// we require max|ours − ref| ≤ 2·max|plain − ref| + f32 tolerance, and the same for the mean error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"

namespace vt::test {
namespace {

using kernels::cuda::GemmEpilogue;
using kernels::cuda::GemmLtArgs;

std::string no_device_reason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status != cudaSuccess) return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  return "cudaGetDeviceCount() found " + std::to_string(count) + " devices";
}

class DeviceBytes {
 public:
  explicit DeviceBytes(size_t n) : n_(n) {
    if (n_ > 0) VT_CUDA_CHECK(cudaMalloc(&ptr_, n_));
  }
  ~DeviceBytes() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* get() const { return ptr_; }
  void upload(const void* h) const { VT_CUDA_CHECK(cudaMemcpy(ptr_, h, n_, cudaMemcpyHostToDevice)); }
  void download(void* h) const { VT_CUDA_CHECK(cudaMemcpy(h, ptr_, n_, cudaMemcpyDeviceToHost)); }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

struct Case {
  std::string name;
  DType in = DType::f32, out = DType::f32;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
  float alpha = 1.0f, beta = 0.0f;
  GemmEpilogue epi = GemmEpilogue::none;
  int64_t pad = 0;        // extra columns in every leading dimension
  int64_t gap = 0;        // extra elements between batch items
  bool shared_b = false;  // B stride 0 (one weight for the whole batch)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// Values representable in the storage dtype (bf16-rounded when it is bf16), as floats.
std::vector<float> random_values(size_t n, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dtype == DType::bf16 ? float(bf16(dist(gen))) : dist(gen);
  return v;
}

void upload_as(const DeviceBytes& d, const std::vector<float>& h, DType dtype) {
  if (dtype == DType::f32) return d.upload(h.data());
  std::vector<bf16> b(h.size());
  for (size_t i = 0; i < h.size(); ++i) b[i] = bf16(h[i]);
  d.upload(b.data());
}

std::vector<float> download_as(const DeviceBytes& d, size_t n, DType dtype) {
  std::vector<float> h(n);
  if (dtype == DType::f32) {
    d.download(h.data());
  } else {
    std::vector<bf16> b(n);
    d.download(b.data());
    for (size_t i = 0; i < n; ++i) h[i] = float(b[i]);
  }
  return h;
}

class GemmCuda : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!kernels::cuda::device_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  }
};

TEST_P(GemmCuda, MatchesF64Reference) {
  const Case& c = GetParam();
  const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
  const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
  const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
  const int64_t sa = a_rows * lda + c.gap, sb = c.shared_b ? 0 : b_rows * ldb + c.gap, sc = c.M * ldc + c.gap;
  const size_t na = size_t(sa * c.batch), nb = size_t(c.shared_b ? b_rows * ldb : sb * c.batch);
  const size_t nc = size_t(sc * c.batch);

  const auto A = random_values(na, c.in, 11u + uint32_t(c.M));
  const auto B = random_values(nb, c.in, 23u + uint32_t(c.N));
  const auto C0 = random_values(nc, c.out, 37u + uint32_t(c.K));
  const auto bias = random_values(size_t(c.N), c.out, 41u);
  const bool has_bias = c.epi != GemmEpilogue::none, gelu = c.epi == GemmEpilogue::bias_gelu_tanh;

  const size_t in_sz = dtype_size(c.in), out_sz = dtype_size(c.out);
  DeviceBytes dA(na * in_sz), dB(nb * in_sz), dC(nc * out_sz), dbias(size_t(c.N) * out_sz);
  upload_as(dA, A, c.in);
  upload_as(dB, B, c.in);
  upload_as(dC, C0, c.out);
  upload_as(dbias, bias, c.out);

  GemmLtArgs g;
  g.in_dtype = c.in;
  g.out_dtype = c.out;
  g.batch = c.batch;
  g.M = c.M, g.N = c.N, g.K = c.K;
  g.alpha = c.alpha, g.beta = c.beta;
  g.A = {dA.get(), c.ta, lda, sa};
  g.B = {dB.get(), c.tb, ldb, sb};
  g.C = dC.get(), g.ldc = ldc, g.stride_c = sc;
  g.epilogue = c.epi;
  g.bias = has_bias ? dbias.get() : nullptr;
  kernels::cuda::gemm_lt(g);
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto gpu = download_as(dC, nc, c.out);

  // CPU oracle (f32 OpenBLAS) on the same values; bias and GELU applied here.
  std::vector<float> cpu = C0;
  kernels::cpu::gemm_batched(DType::f32, c.batch, c.M, c.N, c.K, c.alpha, {A.data(), c.ta, lda, sa},
                             {B.data(), c.tb, ldb, sb}, c.beta, cpu.data(), ldc, sc);

  constexpr double u = 1.0 / (1 << 24);
  double worst = 0, err_tanh = 0, err_erf = 0, max_ours = 0, max_plain = 0, sum_ours = 0, sum_plain = 0, max_tol = 0;
  int64_t bad = 0;
  std::vector<double> arow(size_t(c.K)), brow(size_t(c.K));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t k = 0; k < c.K; ++k) arow[k] = A[b * sa + (c.ta ? k * lda + i : i * lda + k)];
      for (int64_t j = 0; j < c.N; ++j) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double p = arow[k] * B[b * sb + (c.tb ? j * ldb + k : k * ldb + j)];
          acc += p;
          mag += std::abs(p);
        }
        const size_t ci = size_t(b * sc + i * ldc + j);
        double x = c.alpha * acc + double(c.beta) * C0[ci] + (has_bias ? double(bias[j]) : 0.0);
        const double scale =
            std::abs(c.alpha) * mag + std::abs(double(c.beta) * C0[ci]) + (has_bias ? std::abs(double(bias[j])) : 0.0);
        double tol = double(c.K + 4) * u * scale + 1e-30;
        double cpu_v = cpu[ci] + (has_bias ? bias[j] : 0.0f);
        double ref = x;
        if (gelu) {
          ref = gelu_tanh(x);
          tol = 1.13 * tol + 3e-4 * std::abs(x);
          cpu_v = gelu_tanh(cpu_v);
          err_tanh = std::max(err_tanh, std::abs(gpu[ci] - ref));
          err_erf = std::max(err_erf, std::abs(gpu[ci] - gelu_erf(x)));
        }
        const double e = std::abs(gpu[ci] - ref);
        if (c.out == DType::bf16) {  // aggregate rule, checked below
          const double plain = std::abs(double(float(bf16(float(ref)))) - ref);
          max_ours = std::max(max_ours, e), max_plain = std::max(max_plain, plain);
          sum_ours += e, sum_plain += plain, max_tol = std::max(max_tol, tol);
          continue;
        }
        const double e_cpu = std::abs(cpu_v - ref);
        worst = std::max({worst, e / tol, e_cpu / tol});
        if ((e > tol || e_cpu > tol) && bad++ < 5)
          ADD_FAILURE() << c.name << " b=" << b << " i=" << i << " j=" << j << " gpu=" << gpu[ci] << " cpu=" << cpu_v
                        << " f64=" << ref << " tol=" << tol;
      }
    }
    // Padding and batch gaps are not written.
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = c.N; j < ldc; ++j) {
        const size_t ci = size_t(b * sc + i * ldc + j);
        if (gpu[ci] != C0[ci] && bad++ < 5) ADD_FAILURE() << c.name << " wrote padding at b=" << b << " i=" << i;
      }
  }
  EXPECT_EQ(bad, 0) << "elements out of tolerance";
  if (gelu && c.out == DType::f32) {  // bf16 rounding (~4e-3) would hide the ~5e-4 difference
    EXPECT_LT(err_tanh, err_erf) << "closer to the erf GELU than to the tanh GELU";
    std::printf("%s: max |err| vs tanh GELU %.3g, vs erf GELU %.3g\n", c.name.c_str(), err_tanh, err_erf);
  }
  if (c.out == DType::bf16) {
    const double n = double(c.batch * c.M * c.N);
    EXPECT_LE(max_ours, 2 * max_plain + max_tol) << c.name;
    EXPECT_LE(sum_ours / n, 2 * sum_plain / n + max_tol) << c.name;
    std::printf("%s: bf16 max err %.3g (plain %.3g), mean %.3g (plain %.3g)\n", c.name.c_str(), max_ours, max_plain,
                sum_ours / n, sum_plain / n);
  } else {
    std::printf("%s: max |err|/tol = %.3f\n", c.name.c_str(), worst);
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const int64_t shapes[][3] = {{197, 192, 64}, {1025, 384, 1152}, {7, 5, 3}};
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      Case c;
      c.M = s[0], c.N = s[1], c.K = s[2], c.ta = t & 1, c.tb = t & 2;
      c.name = "f32_" + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
               (c.ta ? "_T" : "_N") + (c.tb ? "T" : "N");
      v.push_back(c);
    }
  auto add = [&](std::string name, Case c) {
    c.name = std::move(name);
    v.push_back(c);
  };
  Case c;
  c.M = 197, c.N = 192, c.K = 64;
  c.tb = true;  // Linear forward: x [M, K]·W [N, K]^T
  // clang-format off
  add("f32_alpha_beta", [c] { auto d = c; d.alpha = -1.5f, d.beta = 0.5f; return d; }());
  add("f32_padded_ld", [c] { auto d = c; d.pad = 3; d.ta = true; return d; }());
  add("f32_batch3_strided", [c] { auto d = c; d.batch = 3, d.pad = 2, d.gap = 5; return d; }());
  add("f32_batch3_TN", [c] { auto d = c; d.batch = 3, d.ta = true, d.tb = false, d.gap = 7; return d; }());
  add("f32_batch3_shared_b", [c] { auto d = c; d.batch = 3, d.shared_b = true; return d; }());
  add("f32_bias", [c] { auto d = c; d.epi = GemmEpilogue::bias; return d; }());
  add("f32_bias_gelu_tanh", [c] { auto d = c; d.epi = GemmEpilogue::bias_gelu_tanh; return d; }());
  add("f32_bias_gelu_alpha_beta", [c] {
    auto d = c; d.epi = GemmEpilogue::bias_gelu_tanh, d.alpha = 0.75f, d.beta = -0.5f; return d; }());
  add("f32_bias_batch3", [c] { auto d = c; d.epi = GemmEpilogue::bias, d.batch = 3; return d; }());
  add("f32_bias_7x5x3", [] { Case d; d.M = 7, d.N = 5, d.K = 3, d.epi = GemmEpilogue::bias; return d; }());
  Case h = c;
  h.in = DType::bf16;
  add("bf16_f32_NT", h);
  add("bf16_f32_big_NN", [h] { auto d = h; d.M = 1025, d.N = 384, d.K = 1152, d.tb = false; return d; }());
  add("bf16_f32_bias_gelu", [h] { auto d = h; d.epi = GemmEpilogue::bias_gelu_tanh; return d; }());
  h.out = DType::bf16;
  add("bf16_bf16_NT", h);
  add("bf16_bf16_TN_batch3", [h] { auto d = h; d.ta = true, d.tb = false, d.batch = 3, d.gap = 8; return d; }());
  add("bf16_bf16_big_NT", [h] { auto d = h; d.M = 1025, d.N = 384, d.K = 1152; return d; }());
  add("bf16_bf16_bias", [h] { auto d = h; d.epi = GemmEpilogue::bias; return d; }());
  add("bf16_bf16_bias_gelu_beta", [h] { auto d = h; d.epi = GemmEpilogue::bias_gelu_tanh, d.beta = 1.0f; return d; }());
  add("bf16_bf16_7x5x3", [h] { auto d = h; d.M = 7, d.N = 5, d.K = 3; return d; }());
  // clang-format on
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmCuda, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(GemmCudaCache, SameShapeReusesAlgorithm) {
  if (!kernels::cuda::device_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  DeviceBytes a(33 * 17 * 4), b(17 * 9 * 4), out(33 * 9 * 4);
  GemmLtArgs g;
  g.M = 33, g.N = 9, g.K = 17;
  g.A = {a.get(), false, 17, 0};
  g.B = {b.get(), false, 9, 0};
  g.C = out.get(), g.ldc = 9;
  VT_CUDA_CHECK(cudaMemset(a.get(), 0, 33 * 17 * 4));
  VT_CUDA_CHECK(cudaMemset(b.get(), 0, 17 * 9 * 4));
  kernels::cuda::gemm_lt(g);
  const size_t entries = kernels::cuda::gemm_lt_cache_size();
  kernels::cuda::gemm_lt(g);
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(kernels::cuda::gemm_lt_cache_size(), entries);
  std::vector<float> h(33 * 9, 1.0f);
  out.download(h.data());
  for (float x : h) ASSERT_EQ(x, 0.0f);
}

// Validation runs before any CUDA call, so these run (and must pass) without a GPU too.
TEST(GemmLtArgsCheck, RejectsBadArguments) {
  GemmLtArgs g;
  g.M = 4, g.N = 3, g.K = 2;
  g.A = {nullptr, false, 2, 0};
  g.B = {nullptr, false, 3, 0};
  g.ldc = 3;
  auto expect_error = [&](GemmLtArgs bad, const char* what) {
    try {
      kernels::cuda::gemm_lt(bad);
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[gemm_lt]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(
      [g] {
        auto b = g;
        b.out_dtype = DType::bf16;
        return b;
      }(),
      "unsupported dtypes");
  expect_error(
      [g] {
        auto b = g;
        b.in_dtype = DType::f64;
        return b;
      }(),
      "f32 or bf16");
  expect_error(
      [g] {
        auto b = g;
        b.A.ld = 1;
        return b;
      }(),
      "lda=1");
  expect_error(
      [g] {
        auto b = g;
        b.B.ld = 2;
        return b;
      }(),
      "ldb=2");
  expect_error(
      [g] {
        auto b = g;
        b.ldc = 2;
        return b;
      }(),
      "ldc=2");
  expect_error(
      [g] {
        auto b = g;
        b.epilogue = GemmEpilogue::bias;
        return b;
      }(),
      "needs a bias");
  expect_error(
      [g] {
        auto b = g;
        b.batch = 2;
        return b;
      }(),
      "stride_c 0");
  // Empty problems return before touching the device.
  EXPECT_NO_THROW(kernels::cuda::gemm_lt([g] {
    auto b = g;
    b.M = 0;
    return b;
  }()));
}

}  // namespace
}  // namespace vt::test
