#include "data/sources.h"

#include <algorithm>
#include <cmath>

#include "data/image_decode.h"
#include "data/jpeg_region.h"
#include "data/normalize_erase.h"

namespace vt::data {

ClassificationTransform train_transform(int size) {
  ClassificationTransform t;
  t.train = true;
  t.size = size;
  return t;
}

ClassificationTransform deit_train_transform(int size) {
  ClassificationTransform t = train_transform(size);
  t.auto_augment = "rand-m9-mstd0.5-inc1";
  t.color_jitter = 0.3;  // DeiT's value; unused while RandAugment is on
  return t;
}

ClassificationTransform eval_transform(int size, double crop_pct) {
  ClassificationTransform t;
  t.train = false;
  t.size = size;
  t.crop_pct = crop_pct;
  t.dct_downscale = false;
  return t;
}

ImageFileSource::ImageFileSource(std::vector<LabeledFile> files, ClassificationTransform transform)
    : files_(std::move(files)), t_(transform) {
  VT_CHECK(t_.size > 0, "[data] transform size must be positive");
  if (t_.train && !t_.auto_augment.empty()) {
    rand_augment_ = parse_rand_augment(t_.auto_augment);
    for (int c = 0; c < 3; ++c)  // timm's img_mean: min(255, round(255 * mean))
      rand_augment_.fill[c] = static_cast<uint8_t>(std::min(255L, std::lround(255.0 * t_.norm.mean[c])));
    rand_augment_on_ = true;
  }
}

TrainImageDraw ImageFileSource::draw_train(int width, int height, SampleRng& rng) const {
  TrainImageDraw d;
  d.box = random_resized_crop_box(width, height, rng, t_.crop);
  d.flip = rng.bernoulli(t_.hflip);
  if (rand_augment_on_) d.augment = draw_rand_augment(rand_augment_, rng);
  else if (t_.color_jitter > 0) d.augment = draw_color_jitter(t_.color_jitter, t_.color_jitter, t_.color_jitter, rng);
  return d;
}

cv::Mat ImageFileSource::transformed(int64_t index, SampleRng& rng) const {
  const std::string& path = files_[static_cast<size_t>(index)].path;
  try {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    const ImageInfo info = peek_image(bytes, path, t_.max_image_pixels);
    if (!t_.train) {
      int min_w = 0, min_h = 0;
      if (t_.dct_downscale) {
        const int scale_size = static_cast<int>(std::floor(t_.size / t_.crop_pct));
        const double s = static_cast<double>(scale_size) / std::min(info.width, info.height);
        min_w = static_cast<int>(std::ceil(info.width * s));
        min_h = static_cast<int>(std::ceil(info.height * s));
      }
      return eval_resize_crop(decode_rgb(bytes, path, min_w, min_h, t_.max_image_pixels), t_.size, t_.crop_pct,
                              t_.filter);
    }
    const TrainImageDraw draw = draw_train(info.width, info.height, rng);
    const CropBox& box = draw.box;
    cv::Mat img;
    CropBox b = box;
    if (t_.crop_decode && info.format == ImageFormat::jpeg) {
      JpegRegion region = decode_jpeg_region(bytes, path, info.width, info.height, box, t_.dct_downscale ? t_.size : 0);
      img = region.pixels;
      b = region.crop;
    }
    if (!img.empty()) {
      // Only the crop was decoded.
    } else if (t_.dct_downscale) {
      // Decode only as large as the crop needs: the crop must keep at least `size` pixels on each side.
      img = decode_rgb(bytes, path, static_cast<int>(std::ceil(static_cast<double>(info.width) * t_.size / box.width)),
                       static_cast<int>(std::ceil(static_cast<double>(info.height) * t_.size / box.height)),
                       t_.max_image_pixels);
      if (img.cols != info.width || img.rows != info.height) {
        const double sx = static_cast<double>(img.cols) / info.width, sy = static_cast<double>(img.rows) / info.height;
        const int x0 = static_cast<int>(std::lround(box.x * sx)), y0 = static_cast<int>(std::lround(box.y * sy));
        const int x1 = std::min(img.cols, static_cast<int>(std::lround((box.x + box.width) * sx)));
        const int y1 = std::min(img.rows, static_cast<int>(std::lround((box.y + box.height) * sy)));
        b = {x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0)};
      }
    } else {
      img = decode_rgb(bytes, path, 0, 0, t_.max_image_pixels);
    }
    cv::Mat out = t_.exact_train_resize ? crop_and_resize(img, b, t_.size, t_.filter)
                                        : crop_and_fast_resize(img, b, t_.size, t_.filter);
    if (draw.flip) out = hflip(out);
    return draw.augment.steps.empty() ? out : apply_aug_draw(out, draw.augment, rand_augment_);
  } catch (const BadSampleError&) {
    throw;
  } catch (...) {
    throw BadSampleError(decode_failure_message(path));
  }
}

