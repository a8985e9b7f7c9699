// Optimizer base: the two halves of a step, gradient reset, the flat-buffer mode, the fused EMA, and the flat
// named-tensor state used by checkpoints.
#include "optim/optimizer.h"

#include <algorithm>
#include <charconv>

#include "optim/flat_buffers.h"

namespace vt::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups_in, double lr_in) : lr(lr_in), groups(std::move(groups_in)) {
  VT_CHECK(lr >= 0.0, "[optimizer] learning rate must be >= 0, got ", lr);
  for (const auto& g : groups) {
    VT_CHECK(g.weight_decay >= 0.0, "[optimizer] weight decay must be >= 0, got ", g.weight_decay);
    for (const auto& p : g.params) {
      VT_CHECK(p.defined(), "[optimizer] undefined parameter in a group");
      VT_CHECK(is_floating(p.dtype()), "[optimizer] parameter ", p.describe(), " is not floating point");
    }
  }
  param_steps_.assign(static_cast<size_t>(num_params()), 0);
  slots_.resize(static_cast<size_t>(num_params()));
  bool on_device = false;
  for (const auto& g : groups)
    for (const auto& p : g.params) on_device = on_device || !p.device().is_cpu();
  if (on_device) use_flat_buffers();
}

Optimizer::~Optimizer() = default;

void Optimizer::use_flat_buffers() {
  if (flat_) return;
  VT_CHECK(step_count_ == 0 && std::all_of(slots_.begin(), slots_.end(), [](const auto& m) { return m.empty(); }),
           "[optimizer] use_flat_buffers() must come before the first step or load_state()");
  VT_CHECK(groups.size() <= 8, "[optimizer] flat buffers support at most 8 parameter groups, got ", groups.size());
  for (const auto& g : groups)
    for (const auto& p : g.params)
      VT_CHECK(p.device().is_cpu() || p.dtype() == DType::f32, "[optimizer] parameter ", p.describe(), " on ",
               p.device().str(), ": device parameters must be f32 (master weights)");
  flat_ = std::make_unique<FlatBuffers>(groups);
}

Tensor& Optimizer::flat_slot(const std::string& name) {
  auto it = flat_slots_.find(name);
  if (it != flat_slots_.end()) return it->second;
  Tensor& buffer = flat_slots_.emplace(name, flat_->new_buffer()).first->second;
  for (int64_t k = 0; k < flat_->num_params(); ++k) slots_[static_cast<size_t>(k)][name] = flat_->view(buffer, k);
  return buffer;
}

void Optimizer::step() {
  prepare_step();
  apply_step();
}

void Optimizer::prepare_step() {
  ++step_count_;
  if (flat_)  // every parameter takes part in a flat step; the per-tensor path counts in apply_step()
    for (auto& t : param_steps_) ++t;
  step_lr_ = lr;
  prepare_update();
  prepared_ = true;
}

void Optimizer::apply_step() {
  // Graph replays re-run apply_step()'s kernels without this host code, so only this side is checked.
  VT_CHECK(prepared_, "[optimizer] apply_step() without a prepare_step() before it");
  prepared_ = false;
  if (flat_) flat_->reattach_grads();
  apply_update();
}

void* Optimizer::device_step_scalars(size_t bytes) {
  VT_ASSERT(bytes <= 32);
  if (!step_scalars_.defined()) step_scalars_ = Tensor::zeros({8}, DType::f32, flat_->device());
  return step_scalars_.raw_data();
}

void Optimizer::set_ema(const Tensor& flat_ema, double decay) {
  VT_CHECK(can_fuse_ema(), "[optimizer] a fused EMA needs flat buffers over the whole parameter set (no flat range)");
  VT_CHECK(decay > 0.0 && decay < 1.0, "[optimizer] EMA decay must be in (0, 1), got ", decay);
  VT_CHECK(flat_ema.defined() && flat_ema.dim() == 1 && flat_ema.numel() == flat_->size() &&
               flat_ema.dtype() == flat_->dtype() && flat_ema.device() == flat_->device() && flat_ema.is_contiguous(),
           "[optimizer] EMA buffer ", flat_ema.defined() ? flat_ema.describe() : "(undefined)", " on ",
           flat_ema.defined() ? flat_ema.device().str() : "-", " does not have the flat layout (", flat_->size(),
           " values of ", dtype_name(flat_->dtype()), " on ", flat_->device().str(), ")");
  ema_ = FusedEmaState{flat_ema, decay};
}

Optimizer::PendingClip Optimizer::take_pending_clip() { return std::exchange(pending_clip_, PendingClip{}); }

int64_t Optimizer::num_params() const {
  int64_t n = 0;
  for (const auto& g : groups) n += static_cast<int64_t>(g.params.size());
  return n;
}

