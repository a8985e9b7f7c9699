// cuBLASLt GEMM: validation, descriptors, the algorithm choice (heuristic candidates timed on first use) cached
// per key, the per-device context. The row-major -> column-major mapping is explained at the top of blas.h.
#include "kernels/cuda/blas.h"
#include "kernels/cuda/blas_context.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/bias_grad.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/event.h"

namespace vt::kernels::cuda {

// ---- context ----
BlasContext::BlasContext(int device) : device_(device) { VT_CUBLAS_CHECK(cublasLtCreate(&handle_)); }

BlasContext& BlasContext::get(int device) {
  static std::mutex mutex;
  static std::map<int, BlasContext*> contexts;  // leaked on purpose: see the header
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device);
  if (it != contexts.end()) return *it->second;
  auto* ctx = new BlasContext(device);
  contexts.emplace(device, ctx);
  return *ctx;
}

void* BlasContext::workspace(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = workspaces_.find(stream);
  if (it != workspaces_.end()) return it->second;
  void* ptr = cuda_allocator(device_).allocate(kWorkspaceBytes, to_stream(stream));
  workspaces_.emplace(stream, ptr);
  return ptr;
}

namespace {

// ---- small RAII holders for the cuBLASLt descriptors ----
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  MatmulDesc() { VT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(desc); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attr, const T& value) {
    VT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(T)));
  }
};

struct Layout {
  cublasLtMatrixLayout_t desc = nullptr;
  Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
    VT_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&desc, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      VT_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(desc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      VT_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(desc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(desc); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

struct Preference {
  cublasLtMatmulPreference_t desc = nullptr;
  Preference() { VT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&desc)); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(desc); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <typename T>
  void set(cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
    VT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(desc, attr, &value, sizeof(T)));
  }
};

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    default: VT_FAIL("[gemm_lt] unsupported dtype ", dtype_name(t));
  }
}

// Largest power of two (<= 256, cuBLASLt's default requirement) dividing every batch item's address.
uint32_t alignment(const void* ptr, int64_t stride, int64_t batch, size_t elem) {
  uint64_t v = reinterpret_cast<uintptr_t>(ptr);
  if (batch > 1) v |= static_cast<uint64_t>(stride) * elem;
  uint32_t a = 256;
  while (a > 1 && (v % a) != 0) a >>= 1;
  return a;
}

using Key = std::array<int64_t, 21>;
std::mutex g_cache_mutex;
std::map<Key, cublasLtMatmulAlgo_t> g_algo_cache;
size_t g_autotuned_keys = 0;  // entries of g_algo_cache chosen by timing

// ---- autotuning: the heuristic's candidates timed on the real operands, once per key ----
constexpr int kMaxCandidates = 8;
constexpr int kTimedRuns = 3;  // after one untimed run; the fastest of them counts

// Read on every new key (not once), so a test or a benchmark can switch it between shapes.
bool autotune_enabled() {
  const char* value = std::getenv("VT_GEMM_AUTOTUNE");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

// Never time work that a CUDA graph is capturing: the launches would become part of the graph, and the host
// cannot wait for events there. A query that fails (the legacy stream while another stream captures) counts as
// capturing.
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

// Which candidates timing may pick. Determinism: every cuBLASLt reduction scheme is run-to-run deterministic for a
// given algorithm, since none adds split-K partial sums with float atomics (NONE: no split; INPLACE: the parts
// are added into D one after another, ordered by counters in the workspace; COMPUTE_TYPE / OUTPUT_TYPE: the parts
// go to the workspace and a separate kernel sums them in a fixed order), and the chosen algorithm is fixed per key
// for the life of the process. So the rule is about precision: INPLACE and OUTPUT_TYPE hold the partial sums in
// the output dtype, i.e. rounded to bf16 for a bf16 output, against the f32 accumulation promised in blas.h; they
// may be picked for f32 outputs only. An unknown scheme is never picked.
bool eligible(const cublasLtMatmulHeuristicResult_t& result, DType out_dtype) {
  if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > BlasContext::kWorkspaceBytes) return false;
  uint32_t scheme = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme),
                                           &written) != CUBLAS_STATUS_SUCCESS)
    return false;
  if (scheme == CUBLASLT_REDUCTION_SCHEME_NONE || scheme == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) return true;
  return out_dtype == DType::f32 &&
         (scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE || scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
}

// Device bytes from the caching allocator for the scope (stream-ordered: freeing before the queued work that uses
// them has run is safe).
class ScratchBytes {
 public:
  ScratchBytes(int device, size_t nbytes, cudaStream_t stream)
      : device_(device), ptr_(cuda_allocator(device).allocate(nbytes, to_stream(stream))) {}
  ~ScratchBytes() { cuda_allocator(device_).free(ptr_); }
  ScratchBytes(const ScratchBytes&) = delete;
  ScratchBytes& operator=(const ScratchBytes&) = delete;
  void* get() const { return ptr_; }

