// Sliding-window segmentation evaluation (see seg_evaluate.h).
#include "engine/seg_evaluate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>
#include <opencv2/imgproc.hpp>

#include "autograd/node.h"
#include "core/error.h"
#include "data/image_decode.h"
#include "data/seg_transforms.h"
#include "data/transforms.h"
#include "dist/communicator.h"
#include "engine/run_support.h"
#include "engine/sliding_window.h"
#include "engine/device.h"
#include "engine/trainer.h"
#include "io/metrics.h"
#include "io/safetensors.h"
#include "nn/autocast.h"
#include "ops/ops.h"
#include "ops/interpolate.h"

namespace vt::engine {

namespace {

std::array<float, 3> three(const std::vector<double>& v, const std::array<float, 3>& fallback) {
  if (v.empty()) return fallback;
  VT_CHECK(v.size() == 1 || v.size() == 3, "[config] data.mean/std need 1 or 3 values, got ", v.size());
  std::array<float, 3> out{};
  for (size_t c = 0; c < 3; ++c) out[c] = static_cast<float>(v[v.size() == 1 ? 0 : c]);
  return out;
}

// u8 RGB → normalized [1, 3, H, W] f32 on `device`.
Tensor image_tensor(const cv::Mat& rgb, const SegEvalOptions& opt, Device device) {
  data::Normalization norm;
  norm.mean = opt.mean;
  norm.std = opt.std;
  Tensor x = Tensor::empty({1, 3, rgb.rows, rgb.cols});
  data::to_normalized_chw(rgb, norm, x.data<float>());
  return x.to(device);
}

// Segmenter's resize(im, window): an image whose short side is below the window is upsampled (bilinear, on the
// normalized tensor) so that its short side equals the window, the long side int(ratio · window).
Tensor upsample_to_window(const Tensor& x, int64_t window) {
  const int64_t h = x.size(2), w = x.size(3);
  if (std::min(h, w) >= window) return x;
  const double ratio = h < w ? static_cast<double>(w) / h : static_cast<double>(h) / w;
  const int64_t longer = static_cast<int64_t>(ratio * static_cast<double>(window));
  return h < w ? ops::interpolate_bilinear(x, window, longer) : ops::interpolate_bilinear(x, longer, window);
}

// x [..., W] reversed along the last dim.
Tensor flip_width(const Tensor& x) {
  const int64_t W = x.size(-1);
  std::vector<double> idx(static_cast<size_t>(W));
  for (int64_t i = 0; i < W; ++i) idx[static_cast<size_t>(i)] = static_cast<double>(W - 1 - i);
  return ops::index_select(x, x.dim() - 1, Tensor::from_vector(idx, {W}, DType::i64).to(x.device()));
}

cv::Mat load_image(const std::string& path, int64_t max_pixels) {
  try {
    return data::load_rgb(path, max_pixels);
  } catch (const std::exception& e) {
    throw Error(std::string("[seg-eval] cannot read image ") + path + ": " + e.what());
  }
}

cv::Mat load_label(const data::SegmentationPair& p, const cv::Mat& image, bool reduce_zero, int64_t max_pixels) {
  cv::Mat label;
  try {
    label = data::load_label_png(p.label, max_pixels);
  } catch (const std::exception& e) {
    throw Error(std::string("[seg-eval] cannot read label ") + p.label + ": " + e.what());
  }
  VT_CHECK(label.size() == image.size(), "[seg-eval] label ", p.label, " is ", label.cols, "x", label.rows,
           " but image ", p.image, " is ", image.cols, "x", image.rows);
  if (reduce_zero) data::reduce_zero_label(label);
  return label;
}

}  // namespace

SegEvalOptions seg_eval_options(const io::Config& cfg) {
  SegEvalOptions opt;
  opt.crop = vit_config(cfg).img_size;
  // Segmenter's crop − 32; toy crops of 32 pixels or less (tests) get non-overlapping windows instead.
  opt.stride = cfg.eval.seg_stride > 0 ? cfg.eval.seg_stride : opt.crop > 32 ? opt.crop - 32 : opt.crop;
  opt.short_side = cfg.eval.seg_short_side;
  opt.long_side = cfg.eval.seg_long_side;
  opt.batch = std::clamp<int64_t>(cfg.eval.batch_size, 1, 16);
  opt.limit = cfg.data.test_limit;
  opt.scales = cfg.eval.seg_scales.empty() ? std::vector<double>{1.0} : cfg.eval.seg_scales;
  opt.flip = cfg.eval.seg_flip;
  const data::Normalization imagenet;
  opt.mean = three(cfg.data.mean, imagenet.mean);
  opt.std = three(cfg.data.std, imagenet.std);
  opt.reduce_zero_label = cfg.data.dataset == "ade20k";
  opt.amp = cfg.train.amp;
  opt.max_image_pixels = cfg.data.max_image_pixels;
  return opt;
}

Tensor sliding_window_logits(const models::Segmenter& model, const Tensor& x, const SegEvalOptions& opt) {
  VT_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == 3, "[seg-eval] expected one image [1, 3, H, W], got ",
           x.describe());
  const int64_t H = x.size(2), W = x.size(3), S = opt.crop, K = model.config().num_classes;
  VT_CHECK(S == model.config().backbone.img_size, "[seg-eval] window ", S, " differs from the model's crop ",
           model.config().backbone.img_size);
  VT_CHECK(opt.batch > 0, "[seg-eval] the window batch must be > 0, got ", opt.batch);
  const Device device = x.device();
  NoGradGuard no_grad;
  const std::vector<WindowBox> boxes = sliding_windows(H, W, S, opt.stride);
  Tensor sum = Tensor::zeros({1, K, H, W}, DType::f32, device);
  for (size_t first = 0; first < boxes.size(); first += static_cast<size_t>(opt.batch)) {
    const size_t last = std::min(boxes.size(), first + static_cast<size_t>(opt.batch));
    std::vector<Tensor> crops;
    for (size_t i = first; i < last; ++i) {
      const WindowBox& b = boxes[i];
      Tensor crop = x.slice(2, b.y, b.y + b.h).slice(3, b.x, b.x + b.w);
      if (b.h < S || b.w < S) {  // zero padding (the normalized mean) bottom/right, as Segmenter's padding()
        Tensor padded = Tensor::zeros({1, 3, S, S}, x.dtype(), device);
        padded.slice(2, 0, b.h).slice(3, 0, b.w).copy_(crop);
        crop = padded;
      }
      crops.push_back(crop.contiguous());
    }
    Tensor logits;
    {
      nn::AutocastGuard autocast(opt.amp && device.is_cuda() ? std::optional<DType>(DType::bf16) : std::nullopt);
      logits = model.forward(ops::concat(crops, 0));  // [b, K, S, S]
    }
    if (logits.dtype() != DType::f32) logits = logits.to(DType::f32);
    for (size_t i = first; i < last; ++i) {
      const WindowBox& b = boxes[i];
      const int64_t j = static_cast<int64_t>(i - first);
      Tensor dst = sum.slice(2, b.y, b.y + b.h).slice(3, b.x, b.x + b.w);
      dst.copy_(ops::add(dst, logits.slice(0, j, j + 1).slice(2, 0, b.h).slice(3, 0, b.w)));
    }
  }
  const std::vector<int32_t> count = window_counts(boxes, H, W);
  std::vector<double> divisor(count.begin(), count.end());
  return ops::div(sum, Tensor::from_vector(divisor, {1, 1, H, W}).to(device));
}

