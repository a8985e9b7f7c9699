// The EMA that an optimizer's flat CPU loop fuses into its update (Optimizer::set_ema): for the element just written,
// ema = decay·ema + (1 - decay)·p in the element type, as ModelEma::update()'s three CPU ops round it (mul_ by decay,
// mul by 1 - decay, add_), so the fused and unfused averages are bit-identical.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace vt::optim {

template <typename T>
struct FusedEmaLoop {
  T* ema = nullptr;  // nullptr: no EMA
  T decay{}, one_minus_decay{};

  /// Updates ema[i] from the new parameter value p.
  void update(int64_t i, T p) const {
    const T scaled = p * one_minus_decay;
    const T kept = ema[i] * decay;
    ema[i] = kept + scaled;
  }
};

/// The loop state for `buffer` (undefined: none) starting at flat offset `at`.
template <typename T>
FusedEmaLoop<T> make_fused_ema_loop(const Tensor& buffer, double decay, int64_t at) {
  if (!buffer.defined()) return {};
  return {buffer.data<T>() + at, static_cast<T>(decay), static_cast<T>(1.0 - decay)};
}

}  // namespace vt::optim
