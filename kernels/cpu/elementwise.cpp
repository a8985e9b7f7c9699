#include "kernels/cpu/elementwise.h"

#include <cmath>

#include "core/error.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/strided.h"

namespace vt::kernels::cpu {

namespace {

template <typename T>
T apply(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
  }
  return T(0);
}

// Small loops stay serial without entering OpenMP at all: even an `if(false)` parallel region costs ~2 µs,
// which dominated broadcast ops made of many short rows.
template <typename T, typename F>
void parallel_map(int64_t n, F&& f) {
  if (n > 65536) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

void binary_forward(BinaryOp op, DType dtype, void* out, const void* a, const std::vector<int64_t>& a_strides,
                    const void* b, const std::vector<int64_t>& b_strides, const std::vector<int64_t>& shape) {
  auto layout = coalesce<3>(shape, {contiguous_strides_of(shape), a_strides, b_strides});
  VT_DISPATCH_FLOAT(dtype, "binary", [&] {
    using T = scalar_t;
    T* o = static_cast<T*>(out);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    for_each_row(layout, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
      T* op_ = o + off[0];
      const T* ap = pa + off[1];
      const T* bp = pb + off[2];
      const int64_t sa = st[1], sb = st[2];
      switch (op) {  // one loop per op so each vectorises
        case BinaryOp::add: parallel_map<T>(n, [&](int64_t i) { op_[i] = ap[i * sa] + bp[i * sb]; }); break;
        case BinaryOp::sub: parallel_map<T>(n, [&](int64_t i) { op_[i] = ap[i * sa] - bp[i * sb]; }); break;
        case BinaryOp::mul: parallel_map<T>(n, [&](int64_t i) { op_[i] = ap[i * sa] * bp[i * sb]; }); break;
        case BinaryOp::div: parallel_map<T>(n, [&](int64_t i) { op_[i] = ap[i * sa] / bp[i * sb]; }); break;
      }
    });
  });
}

void binary_scalar(BinaryOp op, DType dtype, void* out, const void* a, double s, bool scalar_left, int64_t n) {
  VT_DISPATCH_FLOAT(dtype, "binary_scalar", [&] {
    using T = scalar_t;
    T* o = static_cast<T*>(out);
    const T* pa = static_cast<const T*>(a);
    T v = static_cast<T>(s);
    if (scalar_left) parallel_map<T>(n, [&](int64_t i) { o[i] = apply(op, v, pa[i]); });
    else parallel_map<T>(n, [&](int64_t i) { o[i] = apply(op, pa[i], v); });
  });
}

void unary_forward(UnaryOp op, DType dtype, void* y, const void* x, int64_t n) {
  VT_DISPATCH_FLOAT(dtype, "unary", [&] {
    using T = scalar_t;
    T* o = static_cast<T*>(y);
    const T* in = static_cast<const T*>(x);
    switch (op) {
      case UnaryOp::exp: parallel_map<T>(n, [&](int64_t i) { o[i] = std::exp(in[i]); }); break;
      case UnaryOp::log: parallel_map<T>(n, [&](int64_t i) { o[i] = std::log(in[i]); }); break;
      case UnaryOp::sqrt: parallel_map<T>(n, [&](int64_t i) { o[i] = std::sqrt(in[i]); }); break;
      case UnaryOp::rsqrt: parallel_map<T>(n, [&](int64_t i) { o[i] = T(1) / std::sqrt(in[i]); }); break;
      case UnaryOp::tanh: parallel_map<T>(n, [&](int64_t i) { o[i] = std::tanh(in[i]); }); break;
      case UnaryOp::sigmoid: parallel_map<T>(n, [&](int64_t i) { o[i] = T(1) / (T(1) + std::exp(-in[i])); }); break;
      case UnaryOp::gelu:
        parallel_map<T>(n, [&](int64_t i) {
          const T u = in[i] * T(kInvSqrt2);
          o[i] = T(0.5) * in[i] * (T(1) + erf_with_exp(u, exp_nonpos(-u * u)));
        });
        break;
      case UnaryOp::silu: parallel_map<T>(n, [&](int64_t i) { o[i] = in[i] / (T(1) + std::exp(-in[i])); }); break;
      case UnaryOp::square: parallel_map<T>(n, [&](int64_t i) { o[i] = in[i] * in[i]; }); break;
      case UnaryOp::neg: parallel_map<T>(n, [&](int64_t i) { o[i] = -in[i]; }); break;
      case UnaryOp::relu: parallel_map<T>(n, [&](int64_t i) { o[i] = in[i] > T(0) ? in[i] : T(0); }); break;
    }
  });
}

void unary_backward(UnaryOp op, DType dtype, void* dx, const void* dy, const void* x, const void* y, int64_t n) {
  VT_DISPATCH_FLOAT(dtype, "unary_backward", [&] {
    using T = scalar_t;
    T* g = static_cast<T*>(dx);
    const T* go = static_cast<const T*>(dy);
    const T* in = static_cast<const T*>(x);
    const T* out = static_cast<const T*>(y);
    switch (op) {
      case UnaryOp::exp: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * out[i]; }); break;
      case UnaryOp::log: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] / in[i]; }); break;
      case UnaryOp::sqrt: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * T(0.5) / out[i]; }); break;
      case UnaryOp::rsqrt:
        parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * T(-0.5) * out[i] * out[i] * out[i]; });
        break;
      case UnaryOp::tanh: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * (T(1) - out[i] * out[i]); }); break;
      case UnaryOp::sigmoid: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * out[i] * (T(1) - out[i]); }); break;
      case UnaryOp::gelu:
        parallel_map<T>(n, [&](int64_t i) {
          const T u = in[i] * T(kInvSqrt2);
          const T e = exp_nonpos(-u * u);  // exp(-x²/2): shared by the CDF and the density
          T cdf = T(0.5) * (T(1) + erf_with_exp(u, e));
          T pdf = T(kInvSqrt2Pi) * e;
          g[i] = go[i] * (cdf + in[i] * pdf);
        });
        break;
      case UnaryOp::silu:
        parallel_map<T>(n, [&](int64_t i) {
          T s = T(1) / (T(1) + std::exp(-in[i]));
          g[i] = go[i] * (s + in[i] * s * (T(1) - s));
        });
        break;
      case UnaryOp::square: parallel_map<T>(n, [&](int64_t i) { g[i] = go[i] * T(2) * in[i]; }); break;
      case UnaryOp::neg: parallel_map<T>(n, [&](int64_t i) { g[i] = -go[i]; }); break;
      case UnaryOp::relu: parallel_map<T>(n, [&](int64_t i) { g[i] = in[i] > T(0) ? go[i] : T(0); }); break;
    }
  });
}

}  // namespace vt::kernels::cpu
