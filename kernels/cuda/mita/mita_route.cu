// MiTA routing on the GPU (see mita.h): score GEMMs, radix top-k per landmark, arg-max per query, stable
// grouping of the queries by expert. All on the stream; nothing is read back.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/blas.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"
#include "kernels/cuda/mita/mita.h"
#include "kernels/cuda/mita/mita_mma.h"
#include "kernels/cuda/mita/mita_topk.h"

namespace vt::kernels::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// Hands out 256-byte aligned pieces of a workspace; with a null workspace it only adds up their sizes.
class WorkspaceCursor {
 public:
  explicit WorkspaceCursor(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(int64_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += round_up(sizeof(T) * static_cast<size_t>(count));
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

/// experts[bh, n] = first argmax_j g[bh, j, n]; also the sort key (bh·m + expert) and the query index.
__global__ void argmax_experts_kernel(const float* __restrict__ g, int32_t* __restrict__ experts,
                                      int32_t* __restrict__ sort_keys, int32_t* __restrict__ sort_values, int64_t BH,
                                      int N, int m) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < BH * N;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t bh = t / N;
    const int n = static_cast<int>(t % N);
    const float* col = g + bh * m * N + n;
    float best = -INFINITY;
    int arg = 0;
    for (int j = 0; j < m; ++j) {
      const float v = col[static_cast<int64_t>(j) * N];
      if (v > best) best = v, arg = j;
    }
    experts[t] = arg;
    sort_keys[t] = static_cast<int32_t>(bh * m + arg);
    sort_values[t] = n;
  }
}

/// offsets[bh, j] = number of queries of (b, h) whose expert is < j, from the sorted keys.
__global__ void expert_offsets_kernel(const int32_t* __restrict__ sorted_keys, int32_t* __restrict__ offsets,
                                      int64_t BH, int N, int m) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < BH * (m + 1);
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t bh = t / (m + 1);
    const int32_t key = static_cast<int32_t>(bh * m + t % (m + 1));
    const int32_t* seg = sorted_keys + bh * N;
    int lo = 0, hi = N;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (seg[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    offsets[t] = lo;
  }
}

/// scores[b, h] [m, N] = r[b, h] · x[b, h]ᵀ in f32, one batched GEMM per head.
void landmark_scores(DType dtype, const AttentionView& r, const AttentionView& x, const MitaShape& s, float* scores,
                     cudaStream_t stream) {
  const size_t es = dtype_size(dtype);
  for (int64_t h = 0; h < s.H; ++h) {
    GemmLtArgs a;
    a.in_dtype = dtype;
    a.out_dtype = DType::f32;
    a.batch = s.B;
    a.M = s.m;
    a.N = s.N;
    a.K = s.d;
    a.A = {static_cast<const char*>(r.data) + h * r.head_stride * es, false, r.row_stride, r.batch_stride};
    a.B = {static_cast<const char*>(x.data) + h * x.head_stride * es, true, x.row_stride, x.batch_stride};
    a.C = scores + h * s.m * s.N;
    a.ldc = s.N;
    a.stride_c = s.H * s.m * s.N;
    a.stream = stream;
    gemm_lt(a);
  }
}

int end_bit_for(int64_t values) {
  int bits = 1;
  while ((int64_t{1} << bits) < values) ++bits;
  return bits;
}

struct RouteBuffers {
  float* scores;
  int32_t *keys_in, *keys_out, *values_in;
  void* sort_temp;
  size_t sort_bytes;
};

size_t sort_temp_bytes(int64_t items) {
  size_t bytes = 0;
  VT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<int>(items)));
  return bytes;
}

/// Splits the workspace: the f32 score matrix (when `scores`), then the sort buffers. Returns the bytes used.
size_t carve(void* workspace, const MitaShape& s, bool scores, RouteBuffers& b) {
  const int64_t BH = s.B * s.H, items = BH * s.N;
  WorkspaceCursor c(workspace);
  b.scores = scores ? c.take<float>(BH * s.m * s.N) : nullptr;
  b.keys_in = c.take<int32_t>(items);
  b.keys_out = c.take<int32_t>(items);
  b.values_in = c.take<int32_t>(items);
  b.sort_bytes = sort_temp_bytes(items);
  b.sort_temp = c.take<char>(static_cast<int64_t>(b.sort_bytes));
  return c.used();
}

/// Routing (the arg-max landmark of every query in r·qᵀ: on tensor cores without storing the scores, or from an
/// f32 GEMM into the score buffer) and grouping (a stable radix sort by (b, h, expert) keeps ascending n inside
/// each expert).
void experts_and_grouping(DType dtype, const AttentionView& q, const AttentionView& r, const MitaShape& s,
                          int32_t* experts, int32_t* order, int32_t* offsets, const RouteBuffers& buf,
                          cudaStream_t stream) {
  const int64_t BH = s.B * s.H, items = BH * s.N;
  const int N = static_cast<int>(s.N), m = static_cast<int>(s.m);
  if (dtype == DType::bf16 && mita_mma_usable(s, {&q, &r})) {
    mita_argmax_mma(q, r, s, experts, buf.keys_in, buf.values_in, stream);
  } else {
    landmark_scores(dtype, r, q, s, buf.scores, stream);
    argmax_experts_kernel<<<device::grid_for(items, 256), 256, 0, stream>>>(buf.scores, experts, buf.keys_in,
                                                                            buf.values_in, BH, N, m);
    VT_CUDA_CHECK(cudaGetLastError());
  }
  size_t bytes = buf.sort_bytes;
  VT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(buf.sort_temp, bytes, buf.keys_in, buf.keys_out, buf.values_in, order,
                                                static_cast<int>(items), 0, end_bit_for(BH * s.m), stream));
  expert_offsets_kernel<<<device::grid_for(BH * (s.m + 1), 256), 256, 0, stream>>>(buf.keys_out, offsets, BH, N, m);
  VT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool mita_supports_head_dim(int64_t d) { return d == 16 || d == 32 || d == 64 || d == 128; }