cv::Mat predict_segmentation(const models::Segmenter& model, const cv::Mat& rgb, const SegEvalOptions& opt,
                             Device device) {
  VT_CHECK(rgb.type() == CV_8UC3 && !rgb.empty(), "[seg-eval] expected an 8-bit RGB image");
  VT_CHECK(!opt.scales.empty(), "[seg-eval] no scales to evaluate at");
  NoGradGuard no_grad;
  const int64_t H0 = rgb.rows, W0 = rgb.cols;
  const int passes = static_cast<int>(opt.scales.size()) * (opt.flip ? 2 : 1);
  Tensor total;  // summed softmax of the passes (or the logits of a single pass: same arg-max)
  for (double ratio : opt.scales) {
    VT_CHECK(ratio > 0, "[seg-eval] scale ratios must be > 0, got ", ratio);
    // mmseg MultiScaleFlipAug: img_scale (int(2048·r), int(512·r)), then a keep-ratio Resize to it.
    const cv::Mat resized = data::seg_eval_resize(rgb, static_cast<int>(static_cast<double>(opt.long_side) * ratio),
                                                  static_cast<int>(static_cast<double>(opt.short_side) * ratio));
    for (int flip = 0; flip < (opt.flip ? 2 : 1); ++flip) {
      cv::Mat img = resized;
      if (flip) cv::flip(resized, img, 1);
      const Tensor x = upsample_to_window(image_tensor(img, opt, device), opt.crop);
      Tensor logits = ops::interpolate_bilinear(sliding_window_logits(model, x, opt), H0, W0);
      if (flip) logits = flip_width(logits);
      if (passes == 1) {
        total = logits;
      } else {
        const Tensor p = ops::softmax(logits, 1);
        total = total.defined() ? ops::add(total, p) : p;
      }
    }
  }
  const Tensor classes = ops::argmax(total, 1).to(cpu()).contiguous();  // [1, H0, W0] i64
  cv::Mat out(static_cast<int>(H0), static_cast<int>(W0), CV_8UC1);
  const int64_t* c = classes.data<int64_t>();
  for (int64_t y = 0; y < H0; ++y) {
    uint8_t* row = out.ptr<uint8_t>(static_cast<int>(y));
    for (int64_t x = 0; x < W0; ++x) row[x] = static_cast<uint8_t>(c[y * W0 + x]);
  }
  return out;
}