 private:
  int device_;
  void* ptr_;
};

// Times each candidate with `matmul(algo)` on `stream` (one untimed run, then kTimedRuns timed ones, all queued
// before the host waits once) and returns the index of the fastest, or -1 when none ran (NOT_SUPPORTED: skipped).
template <typename Matmul>
int fastest(const std::vector<cublasLtMatmulHeuristicResult_t>& candidates, cudaStream_t stream, Matmul&& matmul) {
  std::vector<CudaEvent> events;  // kTimedRuns + 1 per candidate that ran
  std::vector<int> ran;
  events.reserve(candidates.size() * (kTimedRuns + 1));
  for (size_t i = 0; i < candidates.size(); ++i) {
    const cublasStatus_t status = matmul(candidates[i].algo);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) continue;
    VT_CUBLAS_CHECK(status);
    events.emplace_back(true).record(stream);
    for (int r = 0; r < kTimedRuns; ++r) {
      VT_CUBLAS_CHECK(matmul(candidates[i].algo));
      events.emplace_back(true).record(stream);
    }
    ran.push_back(static_cast<int>(i));
  }
  int best = -1;
  float best_ms = std::numeric_limits<float>::infinity();
  for (size_t c = 0; c < ran.size(); ++c) {
    const CudaEvent* e = &events[c * (kTimedRuns + 1)];
    float ms = std::numeric_limits<float>::infinity();
    for (int r = 0; r < kTimedRuns; ++r) ms = std::min(ms, e[r + 1].elapsed_ms_since(e[r]));
    if (ms < best_ms) best_ms = ms, best = ran[c];
  }
  return best;
}

void validate(const GemmLtArgs& g) {
  VT_CHECK(g.in_dtype == DType::f32 || g.in_dtype == DType::bf16, "[gemm_lt] inputs must be f32 or bf16, got ",
           dtype_name(g.in_dtype));
  VT_CHECK(g.out_dtype == DType::f32 || (g.in_dtype == DType::bf16 && g.out_dtype == DType::bf16),
           "[gemm_lt] unsupported dtypes: ", dtype_name(g.in_dtype), " inputs with ", dtype_name(g.out_dtype),
           " output (f32->f32, bf16->f32, bf16->bf16)");
  VT_CHECK(g.M >= 0 && g.N >= 0 && g.K >= 0 && g.batch >= 0, "[gemm_lt] negative size: batch=", g.batch, " M=", g.M,
           " N=", g.N, " K=", g.K);
  VT_CHECK(g.batch <= std::numeric_limits<int32_t>::max(), "[gemm_lt] batch ", g.batch, " exceeds int32");
  const int64_t a_cols = g.A.trans ? g.M : g.K, b_cols = g.B.trans ? g.K : g.N;
  VT_CHECK(g.A.ld >= std::max<int64_t>(1, a_cols), "[gemm_lt] lda=", g.A.ld, " < ", a_cols, " (A ",
           g.A.trans ? "transposed" : "not transposed", ", M=", g.M, " K=", g.K, ")");
  VT_CHECK(g.B.ld >= std::max<int64_t>(1, b_cols), "[gemm_lt] ldb=", g.B.ld, " < ", b_cols, " (B ",
           g.B.trans ? "transposed" : "not transposed", ", K=", g.K, " N=", g.N, ")");
  VT_CHECK(g.ldc >= std::max<int64_t>(1, g.N), "[gemm_lt] ldc=", g.ldc, " < N=", g.N);
  VT_CHECK(g.A.stride >= 0 && g.B.stride >= 0 && g.stride_c >= 0, "[gemm_lt] negative batch stride");
  const bool grad_epi = g.epilogue == GemmEpilogue::bias_grad_a || g.epilogue == GemmEpilogue::bias_grad_a_cublaslt;
  VT_CHECK(g.epilogue == GemmEpilogue::none || grad_epi || g.bias != nullptr,
           "[gemm_lt] the bias epilogue needs a bias");
  VT_CHECK(!grad_epi || (g.bias_grad != nullptr && g.batch <= 1 && g.alpha == 1.0f),
           "[gemm_lt] the bias-gradient epilogue needs bias_grad, batch 1 and alpha 1");
  VT_CHECK(g.batch <= 1 || g.stride_c > 0, "[gemm_lt] batch ", g.batch, " with stride_c 0 would overwrite C");
}

