// Autocast: a thread-local mixed-precision policy that the nn modules read (ops never do). Under
// `AutocastGuard guard(DType::bf16)`, on CUDA tensors, Linear and the patch-embedding conv cast input, weight and
// bias to bf16 with the differentiable to(DType) (so f32 master weights get f32 gradients) and return bf16;
// LayerNorm returns bf16 normalized activations while its statistics stay f32; residual adds promote
// bf16 + f32 -> f32, so the residual stream stays f32 (timm/PyTorch AMP). CPU tensors ignore the policy: the CPU
// path stays f32 and bit-identical with or without a guard.
#pragma once
#include <memory>
#include <optional>

#include "tensor/tensor.h"

namespace vt::nn {

/// RAII: sets the calling thread's autocast dtype for the scope (std::nullopt turns autocast off) and restores
/// the previous policy afterwards. Only bf16 is supported: f16 would need loss scaling, which we do not have.
struct WeightCastCache;

/// The outermost guard that turns autocast on also holds the weight-cast cache (PyTorch's autocast cache): the
/// first cast of a CUDA f32 parameter casts its whole storage once — with the optimizer's flat buffer, every
/// parameter of the model in one kernel — and later casts are views of that copy. It lives until the guard ends,
/// so parameters must not change inside the scope (they don't within a forward).
class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
  std::unique_ptr<WeightCastCache> cache_;  // set on the guard that installed the thread's cache
};

/// The calling thread's autocast dtype, std::nullopt when autocast is off.
std::optional<DType> autocast_dtype();

/// The dtype a module should compute in for input `x`: the autocast dtype when it is on and x is a CUDA tensor,
/// else std::nullopt (compute in x's own dtype).
std::optional<DType> autocast_dtype_for(const Tensor& x);

/// `t` cast to `dtype` (differentiable); an undefined tensor (a missing bias) and one already in `dtype` pass
/// through unchanged.
Tensor cast_to(const Tensor& t, DType dtype);

/// `t` in f32 when it is bf16 (autocast's dtype), unchanged otherwise (f32, and f64 for the gradchecks): for the
/// parts of a layer that the official code runs with autocast off.
Tensor at_least_f32(const Tensor& t);

/// ops::linear under the autocast policy (what nn::Linear runs): x, weight and bias cast to the autocast dtype
/// for CUDA inputs, unchanged otherwise. For attention kinds that hold their projection weights themselves.
Tensor autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace vt::nn
