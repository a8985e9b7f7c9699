// SGD update loop (CPU, OpenMP over elements).
#include "optim/sgd.h"

namespace vt::optim {

namespace {

// buf is null without momentum; `first` marks a fresh momentum buffer, which starts as d itself.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, bool first, int64_t n, double lr, double wd, double momentum,
                bool nesterov) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(g[i]) + wd * static_cast<double>(p[i]);
    if (buf) {
      buf[i] = static_cast<T>(first ? d : momentum * static_cast<double>(buf[i]) + d);
      d = nesterov ? d + momentum * static_cast<double>(buf[i]) : static_cast<double>(buf[i]);
    }
    p[i] = static_cast<T>(p[i] - lr * d);
  }
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool nesterov)
    : Optimizer(std::move(groups), lr), momentum_(momentum), nesterov_(nesterov) {
  VT_CHECK(momentum_ >= 0.0, "[sgd] momentum must be >= 0, got ", momentum_);
  VT_CHECK(!nesterov_ || momentum_ > 0.0, "[sgd] Nesterov momentum needs momentum > 0");
}

void SGD::step() {
  ++step_count_;
  for_each_param([&](int64_t k, const ParamGroup& group, Tensor& p) {
    Tensor grad = p.grad();
    if (!grad.defined()) return;
    check_param("sgd", k, p, grad);
    ++param_steps_[static_cast<size_t>(k)];
    Tensor* buf = nullptr;
    bool first = false;
    if (momentum_ > 0.0) {
      first = find_slot(k, "momentum_buffer") == nullptr;
      buf = &slot(k, "momentum_buffer", p);
    }
    VT_DISPATCH_FLOAT(p.dtype(), "sgd", [&] {
      sgd_update(p.data<scalar_t>(), grad.data<scalar_t>(), buf ? buf->data<scalar_t>() : nullptr, first,
                 p.numel(), lr, group.weight_decay, momentum_, nesterov_);
    });
  });
}

}  // namespace vt::optim
