// Global-norm gradient clipping. Squares are summed in double, per tensor, then across tensors. With flat
// buffers on CUDA only the norm's partial sums are launched here; the next step()'s update launch finishes the norm,
// writes it into one buffer reused by every call, and applies the clip.
#include <cmath>

#include "kernels/cuda/adamw.h"
#include "kernels/dispatch.h"
#include "optim/flat_buffers.h"
#include "optim/optimizer.h"

namespace vt::optim {

namespace {

template <typename T>
double sum_squares(const T* g, int64_t n) {
  double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return acc;
}

template <typename T>
void scale(T* g, int64_t n, double s) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] = static_cast<T>(g[i] * s);
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  VT_CHECK(max_norm > 0.0, "[clip_grad_norm] max_norm must be > 0, got ", max_norm);
  std::vector<Tensor> grads;
  double total = 0.0;
  for (const auto& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    VT_CHECK(g.device().is_cpu(), "[clip_grad_norm] gradient ", g.describe(), " is on ", g.device().str(),
             ": use Optimizer::clip_grad_norm, which clips on the device without synchronizing");
    VT_CHECK(g.is_contiguous(), "[clip_grad_norm] gradient ", g.describe(), " is not contiguous");
    total += VT_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm", [&] { return sum_squares(g.data<scalar_t>(), g.numel()); });
    grads.push_back(g);
  }
  const double norm = std::sqrt(total);
  const double coef = max_norm / (norm + 1e-6);
  if (!(coef >= 1.0))  // also a NaN coefficient, which torch's clamp passes through
    for (auto& g : grads)
      VT_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm", [&] { scale(g.data<scalar_t>(), g.numel(), coef); });
  return norm;
}

double clip_grad_norm(const std::vector<ParamGroup>& groups, double max_norm) {
  std::vector<Tensor> params;
  for (const auto& g : groups) params.insert(params.end(), g.params.begin(), g.params.end());
  return clip_grad_norm(params, max_norm);
}

double clip_grad_norm(const NamedTensors& named_params, double max_norm) {
  std::vector<Tensor> params;
  for (const auto& [name, p] : named_params) params.push_back(p);
  return clip_grad_norm(params, max_norm);
}

Tensor Optimizer::clip_grad_norm(double max_norm) {
  VT_CHECK(max_norm > 0.0, "[clip_grad_norm] max_norm must be > 0, got ", max_norm);
  if (!flat_ || flat_->device().is_cpu()) return Tensor::scalar(optim::clip_grad_norm(groups, max_norm), DType::f64);
  flat_->reattach_grads();
  const Device device = flat_->device();
  if (!norm_workspace_.defined())
    norm_workspace_ = Tensor::empty({kernels::cuda::grad_norm_workspace_size()}, DType::f64, device);
  // One norm buffer for every call: the launch here and the update writing the norm keep their arguments (graph
  // capture). Zeros until the first clipped step writes it.
  if (!clip_norm_.defined()) clip_norm_ = Tensor::zeros({}, DType::f32, device);
  return kernels::on_cuda(device, [&](kernels::Cuda c) {
    kernels::cuda::grad_norm_partials(norm_workspace_.data<double>(), flat_->grads().data<float>(), flat_->size(),
                                      c.stream);
    pending_clip_ = PendingClip{norm_workspace_, clip_norm_, max_norm};
    return clip_norm_;
  });
}

}  // namespace vt::optim
