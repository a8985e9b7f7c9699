// Element-wise CUDA kernels (see elementwise.h). Two shapes of loop:
//  - contiguous maps (unary, scalar, unary backward, same-shape binary): grid-stride over packs of V elements
//    loaded/stored as one 16-byte vector when every pointer is aligned to its pack (V = 16 / widest element);
//    a misaligned view (a slice at an odd offset) takes the same kernel with V = 1;
//  - broadcast binary: the logical index of the contiguous output is split by div/mod over at most 8 merged dims
//    into each operand's offset, in 32-bit arithmetic when every offset fits.
// Math runs in f32 for f32/bf16 and in f64 for f64; bf16 results are rounded to nearest even once, at the store.
// Formulas mirror kernels/cpu/elementwise.cpp (same reads of x or y in the backward).
#include "kernels/cuda/elementwise.h"

#include <array>

#include "kernels/strided.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/float_types.cuh"

namespace vt::kernels::cuda {

using device::acc_t;
using device::from_acc;
using device::to_acc;
using device::Vec;

// ---- device math (f32 and f64 overloads) ----
namespace {

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return ::exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return ::log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float m_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double m_rsqrt(double x) { return ::rsqrt(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return ::erf(x); }

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr int kBlock = 256;
constexpr int kMaxDims = 8;

// ---- op functors: C is the math type (float or double) ----
template <BinaryOp Op>
struct BinaryFn {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (Op == BinaryOp::add) return a + b;
    else if constexpr (Op == BinaryOp::sub) return a - b;
    else if constexpr (Op == BinaryOp::mul) return a * b;
    else return a / b;
  }
};

template <BinaryOp Op, typename C>
struct ScalarFn {
  C s;
  bool scalar_left;
  __device__ C operator()(C a) const { return scalar_left ? BinaryFn<Op>()(s, a) : BinaryFn<Op>()(a, s); }
};

template <UnaryOp Op>
struct UnaryFn {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (Op == UnaryOp::exp) return m_exp(x);
    else if constexpr (Op == UnaryOp::log) return m_log(x);
    else if constexpr (Op == UnaryOp::sqrt) return m_sqrt(x);
    else if constexpr (Op == UnaryOp::rsqrt) return m_rsqrt(x);
    else if constexpr (Op == UnaryOp::tanh) return m_tanh(x);
    else if constexpr (Op == UnaryOp::sigmoid) return C(1) / (C(1) + m_exp(-x));
    else if constexpr (Op == UnaryOp::gelu) return C(0.5) * x * (C(1) + m_erf(x * C(kInvSqrt2)));
    else if constexpr (Op == UnaryOp::silu) return x / (C(1) + m_exp(-x));
    else if constexpr (Op == UnaryOp::square) return x * x;
    else if constexpr (Op == UnaryOp::relu) return x > C(0) ? x : C(0);
    else return -x;
  }
};

// dx = f(dy, s) where s is y (exp, sqrt, rsqrt, tanh, sigmoid) or x (log, gelu, silu, square, relu); unused for
// neg.
template <UnaryOp Op>
struct UnaryGradFn {
  template <typename C>
  __device__ C operator()(C dy, C s) const {
    if constexpr (Op == UnaryOp::exp) return dy * s;
    else if constexpr (Op == UnaryOp::log) return dy / s;
    else if constexpr (Op == UnaryOp::sqrt) return dy * C(0.5) / s;
    else if constexpr (Op == UnaryOp::rsqrt) return dy * C(-0.5) * s * s * s;
    else if constexpr (Op == UnaryOp::tanh) return dy * (C(1) - s * s);
    else if constexpr (Op == UnaryOp::sigmoid) return dy * s * (C(1) - s);
    else if constexpr (Op == UnaryOp::gelu) {
      const C cdf = C(0.5) * (C(1) + m_erf(s * C(kInvSqrt2)));
      const C pdf = C(kInvSqrt2Pi) * m_exp(C(-0.5) * s * s);
      return dy * (cdf + s * pdf);
    } else if constexpr (Op == UnaryOp::silu) {
      const C sg = C(1) / (C(1) + m_exp(-s));
      return dy * (sg + s * sg * (C(1) - sg));
    } else if constexpr (Op == UnaryOp::square) return dy * C(2) * s;
    else if constexpr (Op == UnaryOp::relu) return s > C(0) ? dy : C(0);
    else return -dy;
  }
};

bool uses_input_in_backward(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::gelu || op == UnaryOp::silu || op == UnaryOp::square ||
         op == UnaryOp::relu;
}

// ---- kernels ----
// No __restrict__: in-place calls alias out with an input (each element is read and written by one thread).
template <int V, typename TO, typename TA, typename F>
__global__ void map1_kernel(TO* out, const TA* a, int64_t n, F f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t packs = n / V;
  for (int64_t i = tid; i < packs; i += stride) {
    const Vec<TA, V> va = reinterpret_cast<const Vec<TA, V>*>(a)[i];
    Vec<TO, V> vo;
#pragma unroll
    for (int k = 0; k < V; ++k) vo.v[k] = from_acc<TO>(f(to_acc(va.v[k])));
    reinterpret_cast<Vec<TO, V>*>(out)[i] = vo;
  }
  for (int64_t i = packs * V + tid; i < n; i += stride) out[i] = from_acc<TO>(f(to_acc(a[i])));
}

template <int V, typename TO, typename TA, typename TB, typename F>
__global__ void map2_kernel(TO* out, const TA* a, const TB* b, int64_t n, F f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t packs = n / V;
  for (int64_t i = tid; i < packs; i += stride) {
    const Vec<TA, V> va = reinterpret_cast<const Vec<TA, V>*>(a)[i];
    const Vec<TB, V> vb = reinterpret_cast<const Vec<TB, V>*>(b)[i];
    Vec<TO, V> vo;
#pragma unroll
    for (int k = 0; k < V; ++k) vo.v[k] = from_acc<TO>(f(to_acc(va.v[k]), to_acc(vb.v[k])));
    reinterpret_cast<Vec<TO, V>*>(out)[i] = vo;
  }
  for (int64_t i = packs * V + tid; i < n; i += stride) out[i] = from_acc<TO>(f(to_acc(a[i]), to_acc(b[i])));
}

struct Geometry {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t a[kMaxDims];
  int64_t b[kMaxDims];
};

// Idx: uint32_t when n and every operand offset fit in 31 bits (div/mod in 32 bits is several times cheaper).
template <typename Idx, typename TO, typename TA, typename TB, typename F>
__global__ void map2_strided_kernel(TO* out, const TA* a, const TB* b, Geometry g, int64_t n, F f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    Idx rem = static_cast<Idx>(i), oa = 0, ob = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= g.ndim) continue;
      const Idx size = static_cast<Idx>(g.shape[d]);
      const Idx idx = rem % size;
      rem /= size;
      oa += idx * static_cast<Idx>(g.a[d]);
      ob += idx * static_cast<Idx>(g.b[d]);
    }
    out[i] = from_acc<TO>(f(to_acc(a[oa]), to_acc(b[ob])));
  }
}

