// Flat-buffer optimizer kernels (see adamw.h): grid-stride loops over float4 packs; each pack lies inside one group
// because group ends are multiples of 4. Math in f32, as torch's fused AdamW; per-step values are read from device
// memory (adamw.h) so the update launches are the same at every step.
#include "kernels/cuda/adamw.h"

#include <algorithm>

#include "kernels/cuda/check.h"

namespace vt::kernels::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kNormBlocks = 1024;  // partial sums of global_grad_norm (== its workspace size)

int blocks_for(int64_t packs) {
  return static_cast<int>(std::clamp<int64_t>((packs + kBlock - 1) / kBlock, 1, kMaxBlocks));
}

__device__ __forceinline__ float group_decay(const FlatGroups& groups, int64_t i) {
  for (int k = 0; k < groups.count; ++k)
    if (i < groups.end[k]) return groups.weight_decay[k];
  return 0.0f;
}

// Sum over a block of kBlock threads, in a fixed order; the result is valid in thread 0.
__device__ double block_sum(double x) {
  __shared__ double warp_sums[kBlock / 32];
  for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = x;
  __syncthreads();
  x = threadIdx.x < kBlock / 32 ? warp_sums[threadIdx.x] : 0.0;
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
  return x;
}

// The global norm from grad_norm_partials' kNormBlocks sums, returned to every thread of a block of kBlock threads.
// The one place the partials are added up (grad_norm_from_partials and every block of a clipped update), so the
// order of additions and hence the bits are the same everywhere.
__device__ float block_norm_from_partials(const double* __restrict__ partials) {
  __shared__ float norm;
  double acc = 0.0;
  for (int i = threadIdx.x; i < kNormBlocks; i += kBlock) acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) norm = static_cast<float>(sqrt(acc));
  __syncthreads();
  return norm;
}

// The clip coefficient of an update block; block 0 also publishes the norm. Called by all threads of the block
// (clip.partials is uniform, so the barriers inside are too).
__device__ float block_clip_coef(const DeviceClip& clip) {
  if (!clip.partials) return 1.0f;
  const float norm = block_norm_from_partials(clip.partials);
  if (clip.norm && blockIdx.x == 0 && threadIdx.x == 0) *clip.norm = norm;
  const float coef = clip.max_norm / (norm + 1e-6f);
  return coef >= 1.0f ? 1.0f : coef;  // a NaN coefficient passes through, as torch's clamp
}

__device__ __forceinline__ void adamw_element(float& p, float g, float& m, float& v, float decay, const AdamWHyper& h,
                                              float step_size, float bias_correction2_sqrt) {
  m = h.beta1 * m + h.one_minus_beta1 * g;
  v = h.beta2 * v + h.one_minus_beta2 * g * g;
  const float denom = sqrtf(v) / bias_correction2_sqrt + h.eps;
  p = p * decay - step_size * m / denom;
}

// ModelEma's ops::mul_(ema, decay), ops::mul(p, 1 - decay), ops::add_: three roundings, kept apart (no FMA) so the
// fused EMA is bit-identical to the separate kernels.
__device__ __forceinline__ float ema_element(float e, float p, const FusedEma& ema) {
  return __fadd_rn(__fmul_rn(e, ema.decay), __fmul_rn(p, ema.one_minus_decay));
}

__device__ __forceinline__ void ema_pack(float4* __restrict__ ema4, int64_t i, const float4& p, const FusedEma& ema) {
  float4 e = ema4[i];
  e.x = ema_element(e.x, p.x, ema);
  e.y = ema_element(e.y, p.y, ema);
  e.z = ema_element(e.z, p.z, ema);
  e.w = ema_element(e.w, p.w, ema);
  ema4[i] = e;
}

