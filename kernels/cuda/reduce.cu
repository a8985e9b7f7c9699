// CUDA reductions over [outer, R, inner] (see reduce.h).
// Sum: inner == 1 reduces rows with one 256-thread block per row chunk; inner > 1 reduces columns with 32x8
// blocks (32 adjacent columns read coalesced, 8 row lanes). When outer·inner alone gives too few blocks to fill
// the device (a bias gradient: [B·N, C] → [C]), R is cut into `splits` chunks whose partial sums go to the
// workspace, and a second pass of the same kernel sums the chunks. The plan depends only on the sizes, so the
// result is deterministic. Max: one warp per row (inner == 1) or one thread per column walking R in order.
#include "kernels/cuda/reduce.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {

using device::acc_t;
using device::from_acc;
using device::to_acc;

namespace {

constexpr int kRowBlock = 256;
constexpr int kColWidth = 32, kColLanes = 8;
constexpr int64_t kTargetBlocks = 1024;           // ~8 per SM on an H200; constant so plans never vary
constexpr int64_t kMinRowChunk = kRowBlock * 16;  // elements per block when a row is split
constexpr int64_t kMinColChunk = kColLanes * 32;  // rows per block when columns are split

struct SumPlan {
  bool rows;       // inner == 1
  int64_t splits;  // chunks of R (1: one pass)
  int64_t chunk;   // rows of R per chunk
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

SumPlan plan_sum(int64_t outer, int64_t R, int64_t inner) {
  SumPlan p{inner == 1, 1, R};
  const int64_t base = p.rows ? outer : outer * ceil_div(inner, kColWidth);
  const int64_t max_splits = std::max<int64_t>(1, R / (p.rows ? kMinRowChunk : kMinColChunk));
  p.splits = std::clamp<int64_t>(ceil_div(kTargetBlocks, std::max<int64_t>(base, 1)), 1, max_splits);
  p.chunk = ceil_div(R, p.splits);
  return p;
}

template <typename C>
__device__ C block_sum(C v, C* shared) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  C total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < int(blockDim.x / 32); ++w) total += shared[w];
  return total;  // valid in thread 0
}

// Block b sums chunk (b % splits) of row (b / splits) and writes out[b] = scale · sum.
template <typename TI, typename TO, typename C>
__global__ void sum_rows_kernel(TO* out, const TI* in, int64_t R, int64_t splits, int64_t chunk, C scale) {
  __shared__ C shared[kRowBlock / 32];
  const int64_t o = blockIdx.x / splits, z = blockIdx.x % splits;
  const int64_t r0 = z * chunk, r1 = min(R, r0 + chunk);
  const TI* row = in + o * R;
  C acc = 0;
  for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) acc += to_acc(row[r]);
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = from_acc<TO>(acc * scale);
}

// Block (o, column block, chunk z) writes out[(z·outer + o)·inner + i] = scale · Σ_{r in chunk z} in[o, r, i].
template <typename TI, typename TO, typename C>
__global__ void sum_cols_kernel(TO* out, const TI* in, int64_t outer, int64_t R, int64_t inner, int64_t splits,
                                int64_t chunk, C scale) {
  __shared__ C shared[kColLanes][kColWidth + 1];
  const int64_t col_blocks = (inner + kColWidth - 1) / kColWidth;
  int64_t b = blockIdx.x;
  const int64_t z = b % splits;
  b /= splits;
  const int64_t o = b / col_blocks;
  const int64_t i = (b % col_blocks) * kColWidth + threadIdx.x;
  const int64_t r0 = z * chunk, r1 = min(R, r0 + chunk);
  C acc = 0;
  if (i < inner)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColLanes) acc += to_acc(in[(o * R + r) * inner + i]);
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && i < inner) {
    C total = 0;
    for (int l = 0; l < kColLanes; ++l) total += shared[l][threadIdx.x];
    out[(z * outer + o) * inner + i] = from_acc<TO>(total * scale);
  }
}

