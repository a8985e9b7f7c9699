// Module: named parameters, buffers and children with timm's dotted names ("blocks.0.attn.qkv.weight"),
// train/eval mode, and state_dict load/save. Parameters are Tensor handles: the optimizer, the state dict and
// the layer all share one TensorImpl, so loading copies into it in place.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace vt::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;

  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  /// Parameters then buffers, in registration order.
  NamedTensors state_dict() const;
  /// Copies every entry into the matching tensor; a missing, unexpected or mis-shaped entry is an error
  /// naming the tensor (unexpected entries are ignored when !strict).
  void load_state_dict(const NamedTensors& state, bool strict = true);
  int64_t num_parameters() const;
  /// Moves every parameter and buffer to `device` in place (dtypes unchanged, gradients dropped): the Tensor
  /// handles held by layers keep working. Call it before building an optimizer over the parameters.
  void to(Device device);

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  Tensor register_parameter(const std::string& name, Tensor t);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

 private:
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace vt::nn