size_t mita_route_workspace_bytes(const MitaShape& s) {
  RouteBuffers b;
  return carve(nullptr, s, true, b);
}

void mita_route(DType dtype, const AttentionView& q, const AttentionView& k, const AttentionView& r, const MitaShape& s,
                int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets, void* workspace,
                cudaStream_t stream) {
  VT_CHECK(dtype == DType::f32 || dtype == DType::bf16, "[mita_route] CUDA kernel needs f32 or bf16, got ",
           dtype_name(dtype));
  VT_CHECK(
      s.N <= (int64_t{1} << 30) && s.B * s.H * s.N <= (int64_t{1} << 31) - 1 && s.B * s.H * s.m <= (int64_t{1} << 30),
      "[mita_route] sizes exceed the 32-bit index range: B·H·N = ", s.B * s.H * s.N);
  RouteBuffers buf;
  carve(workspace, s, true, buf);
  // Expert construction: the top-k keys of every landmark row of r·kᵀ.
  landmark_scores(dtype, r, k, s, buf.scores, stream);
  mita_topk_rows(buf.scores, expert_keys, s.B * s.H * s.m, static_cast<int>(s.N), static_cast<int>(s.k), stream);

  experts_and_grouping(dtype, q, r, s, experts, order, offsets, buf, stream);
}

namespace {
constexpr int kCandidateCap = 8192;

/// The candidate lists after the sort buffers, then the V̂ kernel's partial sums.
struct ValueRouteBuffers {
  RouteBuffers route;
  MitaCandidates cand;
  float* landmark = nullptr;
  float* samples = nullptr;  // [rows][kMitaSamples] scores against evenly spaced keys
};

size_t carve_values(void* workspace, const MitaShape& s, ValueRouteBuffers& b) {
  const size_t route = carve(workspace, s, false, b.route);
  WorkspaceCursor c(workspace ? static_cast<char*>(workspace) + route : nullptr);
  const int64_t rows = s.B * s.H * s.m;
  b.cand.cap = kCandidateCap;
  b.cand.threshold = c.take<uint32_t>(rows);
  b.cand.count = c.take<int>(rows);
  b.cand.bits = c.take<uint32_t>(rows * kCandidateCap);
  b.cand.index = c.take<int32_t>(rows * kCandidateCap);
  b.landmark = c.take<float>(mita_landmark_workspace(s));
  b.samples = c.take<float>(rows * kMitaSamples);
  return route + c.used();
}
}  // namespace

size_t mita_route_with_values_workspace_bytes(const MitaShape& s) {
  ValueRouteBuffers b;
  return carve_values(nullptr, s, b);
}

void mita_route_with_values(const AttentionView& q, const AttentionView& k, const AttentionView& v,
                            const AttentionView& r, const AttentionView& v_hat, const MitaShape& s,
                            int32_t* expert_keys, int32_t* experts, int32_t* order, int32_t* offsets, void* workspace,
                            cudaStream_t stream) {
  VT_CHECK(mita_mma_usable(s, {&q, &k, &v, &r, &v_hat}),
           "[mita_route] the one-pass inference routing needs bf16 "
           "operands with 16-byte aligned rows and head dim 32, 64 or 128");
  VT_CHECK(s.N <= (int64_t{1} << 30) && s.B * s.H * s.N <= (int64_t{1} << 31) - 1,
           "[mita_route] sizes exceed the 32-bit index range: B·H·N = ", s.B * s.H * s.N);
  ValueRouteBuffers buf;
  carve_values(workspace, s, buf);
  // Thresholds: scores against every (N / ns)-th key — a strided view of k, so one GEMM per head.
  VT_CHECK(s.N % kMitaSamples == 0, "[mita_route] the one-pass inference routing samples every N/", kMitaSamples,
           "-th key: N = ", s.N, " must be a multiple of ", kMitaSamples);
  AttentionView sampled = k;
  sampled.row_stride *= s.N / kMitaSamples;
  MitaShape ss = s;
  ss.N = kMitaSamples;
  landmark_scores(DType::bf16, r, sampled, ss, buf.samples, stream);
  mita_thresholds_from_samples(buf.samples, s.B * s.H * s.m, kMitaSamples, s, buf.cand, stream);
  VT_CUDA_CHECK(cudaMemsetAsync(buf.cand.count, 0, sizeof(int) * s.B * s.H * s.m, stream));
  mita_landmark_attention_forward(v_hat, r, k, v, s, buf.landmark, stream, &buf.cand);
  mita_topk_from_candidates(r, k, s, buf.cand, expert_keys, stream);
  experts_and_grouping(DType::bf16, q, r, s, experts, order, offsets, buf.route, stream);
}

}  // namespace vt::kernels::cuda