template <typename TI, typename TO, typename C>
void launch_sum(TO* out, const TI* in, int64_t outer, int64_t R, int64_t inner, int64_t splits, int64_t chunk, C scale,
                cudaStream_t stream) {
  if (inner == 1) {
    sum_rows_kernel<<<static_cast<unsigned>(outer * splits), kRowBlock, 0, stream>>>(out, in, R, splits, chunk, scale);
  } else {
    const int64_t blocks = outer * ceil_div(inner, kColWidth) * splits;
    sum_cols_kernel<<<static_cast<unsigned>(blocks), dim3(kColWidth, kColLanes), 0, stream>>>(out, in, outer, R, inner,
                                                                                              splits, chunk, scale);
  }
  VT_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
__global__ void max_rows_kernel(T* values, int64_t* indices, const T* in, int64_t outer, int64_t R) {
  const int64_t o = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (o >= outer) return;  // whole warps leave together
  const T* row = in + o * R;
  using C = acc_t<T>;
  C best = 0;
  int64_t arg = -1;
  for (int64_t r = lane; r < R; r += 32) {  // increasing r: strict > keeps the first arg-max of this lane
    const C v = to_acc(row[r]);
    if (arg < 0 || v > best) best = v, arg = r;
  }
  for (int off = 16; off > 0; off >>= 1) {
    const C ov = __shfl_down_sync(0xffffffffu, best, off);
    const int64_t oa = __shfl_down_sync(0xffffffffu, arg, off);
    if (oa >= 0 && (arg < 0 || ov > best || (ov == best && oa < arg))) best = ov, arg = oa;
  }
  if (lane == 0) {
    values[o] = row[arg];
    indices[o] = arg;
  }
}

template <typename T>
__global__ void max_cols_kernel(T* values, int64_t* indices, const T* in, int64_t outer, int64_t R, int64_t inner) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < outer * inner; t += stride) {
    const T* col = in + (t / inner) * R * inner + t % inner;
    using C = acc_t<T>;
    C best = to_acc(col[0]);
    int64_t arg = 0;
    for (int64_t r = 1; r < R; ++r) {
      const C v = to_acc(col[r * inner]);
      if (v > best) best = v, arg = r;
    }
    values[t] = col[arg * inner];
    indices[t] = arg;
  }
}

template <typename T>
__global__ void max_bwd_kernel(T* dx, const T* dy, const int64_t* indices, int64_t outer, int64_t R, int64_t inner) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < outer * inner; t += stride)
    dx[((t / inner) * R + indices[t]) * inner + t % inner] = dy[t];
}

}  // namespace

int64_t sum_workspace_size(int64_t outer, int64_t R, int64_t inner) {
  if (outer * inner == 0) return 0;
  SumPlan p = plan_sum(outer, R, inner);
  return p.splits > 1 ? outer * inner * p.splits : 0;
}

void sum_forward(DType dtype, void* out, const void* in, int64_t outer, int64_t R, int64_t inner, double scale,
                 void* workspace, cudaStream_t stream) {
  if (outer * inner == 0) return;
  const SumPlan p = plan_sum(outer, R, inner);
  VT_CHECK(p.splits == 1 || workspace != nullptr, "[sum] CUDA sum of ", outer, "x", R, "x", inner,
           " needs a workspace");
  device::dispatch_float(dtype, "sum", [&](auto t) {
    using T = decltype(t);
    using C = acc_t<T>;
    auto* po = static_cast<T*>(out);
    auto* pi = static_cast<const T*>(in);
    if (p.splits == 1) {
      launch_sum(po, pi, outer, R, inner, 1, R, C(scale), stream);
      return;
    }
    auto* ws = static_cast<C*>(workspace);
    launch_sum(ws, pi, outer, R, inner, p.splits, p.chunk, C(1), stream);
    // Partials: [outer, splits] for rows, [splits, outer·inner] for columns.
    if (p.rows) launch_sum(po, ws, outer, p.splits, int64_t(1), int64_t(1), p.splits, C(scale), stream);
    else launch_sum(po, ws, int64_t(1), p.splits, outer * inner, int64_t(1), p.splits, C(scale), stream);
  });
}

void max_forward(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t R, int64_t inner,
                 cudaStream_t stream) {
  VT_CHECK(R > 0, "[max] cannot reduce an empty dim");
  if (outer * inner == 0) return;
  device::dispatch_float(dtype, "max", [&](auto t) {
    using T = decltype(t);
    auto* pv = static_cast<T*>(values);
    auto* pi = static_cast<const T*>(in);
    if (inner == 1) {
      constexpr int kWarps = 8;
      max_rows_kernel<<<static_cast<unsigned>(ceil_div(outer, kWarps)), 32 * kWarps, 0, stream>>>(pv, indices, pi,
                                                                                                  outer, R);
    } else {
      max_cols_kernel<<<device::grid_for(outer * inner, 256), 256, 0, stream>>>(pv, indices, pi, outer, R, inner);
    }
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

void max_backward(DType dtype, void* dx, const void* dy, const int64_t* indices, int64_t outer, int64_t R,
                  int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0) return;
  device::dispatch_float(dtype, "max_backward", [&](auto t) {
    using T = decltype(t);
    max_bwd_kernel<<<device::grid_for(outer * inner, 256), 256, 0, stream>>>(
        static_cast<T*>(dx), static_cast<const T*>(dy), indices, outer, R, inner);
    VT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace vt::kernels::cuda