// ---- host helpers ----
template <typename... T>
constexpr int pack_of() {
  constexpr size_t widest = std::max({sizeof(T)...});
  return static_cast<int>(16 / widest);
}

template <typename TO, typename TA, typename F>
void launch_map1(TO* out, const TA* a, int64_t n, F f, cudaStream_t stream) {
  constexpr int V = pack_of<TO, TA>();
  if (device::aligned_to(out, sizeof(TO) * V) && device::aligned_to(a, sizeof(TA) * V))
    map1_kernel<V><<<device::grid_for((n + V - 1) / V, kBlock), kBlock, 0, stream>>>(out, a, n, f);
  else map1_kernel<1><<<device::grid_for(n, kBlock), kBlock, 0, stream>>>(out, a, n, f);
  VT_CUDA_CHECK(cudaGetLastError());
}

template <typename TO, typename TA, typename TB, typename F>
void launch_map2(TO* out, const TA* a, const TB* b, int64_t n, F f, cudaStream_t stream) {
  constexpr int V = pack_of<TO, TA, TB>();
  if (device::aligned_to(out, sizeof(TO) * V) && device::aligned_to(a, sizeof(TA) * V) &&
      device::aligned_to(b, sizeof(TB) * V))
    map2_kernel<V><<<device::grid_for((n + V - 1) / V, kBlock), kBlock, 0, stream>>>(out, a, b, n, f);
  else map2_kernel<1><<<device::grid_for(n, kBlock), kBlock, 0, stream>>>(out, a, b, n, f);
  VT_CUDA_CHECK(cudaGetLastError());
}

