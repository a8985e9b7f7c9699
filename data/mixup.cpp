#include "data/mixup.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

#ifdef VT_WITH_CUDA
#include "data/mixup_cuda.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::data {
namespace {

double sample_gamma(double a, SampleRng& rng) {
  if (a < 1.0) return sample_gamma(a + 1.0, rng) * std::pow(rng.uniform(), 1.0 / a);
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

double sample_beta(double a, SampleRng& rng) {
  const double x = sample_gamma(a, rng), y = sample_gamma(a, rng);
  return x / (x + y);
}

MixDraw draw_mix(const MixupConfig& cfg, int height, int width, SampleRng& rng) {
  MixDraw d;
  const bool mixup_on = cfg.mixup_alpha > 0, cutmix_on = cfg.cutmix_alpha > 0;
  if (!(mixup_on || cutmix_on) || rng.uniform() >= cfg.prob) return d;
  if (mixup_on && cutmix_on) d.cutmix = rng.uniform() < cfg.switch_prob;
  else d.cutmix = cutmix_on;
  d.lam = sample_beta(d.cutmix ? cfg.cutmix_alpha : cfg.mixup_alpha, rng);
  if (!d.cutmix) return d;
  // timm rand_bbox: a box of sides int(H·√(1−λ)), int(W·√(1−λ)) centred uniformly, clipped to the image.
  const double ratio = std::sqrt(1.0 - d.lam);
  const int cut_h = static_cast<int>(height * ratio), cut_w = static_cast<int>(width * ratio);
  const int cy = static_cast<int>(rng.randint(0, height - 1)), cx = static_cast<int>(rng.randint(0, width - 1));
  d.y0 = std::clamp(cy - cut_h / 2, 0, height);
  d.y1 = std::clamp(cy + cut_h / 2, 0, height);
  d.x0 = std::clamp(cx - cut_w / 2, 0, width);
  d.x1 = std::clamp(cx + cut_w / 2, 0, width);
  if (cfg.correct_lam)
    d.lam = 1.0 - static_cast<double>(d.y1 - d.y0) * (d.x1 - d.x0) / (static_cast<double>(height) * width);
  return d;
}

#ifdef VT_WITH_CUDA
namespace {
Tensor apply_mix_cuda(Tensor& images, const Tensor& labels, const MixDraw& draw, const MixupConfig& cfg) {
  const Device dev = images.device();
  VT_CHECK(labels.device() == dev && labels.dtype() == DType::i64 && labels.is_contiguous(), "[data] mixup on ",
           dev.str(), " needs contiguous i64 labels on the same device, got ", labels.describe(), " on ",
           labels.device().str());
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3), K = cfg.num_classes;
  kernels::cuda::DeviceGuard guard(dev.index);
  const kernels::KernelStream stream = kernels::cuda::current_stream();
  float* x = images.data<float>();
  if (draw.lam < 1.0) {
    if (draw.cutmix) {
      cuda::cutmix_swap(x, B, C, H, W, draw.y0, draw.y1, draw.x0, draw.x1, stream);
    } else {
      cuda::mixup_blend(x, B, C * H * W, static_cast<float>(draw.lam), static_cast<float>(1.0 - draw.lam), stream);
    }
  }
  // The same float values the CPU version adds, in the same order.
  const double off = cfg.label_smoothing / K, on = 1.0 - cfg.label_smoothing + off;
  Tensor targets = Tensor::empty({B, K}, DType::f32, dev);
  cuda::mix_targets(
      targets.data<float>(), labels.data<int64_t>(), B, K, static_cast<float>(off * draw.lam + off * (1.0 - draw.lam)),
      static_cast<float>((on - off) * draw.lam), static_cast<float>((on - off) * (1.0 - draw.lam)), stream);
  return targets;
}
}  // namespace
#endif

Tensor apply_mix(Tensor& images, const Tensor& labels, const MixDraw& draw, const MixupConfig& cfg) {
  VT_CHECK(images.dim() == 4 && images.dtype() == DType::f32 && images.is_contiguous(),
           "[data] mixup needs contiguous f32 images [B, C, H, W], got ", images.describe());
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  VT_CHECK(B % 2 == 0, "[data] mixup/cutmix needs an even batch size (it pairs image i with B-1-i), got ", B);
  VT_CHECK(labels.numel() == B, "[data] mixup: ", B, " images but ", labels.numel(), " labels");
  if (images.device().is_cuda()) {
#ifdef VT_WITH_CUDA
    return apply_mix_cuda(images, labels, draw, cfg);
#else
    fail_without_cuda("mixup", images.device());
#endif
  }
  float* x = images.data<float>();
  const int64_t plane = H * W, per_image = C * plane;
  if (draw.lam < 1.0) {
    if (draw.cutmix) {
      // Pairs (i, B-1-i) swap the box: the same as x[:, :, box] = x.flip(0)[:, :, box].
      for (int64_t i = 0; i < B / 2; ++i)
        for (int64_t c = 0; c < C; ++c)
          for (int y = draw.y0; y < draw.y1; ++y)
            std::swap_ranges(x + i * per_image + c * plane + y * W + draw.x0,
                             x + i * per_image + c * plane + y * W + draw.x1,
                             x + (B - 1 - i) * per_image + c * plane + y * W + draw.x0);
    } else {
      const float lam = static_cast<float>(draw.lam), rest = static_cast<float>(1.0 - draw.lam);
      for (int64_t i = 0; i < B / 2; ++i) {
        float* a = x + i * per_image;
        float* b = x + (B - 1 - i) * per_image;
        for (int64_t k = 0; k < per_image; ++k) {
          const float va = a[k], vb = b[k];
          a[k] = va * lam + vb * rest;
          b[k] = vb * lam + va * rest;
        }
      }
    }
  }
  const int64_t K = cfg.num_classes;
  const double off = cfg.label_smoothing / K, on = 1.0 - cfg.label_smoothing + off;
  const std::vector<double> lab = labels.to_vector();
  Tensor targets = Tensor::full({B, K}, off * draw.lam + off * (1.0 - draw.lam));
  float* t = targets.data<float>();
  for (int64_t i = 0; i < B; ++i) {
    const auto own = static_cast<int64_t>(lab[i]), other = static_cast<int64_t>(lab[B - 1 - i]);
    VT_CHECK(own >= 0 && own < K, "[data] mixup: label ", own, " outside 0..", K - 1);
    t[i * K + own] += static_cast<float>((on - off) * draw.lam);
    t[i * K + other] += static_cast<float>((on - off) * (1.0 - draw.lam));
  }
  return targets;
}

}  // namespace vt::data