// Returns false when the heuristic found no algorithm for this key.
bool run(const GemmLtArgs& g, int device, BlasContext& ctx) {
  const cudaDataType_t in_t = cuda_type(g.in_dtype), out_t = cuda_type(g.out_dtype);
  const size_t in_sz = dtype_size(g.in_dtype), out_sz = dtype_size(g.out_dtype);

  // cuBLASLt's first operand is our B, its second our A; D = C^T [N, M] (see blas.h).
  const cublasOperation_t op_first = g.B.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.A.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  Layout first(in_t, g.B.trans ? g.K : g.N, g.B.trans ? g.N : g.K, g.B.ld, g.batch, g.B.stride);
  Layout second(in_t, g.A.trans ? g.M : g.K, g.A.trans ? g.K : g.M, g.A.ld, g.batch, g.A.stride);
  Layout out(out_t, g.N, g.M, g.ldc, g.batch, g.stride_c);

  MatmulDesc op;
  op.set(CUBLASLT_MATMUL_DESC_TRANSA, op_first);
  op.set(CUBLASLT_MATMUL_DESC_TRANSB, op_second);
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.epilogue == GemmEpilogue::bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (g.epilogue == GemmEpilogue::bias_gelu_tanh) epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  if (g.epilogue == GemmEpilogue::bias_grad_a_cublaslt) epi = CUBLASLT_EPILOGUE_BGRADB;  // cuBLASLt's B is our A
  op.set(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
  const void* bias_ptr =
      g.epilogue == GemmEpilogue::bias_grad_a_cublaslt ? static_cast<const void*>(g.bias_grad) : g.bias;
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr);

  const uint32_t al_a = alignment(g.B.data, g.B.stride, g.batch, in_sz);  // cuBLASLt's A is our B
  const uint32_t al_b = alignment(g.A.data, g.A.stride, g.batch, in_sz);
  const uint32_t al_c = alignment(g.C, g.stride_c, g.batch, out_sz);
  const uint32_t al_bias = bias_ptr ? alignment(bias_ptr, 0, 1, out_sz) : 256;

  const Key key = {device,
                   static_cast<int64_t>(g.in_dtype),
                   static_cast<int64_t>(g.out_dtype),
                   g.A.trans,
                   g.B.trans,
                   g.M,
                   g.N,
                   g.K,
                   g.A.ld,
                   g.B.ld,
                   g.ldc,
                   g.batch,
                   g.batch > 1 ? g.A.stride : 0,
                   g.batch > 1 ? g.B.stride : 0,
                   g.batch > 1 ? g.stride_c : 0,
                   static_cast<int64_t>(g.epilogue),
                   al_a,
                   al_b,
                   al_c,
                   al_bias,
                   g.beta != 0.0f};

  void* const workspace = ctx.workspace(g.stream);
  auto matmul = [&](const cublasLtMatmulAlgo_t& a, void* d) {
    return cublasLtMatmul(ctx.handle(), op.desc, &g.alpha, g.B.data, first.desc, g.A.data, second.desc, &g.beta, g.C,
                          out.desc, d, out.desc, &a, workspace, BlasContext::kWorkspaceBytes, g.stream);
  };

  cublasLtMatmulAlgo_t algo;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = g_algo_cache.find(key);
    if (it != g_algo_cache.end()) {
      algo = it->second;
      cached = true;
    }
  }
  if (!cached) {
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(BlasContext::kWorkspaceBytes));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_a);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_b);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_c);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_c);
    std::array<cublasLtMatmulHeuristicResult_t, kMaxCandidates> results;
    std::memset(results.data(), 0, sizeof(results));
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(ctx.handle(), op.desc, first.desc, second.desc, out.desc, out.desc, pref.desc,
                                       kMaxCandidates, results.data(), &found);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) return false;
    // An epilogue this cuBLASLt build rejects for the layout/dtypes: gemm_lt falls back to the plain GEMM.
    if (status != CUBLAS_STATUS_SUCCESS && g.epilogue == GemmEpilogue::bias_grad_a_cublaslt) return false;
    VT_CUBLAS_CHECK(status);
    algo = results[0].algo;

    // BGRADB writes its bias gradient (an output) through the bias pointer; it is only a benchmark peer, so it keeps
    // the heuristic's first choice instead of timing with a scratch gradient too.
    bool tuned = false;
    if (found > 1 && g.epilogue != GemmEpilogue::bias_grad_a_cublaslt && autotune_enabled() && !capturing(g.stream)) {
      std::vector<cublasLtMatmulHeuristicResult_t> candidates;
      for (int i = 0; i < found; ++i)
        if (eligible(results[i], g.out_dtype)) candidates.push_back(results[i]);
      if (candidates.size() > 1) {
        // beta != 0 reads C, so the timing runs write a scratch D of C's layout (cuBLASLt allows D != C with the
        // same descriptor); with beta = 0 C is write-only and the real run below overwrites it anyway.
        const size_t extent =
            static_cast<size_t>((std::max<int64_t>(g.batch, 1) - 1) * g.stride_c + (g.M - 1) * g.ldc + g.N);
        std::optional<ScratchBytes> scratch;
        if (g.beta != 0.0f) scratch.emplace(device, extent * out_sz, g.stream);
        void* const d = scratch ? scratch->get() : g.C;
        const int best = fastest(candidates, g.stream, [&](const cublasLtMatmulAlgo_t& a) { return matmul(a, d); });
        if (best >= 0) algo = candidates[static_cast<size_t>(best)].algo, tuned = true;
      }
    }
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    const auto [it, inserted] = g_algo_cache.emplace(key, algo);
    algo = it->second;  // another thread may have chosen first: one choice per key for the whole process
    if (inserted && tuned) ++g_autotuned_keys;
  }

  const cublasStatus_t status = matmul(algo, g.C);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED && g.epilogue == GemmEpilogue::bias_grad_a_cublaslt) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);  // forget it: the plain GEMM + row sums take over
    g_algo_cache.erase(key);
    return false;
  }
  VT_CUBLAS_CHECK(status);
  return true;
}

}  // namespace