template <typename F>
void dispatch_binary_op(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add: return f(BinaryFn<BinaryOp::add>());
    case BinaryOp::sub: return f(BinaryFn<BinaryOp::sub>());
    case BinaryOp::mul: return f(BinaryFn<BinaryOp::mul>());
    case BinaryOp::div: return f(BinaryFn<BinaryOp::div>());
  }
}

template <typename F>
void dispatch_unary_op(UnaryOp op, F&& f) {
  switch (op) {
    case UnaryOp::exp: return f(std::integral_constant<UnaryOp, UnaryOp::exp>());
    case UnaryOp::log: return f(std::integral_constant<UnaryOp, UnaryOp::log>());
    case UnaryOp::sqrt: return f(std::integral_constant<UnaryOp, UnaryOp::sqrt>());
    case UnaryOp::rsqrt: return f(std::integral_constant<UnaryOp, UnaryOp::rsqrt>());
    case UnaryOp::tanh: return f(std::integral_constant<UnaryOp, UnaryOp::tanh>());
    case UnaryOp::sigmoid: return f(std::integral_constant<UnaryOp, UnaryOp::sigmoid>());
    case UnaryOp::gelu: return f(std::integral_constant<UnaryOp, UnaryOp::gelu>());
    case UnaryOp::silu: return f(std::integral_constant<UnaryOp, UnaryOp::silu>());
    case UnaryOp::square: return f(std::integral_constant<UnaryOp, UnaryOp::square>());
    case UnaryOp::neg: return f(std::integral_constant<UnaryOp, UnaryOp::neg>());
    case UnaryOp::relu: return f(std::integral_constant<UnaryOp, UnaryOp::relu>());
  }
}

// Calls f(TO{}, TA{}, TB{}): equal float dtypes, or an f32 output from f32/bf16 inputs (the promotion rule).
template <typename F>
void dispatch_binary_types(DType out, DType a, DType b, F&& f) {
  if (a == out && b == out) {
    device::dispatch_float(out, "binary", [&](auto t) { f(t, t, t); });
    return;
  }
  auto f32_or_bf16 = [](DType d) { return d == DType::f32 || d == DType::bf16; };
  VT_CHECK(out == DType::f32 && f32_or_bf16(a) && f32_or_bf16(b), "[binary] CUDA kernel has no ", dtype_name(a), " op ",
           dtype_name(b), " -> ", dtype_name(out), " variant");
  device::dispatch_float(a, "binary", [&](auto ta) {
    device::dispatch_float(b, "binary", [&](auto tb) {
      if constexpr (!std::is_same_v<decltype(ta), double> && !std::is_same_v<decltype(tb), double>) f(float{}, ta, tb);
    });
  });
}

}  // namespace