__global__ void adamw_kernel(float4* __restrict__ param, const float4* __restrict__ grad, float4* __restrict__ m,
                             float4* __restrict__ v, int64_t packs, FlatGroups groups, AdamWHyper h, DeviceClip clip,
                             FusedEma ema) {
  const float coef = block_clip_coef(clip);
  const AdamWStepScalars s = *h.scalars;
  const float step_size = s.lr / s.bias_correction1;
  auto* ema4 = reinterpret_cast<float4*>(ema.ema);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const float decay = 1.0f - s.lr * group_decay(groups, 4 * i);
    float4 p = param[i], g = grad[i], mi = m[i], vi = v[i];
    adamw_element(p.x, g.x * coef, mi.x, vi.x, decay, h, step_size, s.bias_correction2_sqrt);
    adamw_element(p.y, g.y * coef, mi.y, vi.y, decay, h, step_size, s.bias_correction2_sqrt);
    adamw_element(p.z, g.z * coef, mi.z, vi.z, decay, h, step_size, s.bias_correction2_sqrt);
    adamw_element(p.w, g.w * coef, mi.w, vi.w, decay, h, step_size, s.bias_correction2_sqrt);
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (ema4) ema_pack(ema4, i, p, ema);
  }
}

__device__ __forceinline__ void sgd_element(float& p, float g, float* buf, float wd, float lr, float momentum,
                                            bool nesterov, bool first) {
  float d = g + wd * p;
  if (buf) {
    const float b = first ? d : momentum * *buf + d;
    *buf = b;
    d = nesterov ? d + momentum * b : b;
  }
  p = p - lr * d;
}

__global__ void sgd_kernel(float4* __restrict__ param, const float4* __restrict__ grad, float4* __restrict__ buf,
                           int64_t packs, FlatGroups groups, float momentum, bool nesterov,
                           const SgdStepScalars* __restrict__ scalars, DeviceClip clip, FusedEma ema) {
  const float coef = block_clip_coef(clip);
  const SgdStepScalars s = *scalars;
  const float lr = s.lr;
  const bool first = s.first_step != 0;
  auto* ema4 = reinterpret_cast<float4*>(ema.ema);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const float wd = group_decay(groups, 4 * i);
    float4 p = param[i], g = grad[i];
    float4 b = buf ? buf[i] : make_float4(0, 0, 0, 0);
    float* bp = buf ? &b.x : nullptr;
    sgd_element(p.x, g.x * coef, bp, wd, lr, momentum, nesterov, first);
    sgd_element(p.y, g.y * coef, bp ? &b.y : nullptr, wd, lr, momentum, nesterov, first);
    sgd_element(p.z, g.z * coef, bp ? &b.z : nullptr, wd, lr, momentum, nesterov, first);
    sgd_element(p.w, g.w * coef, bp ? &b.w : nullptr, wd, lr, momentum, nesterov, first);
    param[i] = p;
    if (buf) buf[i] = b;
    if (ema4) ema_pack(ema4, i, p, ema);
  }
}

template <typename T>
__global__ void store_kernel(T* dst, T value) {
  *dst = value;
}

__global__ void sumsq_partials_kernel(double* __restrict__ partials, const float4* __restrict__ grad, int64_t packs) {
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const float4 g = grad[i];
    acc += double(g.x) * g.x + double(g.y) * g.y + double(g.z) * g.z + double(g.w) * g.w;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void finish_norm_kernel(float* norm, const double* __restrict__ partials) {
  const float value = block_norm_from_partials(partials);
  if (threadIdx.x == 0) *norm = value;
}

void check_flat(const char* op, int64_t n, std::initializer_list<const void*> ptrs) {
  VT_CHECK(n >= 0 && n % 4 == 0, "[", op, "] flat size ", n, " is not a multiple of 4");
  for (const void* p : ptrs)
    VT_CHECK(reinterpret_cast<uintptr_t>(p) % 16 == 0, "[", op, "] flat buffer ", p, " is not 16-byte aligned");
}

// An update with nothing to update still owes its clip's norm to *clip.norm.
void finish_clip_norm(const DeviceClip& clip, cudaStream_t stream) {
  if (clip.partials && clip.norm) grad_norm_from_partials(clip.norm, clip.partials, stream);
}

}  // namespace

