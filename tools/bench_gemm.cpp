// TFLOP/s of the cuBLASLt GEMM (kernels/cuda/blas.h) on the DeiT-S shapes at a given batch (default 256:
// M = 256·197 tokens), bf16 in/out with f32 accumulation; one line per shape. Forward Linear layers are
// x [M, K]·W [N, K]^T (B transposed); dgrad is dy·W (no transposes), wgrad dy^T·x (A transposed, K = M).
//   bench_gemm [--batch 256] [--iters 20] [--f32]
#include <CLI/CLI.hpp>
#include <cstdio>

#if VT_WITH_CUDA
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/dtype.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/check.h"

namespace {

using vt::kernels::cuda::GemmEpilogue;

struct Shape {
  const char* name;
  int64_t batch, M, N, K;
  bool ta, tb;
  GemmEpilogue epi;
};

}  // namespace
#endif

int main(int argc, char** argv) {
  CLI::App app{"cuBLASLt GEMM throughput on DeiT-S shapes"};
  int batch = 256, iters = 20;
  bool f32 = false;
  app.add_option("--batch", batch, "images (tokens = 197 per image)");
  app.add_option("--iters", iters, "timed iterations per shape");
  app.add_flag("--f32", f32, "f32 in/out instead of bf16");
  CLI11_PARSE(app, argc, argv);
#if !VT_WITH_CUDA
  std::printf("bench_gemm: built without CUDA\n");
  return 0;
#else
  const int64_t T = 197, D = 384, H = 6, hd = 64, F = 1536, M = int64_t(batch) * T, BH = int64_t(batch) * H;
  const Shape shapes[] = {
      {"qkv_fwd", 1, M, 3 * D, D, false, true, GemmEpilogue::bias},
      {"proj_fwd", 1, M, D, D, false, true, GemmEpilogue::bias},
      {"fc1_fwd_gelu", 1, M, F, D, false, true, GemmEpilogue::bias_gelu_tanh},
      {"fc2_fwd", 1, M, D, F, false, true, GemmEpilogue::bias},
      {"qkv_dgrad", 1, M, D, 3 * D, false, false, GemmEpilogue::none},
      {"fc1_dgrad", 1, M, D, F, false, false, GemmEpilogue::none},
      {"fc2_dgrad", 1, M, F, D, false, false, GemmEpilogue::none},
      {"qkv_wgrad", 1, 3 * D, D, M, true, false, GemmEpilogue::none},
      {"fc1_wgrad", 1, F, D, M, true, false, GemmEpilogue::none},
      {"fc2_wgrad", 1, D, F, M, true, false, GemmEpilogue::none},
      {"attn_qk", BH, T, T, hd, false, true, GemmEpilogue::none},
      {"attn_av", BH, T, hd, T, false, false, GemmEpilogue::none},
  };
  const vt::DType in = f32 ? vt::DType::f32 : vt::DType::bf16, out = in;
  const size_t esz = vt::dtype_size(in);

  size_t max_elems = 0;
  for (const auto& s : shapes)
    max_elems =
        std::max({max_elems, size_t(s.batch * s.M * s.K), size_t(s.batch * s.K * s.N), size_t(s.batch * s.M * s.N)});
  // Random values (zeros run unrealistically fast): one host buffer, uploaded to A, B and C.
  std::vector<uint16_t> host_bf16;
  std::vector<float> host_f32;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  if (f32) {
    host_f32.resize(max_elems);
    for (auto& x : host_f32) x = dist(gen);
  } else {
    host_bf16.resize(max_elems);
    for (auto& x : host_bf16) x = vt::bf16(dist(gen)).bits;
  }
  const void* host = f32 ? static_cast<const void*>(host_f32.data()) : host_bf16.data();
  void *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  for (void** p : {&a, &b, &c}) {
    VT_CUDA_CHECK(cudaMalloc(p, max_elems * esz));
    VT_CUDA_CHECK(cudaMemcpy(*p, host, max_elems * esz, cudaMemcpyHostToDevice));
  }
  VT_CUDA_CHECK(cudaMalloc(&bias, size_t(F) * 4 * esz));
  VT_CUDA_CHECK(cudaMemcpy(bias, host, size_t(F) * 4 * esz, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  VT_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  VT_CUDA_CHECK(cudaEventCreate(&start));
  VT_CUDA_CHECK(cudaEventCreate(&stop));

  std::printf("# bench_gemm %s, batch %d (M = %lld tokens), %d iterations\n", vt::dtype_name(in), batch,
              static_cast<long long>(M), iters);
  for (const auto& s : shapes) {
    vt::kernels::cuda::GemmLtArgs g;
    g.in_dtype = in, g.out_dtype = out;
    g.batch = s.batch, g.M = s.M, g.N = s.N, g.K = s.K;
    g.A = {a, s.ta, s.ta ? s.M : s.K, s.M * s.K};
    g.B = {b, s.tb, s.tb ? s.K : s.N, s.K * s.N};
    g.C = c, g.ldc = s.N, g.stride_c = s.M * s.N;
    g.epilogue = s.epi;
    g.bias = bias;
    g.stream = stream;
    for (int i = 0; i < 3; ++i) vt::kernels::cuda::gemm_lt(g);
    VT_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) vt::kernels::cuda::gemm_lt(g);
    VT_CUDA_CHECK(cudaEventRecord(stop, stream));
    VT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    VT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double per = ms / iters;
    const double tflops = 2.0 * double(s.batch) * double(s.M) * double(s.N) * double(s.K) / (per * 1e-3) / 1e12;
    std::printf("%-14s batch=%-5lld M=%-6lld N=%-5lld K=%-6lld %s%s  %8.3f ms  %7.1f TFLOP/s\n", s.name,
                static_cast<long long>(s.batch), static_cast<long long>(s.M), static_cast<long long>(s.N),
                static_cast<long long>(s.K), s.ta ? "T" : "N", s.tb ? "T" : "N", per, tflops);
  }
  for (void* p : {a, b, c, bias}) VT_CUDA_CHECK(cudaFree(p));
  VT_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
#endif
}
