// Element-wise ops with NumPy broadcasting (binary) and their gradients, on the CPU (f32/f64) and CUDA (f32, bf16
// with f32 math, f64). Binary ops promote bf16 ⊕ f32 to an f32 result (other mixed dtypes are an error); their
// backward returns each input's gradient in that input's dtype.
#pragma once
#include <utility>

#include "tensor/tensor.h"

namespace vt::ops {

/// a op b with broadcasting; bf16 ⊕ f32 gives f32.
Tensor add(const Tensor& a, const Tensor& b);
/// `sum`, computed elsewhere as a + b (a fused kernel, same shapes), with add's autograd attached.
Tensor record_add(Tensor sum, const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// a + s, a · s, s − a, s / a (s rounded to a's math type, as on the CPU); result in a's dtype.
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor sub(double s, const Tensor& a);
Tensor div(double s, const Tensor& a);
Tensor neg(const Tensor& a);

/// Unary maps; bf16 inputs compute in f32 and round the result to bf16.
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) GELU, as nn.GELU()
Tensor silu(const Tensor& x);
/// max(x, 0); the gradient at 0 is 0 (as torch).
Tensor relu(const Tensor& x);
Tensor square(const Tensor& x);

/// MiTA's gate x ⊙ SiLU(g): one kernel each way (silu_gate.cpp). x and g have the same shape and dtype (bf16 with
/// f32 gives f32, as x * silu(g) would); an operand whose rows are evenly strided with contiguous columns (a slice
/// of a packed tensor) is read in place.
Tensor silu_gate(const Tensor& x, const Tensor& g);
/// Its gradients from dy, no autograd: {dx = dy ⊙ SiLU(g), dg = dy ⊙ x ⊙ σ(g)(1 + g(1 − σ(g)))}, contiguous.
std::pair<Tensor, Tensor> silu_gate_grads(const Tensor& dy, const Tensor& x, const Tensor& g);

/// In place, no autograd: a += b (b broadcast to a's shape; b may be bf16 when a is f32). a must be contiguous.
void add_(const Tensor& a, const Tensor& b);
/// In place, no autograd: a *= s.
void mul_(const Tensor& a, double s);
/// Sums `g` over broadcast dims so it has `shape` (the backward of broadcasting).
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace vt::ops

namespace vt {
inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return ops::add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return ops::add(a, -s); }
inline Tensor operator*(const Tensor& a, double s) { return ops::mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return ops::mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return ops::mul(a, 1.0 / s); }
inline Tensor operator-(const Tensor& a) { return ops::neg(a); }
}  // namespace vt