FlatGroups make_flat_groups(const std::vector<std::pair<int64_t, double>>& group_ends) {
  VT_CHECK(group_ends.size() <= size_t(FlatGroups::kMax), "[flat_groups] ", group_ends.size(), " groups, at most ",
           FlatGroups::kMax);
  FlatGroups groups;
  for (const auto& [end, weight_decay] : group_ends) {
    VT_CHECK(end % 4 == 0, "[flat_groups] group end ", end, " is not a multiple of 4");
    groups.end[groups.count] = end;
    groups.weight_decay[groups.count++] = static_cast<float>(weight_decay);
  }
  return groups;
}

void set_adamw_step_scalars(AdamWStepScalars* dst, const AdamWStepScalars& values, cudaStream_t stream) {
  VT_CHECK(dst, "[adamw] null step-scalar buffer");
  store_kernel<<<1, 1, 0, stream>>>(dst, values);
  VT_CUDA_CHECK(cudaGetLastError());
}

void set_sgd_step_scalars(SgdStepScalars* dst, const SgdStepScalars& values, cudaStream_t stream) {
  VT_CHECK(dst, "[sgd] null step-scalar buffer");
  store_kernel<<<1, 1, 0, stream>>>(dst, values);
  VT_CUDA_CHECK(cudaGetLastError());
}

void adamw_flat_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                     const FlatGroups& groups, const AdamWHyper& hyper, DeviceClip clip, FusedEma ema,
                     cudaStream_t stream) {
  check_flat("adamw", n, {param, grad, exp_avg, exp_avg_sq, ema.ema});
  VT_CHECK(hyper.scalars, "[adamw] null step-scalar buffer");
  if (n == 0) return finish_clip_norm(clip, stream);
  const int64_t packs = n / 4;
  adamw_kernel<<<blocks_for(packs), kBlock, 0, stream>>>(
      reinterpret_cast<float4*>(param), reinterpret_cast<const float4*>(grad), reinterpret_cast<float4*>(exp_avg),
      reinterpret_cast<float4*>(exp_avg_sq), packs, groups, hyper, clip, ema);
  VT_CUDA_CHECK(cudaGetLastError());
}

void sgd_flat_step(float* param, const float* grad, float* momentum_buf, int64_t n, const FlatGroups& groups,
                   float momentum, bool nesterov, const SgdStepScalars* scalars, DeviceClip clip, FusedEma ema,
                   cudaStream_t stream) {
  check_flat("sgd", n, {param, grad, momentum_buf, ema.ema});
  VT_CHECK(scalars, "[sgd] null step-scalar buffer");
  if (n == 0) return finish_clip_norm(clip, stream);
  const int64_t packs = n / 4;
  sgd_kernel<<<blocks_for(packs), kBlock, 0, stream>>>(
      reinterpret_cast<float4*>(param), reinterpret_cast<const float4*>(grad), reinterpret_cast<float4*>(momentum_buf),
      packs, groups, momentum, nesterov, scalars, clip, ema);
  VT_CUDA_CHECK(cudaGetLastError());
}

int64_t grad_norm_workspace_size() { return kNormBlocks; }

void grad_norm_partials(double* partials, const float* grad, int64_t n, cudaStream_t stream) {
  check_flat("grad_norm", n, {grad});
  VT_CHECK(partials, "[grad_norm] null partial-sum buffer");
  sumsq_partials_kernel<<<kNormBlocks, kBlock, 0, stream>>>(partials, reinterpret_cast<const float4*>(grad), n / 4);
  VT_CUDA_CHECK(cudaGetLastError());
}

void grad_norm_from_partials(float* norm, const double* partials, cudaStream_t stream) {
  VT_CHECK(norm && partials, "[grad_norm] null norm or partial-sum buffer");
  finish_norm_kernel<<<1, kBlock, 0, stream>>>(norm, partials);
  VT_CUDA_CHECK(cudaGetLastError());
}

void global_grad_norm(float* norm, double* workspace, const float* grad, int64_t n, cudaStream_t stream) {
  grad_norm_partials(workspace, grad, n, stream);
  grad_norm_from_partials(norm, workspace, stream);
}

}  // namespace vt::kernels::cuda
