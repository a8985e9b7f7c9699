#include "nn/autocast.h"

#include "ops/matmul.h"

namespace vt::nn {

namespace {
thread_local std::optional<DType> t_autocast;
}  // namespace

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(t_autocast) {
  VT_CHECK(!dtype || *dtype == DType::bf16, "[autocast] only bf16 autocast is supported, got ",
           dtype_name(*dtype));
  t_autocast = dtype;
}

AutocastGuard::~AutocastGuard() { t_autocast = previous_; }

std::optional<DType> autocast_dtype() { return t_autocast; }

std::optional<DType> autocast_dtype_for(const Tensor& x) {
  if (!t_autocast || !x.defined() || !x.device().is_cuda() || !is_floating(x.dtype())) return std::nullopt;
  return t_autocast;
}

Tensor cast_to(const Tensor& t, DType dtype) { return t.defined() ? t.to(dtype) : t; }

Tensor autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (auto dt = autocast_dtype_for(x)) return ops::linear(cast_to(x, *dt), cast_to(weight, *dt), cast_to(bias, *dt));
  return ops::linear(x, weight, bias);
}

}  // namespace vt::nn