// ---- launchers ----
void binary_forward(BinaryOp op, DType out_dtype, void* out, DType a_dtype, const void* a,
                    const std::vector<int64_t>& a_strides, DType b_dtype, const void* b,
                    const std::vector<int64_t>& b_strides, const std::vector<int64_t>& shape, cudaStream_t stream) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  auto layout = coalesce<3>(shape, {contiguous_strides_of(shape), a_strides, b_strides});
  const int nd = static_cast<int>(layout.shape.size());
  VT_CHECK(nd <= kMaxDims, "[binary] at most ", kMaxDims, " non-mergeable dims, got ", nd);
  const bool same_layout = nd == 1 && layout.strides[1][0] == 1 && layout.strides[2][0] == 1;
  Geometry g{};
  g.ndim = nd;
  bool fits32 = n < (int64_t(1) << 31);
  int64_t max_a = 0, max_b = 0;
  for (int d = 0; d < nd; ++d) {
    g.shape[d] = layout.shape[d];
    g.a[d] = layout.strides[1][d];
    g.b[d] = layout.strides[2][d];
    fits32 = fits32 && g.a[d] >= 0 && g.b[d] >= 0;
    max_a += (g.shape[d] - 1) * g.a[d];
    max_b += (g.shape[d] - 1) * g.b[d];
  }
  fits32 = fits32 && max_a < (int64_t(1) << 31) && max_b < (int64_t(1) << 31);
  dispatch_binary_types(out_dtype, a_dtype, b_dtype, [&](auto to, auto ta, auto tb) {
    using TO = decltype(to);
    using TA = decltype(ta);
    using TB = decltype(tb);
    auto* po = static_cast<TO*>(out);
    auto* pa = static_cast<const TA*>(a);
    auto* pb = static_cast<const TB*>(b);
    dispatch_binary_op(op, [&](auto fn) {
      if (same_layout) {
        launch_map2(po, pa, pb, n, fn, stream);
      } else {
        const int grid = device::grid_for(n, kBlock);
        if (fits32) map2_strided_kernel<uint32_t><<<grid, kBlock, 0, stream>>>(po, pa, pb, g, n, fn);
        else map2_strided_kernel<int64_t><<<grid, kBlock, 0, stream>>>(po, pa, pb, g, n, fn);
        VT_CUDA_CHECK(cudaGetLastError());
      }
    });
  });
}

void binary_scalar(BinaryOp op, DType dtype, void* out, const void* a, double s, bool scalar_left, int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return;
  device::dispatch_float(dtype, "binary_scalar", [&](auto t) {
    using T = decltype(t);
    using C = acc_t<T>;
    auto* po = static_cast<T*>(out);
    auto* pa = static_cast<const T*>(a);
    // The scalar is rounded to the math type first, as the CPU kernel rounds it to its element type.
    switch (op) {
      case BinaryOp::add: return launch_map1(po, pa, n, ScalarFn<BinaryOp::add, C>{C(s), scalar_left}, stream);
      case BinaryOp::sub: return launch_map1(po, pa, n, ScalarFn<BinaryOp::sub, C>{C(s), scalar_left}, stream);
      case BinaryOp::mul: return launch_map1(po, pa, n, ScalarFn<BinaryOp::mul, C>{C(s), scalar_left}, stream);
      case BinaryOp::div: return launch_map1(po, pa, n, ScalarFn<BinaryOp::div, C>{C(s), scalar_left}, stream);
    }
  });
}

void unary_forward(UnaryOp op, DType dtype, void* y, const void* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  device::dispatch_float(dtype, "unary", [&](auto t) {
    using T = decltype(t);
    dispatch_unary_op(op, [&](auto tag) {
      launch_map1(static_cast<T*>(y), static_cast<const T*>(x), n, UnaryFn<decltype(tag)::value>(), stream);
    });
  });
}

void unary_backward(UnaryOp op, DType dtype, void* dx, const void* dy, const void* x, const void* y, int64_t n,
                    cudaStream_t stream) {
  if (n == 0) return;
  const void* saved = op == UnaryOp::neg ? dy : (uses_input_in_backward(op) ? x : y);
  VT_CHECK(saved != nullptr, "[unary_backward] missing the saved ", uses_input_in_backward(op) ? "input" : "output");
  device::dispatch_float(dtype, "unary_backward", [&](auto t) {
    using T = decltype(t);
    dispatch_unary_op(op, [&](auto tag) {
      launch_map2(static_cast<T*>(dx), static_cast<const T*>(dy), static_cast<const T*>(saved), n,
                  UnaryGradFn<decltype(tag)::value>(), stream);
    });
  });
}

void gelu_forward(float* y, const float* x, int64_t n, cudaStream_t stream) {
  unary_forward(UnaryOp::gelu, DType::f32, y, x, n, stream);
}

void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, cudaStream_t stream) {
  unary_backward(UnaryOp::gelu, DType::f32, dx, dy, x, nullptr, n, stream);
}

bool device_available() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) cudaGetLastError();  // clear it, so the next launch check does not report it
  return status == cudaSuccess && count > 0;
}

}  // namespace vt::kernels::cuda
