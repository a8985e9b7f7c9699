// Segmentation evaluation with Segmenter's protocol (segm/eval/miou.py, segm/model/utils.py) and mmseg's
// metric: each image resized (short side 512, long side ≤ 2048; × ratio for multi-scale), upsampled when its
// short side is below the window, cut into overlapping windows of the crop size (sliding_window.h), the window
// logits averaged where they overlap, resized back to the image's original size, and the arg-max class
// compared with the full-resolution label (reduce_zero_label for ADE20K). With several scales or flips, the
// softmax of each pass is averaged (Segmenter's inference()). Scores: seg_metrics.h.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <opencv2/core.hpp>
#include <vector>

#include "core/device.h"
#include "data/datasets.h"
#include "data/image_decode.h"
#include "engine/seg_metrics.h"
#include "engine/weights_load.h"
#include "io/config.h"
#include "models/segmenter.h"

namespace vt::dist {
class Communicator;
}

namespace vt::engine {

/// How evaluate_segmentation / predict_segmentation run.
struct SegEvalOptions {
  int64_t crop = 512, stride = 480, short_side = 512, long_side = 2048;
  int64_t batch = 8;  ///< windows per forward pass
  int64_t limit = 0;  ///< evaluate only the first `limit` pairs; 0: all
  std::vector<double> scales = {1.0};
  bool flip = false;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f}, std{0.5f, 0.5f, 0.5f};  ///< 0-1 scale
  bool reduce_zero_label = true;
  bool amp = false;                                         ///< bf16 autocast for the forward passes (CUDA only)
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;  ///< a larger image or label map is an error; 0: none
};

/// The options a config asks for: window = model.img_size, stride eval.seg_stride (0: crop − 32, or crop when crop ≤ 32), eval.seg_*
/// sizes, scales and flip, batch min(eval.batch_size, 16), limit data.test_limit, data.mean/std (empty:
/// ImageNet's, as mmseg), reduce_zero_label for ade20k, amp = train.amp, data.max_image_pixels.
SegEvalOptions seg_eval_options(const io::Config& cfg);

/// The result of one evaluation pass over a split.
struct SegEvalResult {
  SegScores scores;
  int64_t images = 0;
  double seconds = 0, img_per_s = 0;
};

/// Whole-split evaluation (mmseg protocol): per image resize, sliding window, logits averaged, resized to the
/// original size, argmax; intersections/unions summed over the split. Logs a progress line (img/s, ETA); an
/// unreadable image or label, or a label whose size differs from its image's, is an error naming the file.
/// The model must be on `device` and in eval mode. With `comm` (data parallel), rank r evaluates images
/// r, r + world, ... and the areas are summed over the ranks exactly, so every rank returns the scores of the
/// whole split (those of one process); only rank 0 logs progress.
SegEvalResult evaluate_segmentation(const models::Segmenter& model, const std::vector<data::SegmentationPair>& pairs,
                                    const SegEvalOptions& opt, Device device, dist::Communicator* comm = nullptr);

/// One image (RGB u8, any size) → predicted class map (CV_8UC1, 0..K-1) at the image's size.
cv::Mat predict_segmentation(const models::Segmenter& model, const cv::Mat& rgb, const SegEvalOptions& opt,
                             Device device);

/// The logits of one normalized image x [1, 3, H, W] (H, W ≥ 1, on the model's device) by sliding windows of
/// opt.crop with opt.stride, batched by opt.batch, averaged where windows overlap: [1, K, H, W] f32. Windows
/// that stick out of a smaller image are zero-padded and only their inside is kept.
Tensor sliding_window_logits(const models::Segmenter& model, const Tensor& x, const SegEvalOptions& opt);

/// The configured Segmenter (model.*, model.decoder) with `weights_path` loaded, on `device`, in eval mode.
/// The file may be a Segmenter's weights, one of our training checkpoints (raw or EMA weights per options.pick)
/// or the official MiTA-Segmenter checkpoint.pth (load_segmenter_file: strict unless options say otherwise;
/// non-strict, other attention kinds load through load_weights_compatible). Errors name the file.
std::unique_ptr<models::Segmenter> load_segmenter_weights(const io::Config& cfg, const std::string& weights_path,
                                                          Device device, const WeightsLoadOptions& options = {});

/// `vitrain seg-eval`: load_segmenter_weights on cfg.train.device, then evaluate_segmentation over the validation
/// split of data.data_dir (ADE20K layout) with seg_eval_options(cfg).
SegEvalResult evaluate_segmentation_weights(const io::Config& cfg, const std::string& weights_path,
                                            const WeightsLoadOptions& options = {});

}  // namespace vt::engine
