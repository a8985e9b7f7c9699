#include "nn/module.h"

#include <map>

namespace vt::nn {

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [name, t] : params ? params_ : buffers_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& b : named_buffers()) out.push_back(b);
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  for (const auto& [name, dst] : state_dict()) {
    auto it = given.find(name);
    VT_CHECK(it != given.end(), "[load_state_dict] missing tensor '", name, "'");
    VT_CHECK(it->second.shape() == dst.shape(), "[load_state_dict] tensor '", name, "' has shape ",
             to_string(it->second.shape()), ", the model expects ", to_string(dst.shape()));
    dst.copy_(it->second);
    given.erase(it);
  }
  if (strict && !given.empty())
    VT_FAIL("[load_state_dict] unexpected tensor '", given.begin()->first, "' (", given.size(), " unexpected in all)");
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::to(Device device) {
  for (auto& [name, t] : state_dict()) {
    if (t.device() == device) continue;
    Tensor moved = t.detach().to(device);  // contiguous copy on the device
    TensorImpl& impl = t.impl();
    impl.storage = moved.impl().storage;
    impl.strides = moved.strides();
    impl.offset = moved.offset();
    impl.grad.reset();
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  t.set_requires_grad(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  buffers_.emplace_back(name, t);
  return t;
}

}  // namespace vt::nn