void gemm_lt(const GemmLtArgs& args) {
  validate(args);
  const bool bias_grad =
      args.epilogue == GemmEpilogue::bias_grad_a || args.epilogue == GemmEpilogue::bias_grad_a_cublaslt;
  if (bias_grad && args.N == 0 && args.M > 0 && args.K > 0 && args.batch > 0) {
    const int64_t stride_m = args.A.trans ? 1 : args.A.ld, stride_k = args.A.trans ? args.A.ld : 1;
    return sum_rows_strided(args.bias_grad, args.out_dtype, args.A.data, args.in_dtype, args.M, args.K, stride_m,
                            stride_k, args.stream);
  }
  if (args.batch == 0 || args.M == 0 || args.N == 0) return;
  VT_CHECK(args.K > 0, "[gemm_lt] K = 0 is not supported (M=", args.M, " N=", args.N, ")");
  int device = 0;
  VT_CUDA_CHECK(cudaGetDevice(&device));
  BlasContext& ctx = BlasContext::get(device);
  if (bias_grad) {
    if (args.epilogue == GemmEpilogue::bias_grad_a_cublaslt && run(args, device, ctx)) return;
    // Plain GEMM, then the row sums of op(A) [M, K] (also where cuBLASLt has no fused kernel for the key).
    GemmLtArgs plain = args;
    plain.epilogue = GemmEpilogue::none;
    plain.bias_grad = nullptr;
    VT_CHECK(run(plain, device, ctx), "[gemm_lt] cuBLASLt found no algorithm for M=", args.M, " N=", args.N,
             " K=", args.K);
    const int64_t stride_m = args.A.trans ? 1 : args.A.ld, stride_k = args.A.trans ? args.A.ld : 1;
    sum_rows_strided(args.bias_grad, args.out_dtype, args.A.data, args.in_dtype, args.M, args.K, stride_m, stride_k,
                     args.stream);
    return;
  }
  if (run(args, device, ctx)) return;
  // No batched algorithm (e.g. for a broadcast operand with stride 0): one call per batch item.
  VT_CHECK(args.batch > 1, "[gemm_lt] cuBLASLt found no algorithm for ", dtype_name(args.in_dtype), "->",
           dtype_name(args.out_dtype), " M=", args.M, " N=", args.N, " K=", args.K, " transA=", args.A.trans,
           " transB=", args.B.trans, " lda=", args.A.ld, " ldb=", args.B.ld, " ldc=", args.ldc);
  const size_t in_sz = dtype_size(args.in_dtype), out_sz = dtype_size(args.out_dtype);
  for (int64_t b = 0; b < args.batch; ++b) {
    GemmLtArgs one = args;
    one.batch = 1;
    one.A.data = static_cast<const char*>(args.A.data) + b * args.A.stride * in_sz;
    one.B.data = static_cast<const char*>(args.B.data) + b * args.B.stride * in_sz;
    one.C = static_cast<char*>(args.C) + b * args.stride_c * out_sz;
    VT_CHECK(run(one, device, ctx), "[gemm_lt] cuBLASLt found no algorithm for M=", args.M, " N=", args.N,
             " K=", args.K);
  }
}

size_t gemm_lt_cache_size() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_algo_cache.size();
}

size_t gemm_lt_autotuned_count() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_autotuned_keys;
}

}  // namespace vt::kernels::cuda
