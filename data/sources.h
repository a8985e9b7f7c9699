// SampleSources for the loader: image files with the timm train/eval transforms, Fashion-MNIST in memory, and
// synthetic data for benchmarks.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "data/idx.h"
#include "data/image_decode.h"
#include "data/loader.h"
#include "data/rand_augment.h"
#include "data/seg_transforms.h"
#include "data/transforms.h"

namespace vt::data {

struct ClassificationTransform {
  bool train = true;
  int size = 224;
  RandomResizedCropParams crop;  // train
  double hflip = 0.5;            // train
  std::string auto_augment;      // train: timm RandAugment spec, e.g. "rand-m9-mstd0.5-inc1"; "" = off
  double color_jitter = 0.4;     // train, only when auto_augment is off (timm); 0 = off
  RandomErasingParams erasing;   // train; probability 0 turns it off
  double crop_pct = 0.875;       // eval: resize short side to floor(size / crop_pct), then center crop
  PilFilter filter = PilFilter::bicubic;
  Normalization norm;
  /// Decode JPEGs at a DCT scale m/8 that still leaves the crop at least `size` pixels (train by default; off for
  /// eval so it matches PIL bit for bit).
  bool dct_downscale = true;
  /// Train: decode only the rows and columns of a JPEG that the crop covers (data/jpeg_region.h).
  bool crop_decode = true;
  /// Train crop+resize through pil_resize (bit-exact Pillow) instead of fast_resize (within ±2, about 2x faster).
  bool exact_train_resize = false;
  /// A file whose header declares more pixels is bad (data.max_image_pixels; 0: no limit).
  int64_t max_image_pixels = kDefaultMaxImagePixels;
};

/// The train transform (RandomResizedCrop, flip, normalize, RandomErasing) or the eval transform.
ClassificationTransform train_transform(int size = 224);
/// DeiT's recipe: train_transform + RandAugment rand-m9-mstd0.5-inc1 (colour jitter stays off, as timm does
/// when AA is on) + RandomErasing 0.25.
ClassificationTransform deit_train_transform(int size = 224);
ClassificationTransform eval_transform(int size = 224, double crop_pct = 0.875);

/// Image files with labels, decoded and transformed per sample into 3 x size x size floats. Any failure while
/// reading, decoding or transforming a file (allocation failures included) is a BadSampleError naming it.
/// One training image's random choices, drawn from its stream in the order the image path makes them (the crop
/// box from the file's header size, the flip, then the pixel ops); RandomErasing is drawn after them.
struct TrainImageDraw {
  CropBox box;
  bool flip = false;
  AugDraw augment;
};

class ImageFileSource : public SampleSource {
 public:
  ImageFileSource(std::vector<LabeledFile> files, ClassificationTransform transform);
  /// The training choices for an image of width × height (its header's size): what transformed() applies.
  TrainImageDraw draw_train(int width, int height, SampleRng& rng) const;
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  std::array<int64_t, 3> image_shape() const override { return {3, t_.size, t_.size}; }
  std::string describe(int64_t index) const override { return files_[static_cast<size_t>(index)].path; }
  int64_t load(int64_t index, SampleRng& rng, float* image) const override;
  bool yields_pixels() const override { return t_.train; }
  int64_t load_pixels(int64_t index, SampleRng& rng, uint8_t* pixels, int64_t* erasing) const override;
  const Normalization& normalization() const { return t_.norm; }
  /// The transformed 8-bit image before normalization (exposed for tests and tools).
  cv::Mat transformed(int64_t index, SampleRng& rng) const;

 private:
  std::vector<LabeledFile> files_;
  ClassificationTransform t_;
  bool rand_augment_on_ = false;
  RandAugmentConfig rand_augment_;
};

/// ADE20K training samples: image + annotation (reduce_zero_label applied), mmseg's train pipeline, then
/// normalized with `norm` (default ImageNet's, as mmseg; Segmenter uses 0.5/0.5) and padded to crop x crop
/// (labels padded with 255). Evaluation (variable sizes) is not batched here: use seg_eval_resize per image.
class SegmentationSource : public SampleSource {
 public:
  SegmentationSource(std::vector<SegmentationPair> pairs, SegTrainConfig cfg, bool reduce_zero = true,
                     Normalization norm = {});
  int64_t size() const override { return static_cast<int64_t>(pairs_.size()); }
  std::array<int64_t, 3> image_shape() const override { return {3, cfg_.crop, cfg_.crop}; }
  std::array<int64_t, 2> label_map_shape() const override { return {cfg_.crop, cfg_.crop}; }
  std::string describe(int64_t index) const override { return pairs_[static_cast<size_t>(index)].image; }
  int64_t load(int64_t index, SampleRng& rng, float* image) const override;
  void load_with_label_map(int64_t index, SampleRng& rng, float* image, int64_t* label_map) const override;

 private:
  std::vector<SegmentationPair> pairs_;
  SegTrainConfig cfg_;
  bool reduce_zero_;
  Normalization norm_;
};

/// In-memory gray images (Fashion-MNIST) with an optional horizontal flip, normalized with one mean/std.
class IdxSource : public SampleSource {
 public:
  /// `images` and `labels` must outlive the source.
  IdxSource(const IdxImages& images, const std::vector<uint8_t>& labels, double hflip, float mean, float std);
  int64_t size() const override { return images_.n; }
  std::array<int64_t, 3> image_shape() const override { return {1, images_.rows, images_.cols}; }
  std::string describe(int64_t index) const override { return "idx image " + std::to_string(index); }
  int64_t load(int64_t index, SampleRng& rng, float* image) const override;

 private:
  const IdxImages& images_;
  const std::vector<uint8_t>& labels_;
  double hflip_;
  float mean_, std_;
};

/// Deterministic random images (N(0,1) values from the index) and labels index % classes, for benchmarks.
class SyntheticSource : public SampleSource {
 public:
  SyntheticSource(int64_t n, int64_t classes, std::array<int64_t, 3> shape, uint64_t seed = 0);
  int64_t size() const override { return n_; }
  std::array<int64_t, 3> image_shape() const override { return shape_; }
  std::string describe(int64_t index) const override { return "synthetic " + std::to_string(index); }
  int64_t load(int64_t index, SampleRng& rng, float* image) const override;

 private:
  int64_t n_, classes_;
  std::array<int64_t, 3> shape_;
  uint64_t seed_;
};

}  // namespace vt::data
