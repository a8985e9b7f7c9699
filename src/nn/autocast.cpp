#include "nn/autocast.h"

#include <unordered_map>

#include "autograd/node.h"
#include "ops/matmul.h"

namespace vt::nn {

struct WeightCastCache {
  std::unordered_map<const Storage*, Tensor> storages;  // storage -> all of it cast, 1-D
};

namespace {
thread_local std::optional<DType> t_autocast;
thread_local WeightCastCache* t_cache = nullptr;

// A parameter: a leaf that requires grad. Only f32 CUDA parameters cast to bf16 are cached.
bool cached_kind(const Tensor& t, DType dtype) {
  return t_cache && t.requires_grad() && !t.grad_fn() && t.device().is_cuda() && t.dtype() == DType::f32 &&
         dtype == DType::bf16;
}

Tensor cached_cast(const Tensor& t, DType dtype) {
  const Storage* key = t.impl().storage.get();
  auto found = t_cache->storages.find(key);
  if (found == t_cache->storages.end()) {
    NoGradGuard no_grad;
    const int64_t n = static_cast<int64_t>(key->nbytes() / dtype_size(t.dtype()));
    found = t_cache->storages.emplace(key, make_view(t.detach(), {n}, {1}, 0).to(dtype)).first;
  }
  return as_cast_of(t, make_view(found->second, t.shape(), t.strides(), t.offset()));
}
}  // namespace

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(t_autocast) {
  VT_CHECK(!dtype || *dtype == DType::bf16, "[autocast] only bf16 autocast is supported, got ", dtype_name(*dtype));
  t_autocast = dtype;
  if (dtype && !t_cache) {
    cache_ = std::make_unique<WeightCastCache>();
    t_cache = cache_.get();
  }
}

AutocastGuard::~AutocastGuard() {
  t_autocast = previous_;
  if (cache_) t_cache = nullptr;
}

std::optional<DType> autocast_dtype() { return t_autocast; }

std::optional<DType> autocast_dtype_for(const Tensor& x) {
  if (!t_autocast || !x.defined() || !x.device().is_cuda() || !is_floating(x.dtype())) return std::nullopt;
  return t_autocast;
}

Tensor at_least_f32(const Tensor& t) { return t.dtype() == DType::bf16 ? cast_to(t, DType::f32) : t; }

Tensor cast_to(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return t;
  return cached_kind(t, dtype) ? cached_cast(t, dtype) : t.to(dtype);
}

Tensor autocast_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (auto dt = autocast_dtype_for(x)) return ops::linear(cast_to(x, *dt), cast_to(weight, *dt), cast_to(bias, *dt));
  return ops::linear(x, weight, bias);
}

}  // namespace vt::nn