int64_t ImageFileSource::load(int64_t index, SampleRng& rng, float* image) const {
  const cv::Mat img = transformed(index, rng);
  to_normalized_chw(img, t_.norm, image);
  if (t_.train && t_.erasing.probability > 0) random_erase(image, 3, t_.size, t_.size, rng, t_.erasing);
  return files_[static_cast<size_t>(index)].label;
}

int64_t ImageFileSource::load_pixels(int64_t index, SampleRng& rng, uint8_t* pixels, int64_t* erasing) const {
  VT_CHECK(t_.train, "[data] ", describe(index), ": 8-bit pixels are the training path");
  const cv::Mat img = transformed(index, rng);
  VT_CHECK(img.type() == CV_8UC3 && img.rows == t_.size && img.cols == t_.size, "[data] ", describe(index),
           ": transformed to ", img.cols, "x", img.rows, "x", img.channels(), ", expected ", t_.size, "x", t_.size,
           "x3");
  cv::Mat dst(t_.size, t_.size, CV_8UC3, pixels);
  img.copyTo(dst);
  // The same draws as load(): erasing comes after every image choice in the sample's stream.
  store_erasing(t_.erasing.probability > 0 ? draw_random_erasing(t_.size, t_.size, rng, t_.erasing) : ErasingDraw{},
                erasing);
  return files_[static_cast<size_t>(index)].label;
}

SegmentationSource::SegmentationSource(std::vector<SegmentationPair> pairs, SegTrainConfig cfg, bool reduce_zero,
                                       Normalization norm)
    : pairs_(std::move(pairs)), cfg_(cfg), reduce_zero_(reduce_zero), norm_(norm) {}

int64_t SegmentationSource::load(int64_t index, SampleRng&, float*) const {
  VT_FAIL("[data] ", describe(index), ": a segmentation sample has a label map, not one label");
}

void SegmentationSource::load_with_label_map(int64_t index, SampleRng& rng, float* image, int64_t* label_map) const {
  const SegmentationPair& p = pairs_[static_cast<size_t>(index)];
  cv::Mat img, label;
  try {
    img = load_rgb(p.image, cfg_.max_image_pixels);
    label = load_label_png(p.label, cfg_.max_image_pixels);
    VT_CHECK(img.size() == label.size(), "[data] ", p.label, " is ", label.cols, "x", label.rows, " but ", p.image,
             " is ", img.cols, "x", img.rows);
  } catch (...) {
    throw BadSampleError(decode_failure_message(p.image));
  }
  if (reduce_zero_) reduce_zero_label(label);
  seg_train_augment(img, label, cfg_, rng);
  seg_to_tensors(img, label, cfg_.crop, image, label_map, norm_);
}

IdxSource::IdxSource(const IdxImages& images, const std::vector<uint8_t>& labels, double hflip, float mean, float std)
    : images_(images), labels_(labels), hflip_(hflip), mean_(mean), std_(std) {
  VT_CHECK(static_cast<int64_t>(labels.size()) == images.n, "[data] ", images.n, " images but ", labels.size(),
           " labels");
}

int64_t IdxSource::load(int64_t index, SampleRng& rng, float* image) const {
  const int64_t H = images_.rows, W = images_.cols;
  const uint8_t* src = images_.pixels.data() + index * H * W;
  const bool flip = hflip_ > 0 && rng.bernoulli(hflip_);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      image[y * W + x] = (static_cast<float>(src[y * W + (flip ? W - 1 - x : x)]) / 255.0f - mean_) / std_;
  return labels_[static_cast<size_t>(index)];
}

SyntheticSource::SyntheticSource(int64_t n, int64_t classes, std::array<int64_t, 3> shape, uint64_t seed)
    : n_(n), classes_(classes), shape_(shape), seed_(seed) {
  VT_CHECK(n > 0 && classes > 0, "[data] synthetic dataset needs n > 0 and classes > 0");
}

int64_t SyntheticSource::load(int64_t index, SampleRng&, float* image) const {
  const int64_t count = shape_[0] * shape_[1] * shape_[2];
  const uint64_t offset = static_cast<uint64_t>(index) * static_cast<uint64_t>((count + 3) / 4 + 1);
  for (int64_t i = 0; i < count; ++i) image[i] = rng::normal_at(seed_, offset, static_cast<uint64_t>(i));
  return index % classes_;
}

}  // namespace vt::data