void Optimizer::zero_grad(bool set_to_none) {
  pending_clip_ = PendingClip{};
  if (flat_) {
    flat_->zero_grads();
    return;
  }
  for (auto& g : groups)
    for (auto& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) p.set_grad(Tensor());
      else grad.fill_(0.0);
    }
}

Tensor* Optimizer::find_slot(int64_t k, const std::string& name) {
  auto& m = slots_[static_cast<size_t>(k)];
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}

Tensor& Optimizer::slot(int64_t k, const std::string& name, const Tensor& param) {
  auto& m = slots_[static_cast<size_t>(k)];
  auto it = m.find(name);
  if (it == m.end()) it = m.emplace(name, Tensor::zeros(param.shape(), param.dtype(), param.device())).first;
  return it->second;
}

void Optimizer::check_param(const char* op, int64_t k, const Tensor& param, const Tensor& grad) {
  VT_CHECK(param.is_contiguous() && grad.is_contiguous(), "[", op, "] parameter ", k, " ", param.describe(),
           " and its gradient must be contiguous");
  VT_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), "[", op, "] gradient ", grad.describe(),
           " does not match parameter ", k, " ", param.describe());
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("step", Tensor::scalar(static_cast<double>(step_count_), DType::i64));
  out.emplace_back("lr", Tensor::scalar(lr, DType::f64));
  for (size_t k = 0; k < slots_.size(); ++k) {
    const std::string prefix = "param." + std::to_string(k) + ".";
    if (param_steps_[k] > 0)
      out.emplace_back(prefix + "step", Tensor::scalar(static_cast<double>(param_steps_[k]), DType::i64));
    for (const auto& [name, t] : slots_[k]) out.emplace_back(prefix + name, t.detach().clone());
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  std::vector<Tensor> params;
  for (auto& g : groups)
    for (auto& p : g.params) params.push_back(p);
  const std::vector<std::string> names = slot_names();
  std::vector<int64_t> steps(params.size(), 0);
  std::vector<std::map<std::string, Tensor>> slots(params.size());
  int64_t step_count = step_count_;
  double new_lr = lr;
  for (const auto& [key, t] : state) {
    VT_CHECK(t.defined(), "[load_state] tensor '", key, "' is undefined");
    if (key == "step") {
      step_count = static_cast<int64_t>(t.item());
      continue;
    }
    if (key == "lr") {
      new_lr = t.item();
      continue;
    }
    // param.<k>.<slot>
    VT_CHECK(key.rfind("param.", 0) == 0, "[load_state] unknown key '", key, "'");
    size_t k = 0;
    const char* begin = key.data() + 6;
    const char* end = key.data() + key.size();
    auto [ptr, ec] = std::from_chars(begin, end, k);
    VT_CHECK(ec == std::errc() && ptr < end && *ptr == '.', "[load_state] unknown key '", key, "'");
    const std::string slot_name(ptr + 1, end);
    VT_CHECK(k < params.size(), "[load_state] key '", key, "' names parameter ", k, " but the optimizer has ",
             params.size());
    if (slot_name == "step") {
      steps[k] = static_cast<int64_t>(t.item());
      continue;
    }
    VT_CHECK(std::find(names.begin(), names.end(), slot_name) != names.end(), "[load_state] unknown key '", key, "'");
    VT_CHECK(t.shape() == params[k].shape(), "[load_state] '", key, "' is ", t.describe(), " but parameter ", k, " is ",
             params[k].describe());
    Tensor copy = Tensor::empty(params[k].shape(), params[k].dtype(), params[k].device());
    copy.copy_(t);
    slots[k][slot_name] = copy;
  }
  for (size_t k = 0; k < params.size(); ++k) {
    VT_CHECK(slots[k].empty() || steps[k] > 0, "[load_state] parameter ", k, " has state but no 'param.", k, ".step'");
    VT_CHECK(!flat_ || steps[k] == steps.front(), "[load_state] parameter ", k, " has step ", steps[k],
             " but parameter 0 has ", steps.front(), ": flat buffers keep one step count for all parameters");
  }
  step_count_ = step_count;
  lr = new_lr;
  param_steps_ = std::move(steps);
  if (!flat_) {
    slots_ = std::move(slots);
    return;
  }
  // Flat mode: the loaded values go into the flat state buffers, which slots_ keeps viewing.
  flat_slots_.clear();
  for (auto& m : slots_) m.clear();
  for (const std::string& name : names) {
    bool any = false;
    for (const auto& m : slots) any = any || m.count(name) > 0;
    if (!any) continue;
    Tensor& buffer = flat_slot(name);
    for (size_t k = 0; k < params.size(); ++k)
      if (auto it = slots[k].find(name); it != slots[k].end()) flat_->view(buffer, int64_t(k)).copy_(it->second);
  }
}

}  // namespace vt::optim