SegEvalResult evaluate_segmentation(const models::Segmenter& model, const std::vector<data::SegmentationPair>& pairs,
                                    const SegEvalOptions& opt, Device device, dist::Communicator* comm) {
  const int64_t K = model.config().num_classes;
  VT_CHECK(K <= 255, "[seg-eval] ", K, " classes do not fit 8-bit class maps");
  const int64_t n = opt.limit > 0 ? std::min<int64_t>(opt.limit, static_cast<int64_t>(pairs.size()))
                                  : static_cast<int64_t>(pairs.size());
  VT_CHECK(n > 0, "[seg-eval] no images to evaluate");
  const int64_t rank = comm ? comm->rank() : 0, world = comm ? comm->world() : 1;
  std::vector<int64_t> mine;  // this rank's images: every image exactly once across the ranks
  for (int64_t i = rank; i < n; i += world) mine.push_back(i);
  const int64_t m = static_cast<int64_t>(mine.size());
  SegAreas areas(K);
  const auto start = std::chrono::steady_clock::now();
  auto last_log = start;
  // The next image and label are decoded on a second thread while the model runs on this one.
  auto load = [&](int64_t i) {
    const data::SegmentationPair& p = pairs[static_cast<size_t>(i)];
    cv::Mat image = load_image(p.image, opt.max_image_pixels);
    cv::Mat label = load_label(p, image, opt.reduce_zero_label, opt.max_image_pixels);
    return std::make_pair(image, label);
  };
  std::future<std::pair<cv::Mat, cv::Mat>> next;
  if (m > 0) next = std::async(std::launch::async, load, mine[0]);
  for (int64_t j = 0; j < m; ++j) {
    const data::SegmentationPair& p = pairs[static_cast<size_t>(mine[static_cast<size_t>(j)])];
    const auto [image, label] = next.get();
    if (j + 1 < m) next = std::async(std::launch::async, load, mine[static_cast<size_t>(j + 1)]);
    const cv::Mat pred = predict_segmentation(model, image, opt, device);
    try {
      VT_CHECK(label.isContinuous() && pred.isContinuous(), "[seg-eval] non-contiguous class maps");
      areas.add(pred.ptr<uint8_t>(), label.ptr<uint8_t>(), static_cast<int64_t>(label.total()));
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (label " + p.label + ")");
    }
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (rank == 0 && (j + 1 == m || std::chrono::duration<double>(now - last_log).count() >= 10.0)) {
      const double rate = elapsed > 0 ? static_cast<double>(j + 1) / elapsed : 0.0;  // this rank's images
      spdlog::info("seg-eval [{}/{}{}] {:.2f} img/s ETA {}", j + 1, m, world > 1 ? " on rank 0" : "", rate,
                   io::format_duration(rate > 0 ? static_cast<double>(m - j - 1) / rate : 0.0));
      last_log = now;
    }
  }
  if (world > 1) {
    // f64 holds every count below 2^53 exactly (f32 would round the pixel areas of a real split).
    const std::vector<int64_t> local = areas.totals();
    const std::vector<double> summed =
        dist::sum_over_ranks(*comm, std::vector<double>(local.begin(), local.end()), device);
    std::vector<int64_t> total(summed.size());
    for (size_t c = 0; c < summed.size(); ++c) total[c] = static_cast<int64_t>(summed[c]);
    areas = SegAreas::from_totals(total);
  }
  SegEvalResult r;
  r.scores = areas.scores();
  r.images = n;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.img_per_s = r.seconds > 0 ? static_cast<double>(n) / r.seconds : 0.0;
  return r;
}

std::unique_ptr<models::Segmenter> load_segmenter_weights(const io::Config& cfg, const std::string& weights_path,
                                                          Device device, const WeightsLoadOptions& options) {
  VT_CHECK(!cfg.model.decoder.type.empty(), "[seg-eval] the config has no model.decoder: not a segmentation model");
  auto model =
      std::make_unique<models::Segmenter>(models::segmenter_config(cfg.model, static_cast<uint64_t>(cfg.train.seed)));
  load_segmenter_file(*model, weights_path, options);
  model->to(device);
  model->eval();
  return model;
}

SegEvalResult evaluate_segmentation_weights(const io::Config& cfg, const std::string& weights_path,
                                            const WeightsLoadOptions& options) {
  set_threads(cfg.train.threads);
  const Device device = resolve_device(cfg.train.device);
  VT_CHECK(cfg.data.dataset == "ade20k", "[seg-eval] data.dataset must be ade20k, got '", cfg.data.dataset, "'");
  // The data first: a wrong folder fails before the model is built and the weights read.
  const std::vector<data::SegmentationPair> pairs = data::ade20k(cfg.data.data_dir, "validation");
  const auto model = load_segmenter_weights(cfg, weights_path, device, options);
  return evaluate_segmentation(*model, pairs, seg_eval_options(cfg), device);
}

}  // namespace vt::engine
