#include "data/seg_transforms.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "core/error.h"

namespace vt::data {
namespace {

// mmseg's convert: float multiply-add, clip to 0..255, truncate to uint8.
void convert(cv::Mat& m, double alpha, double beta) {
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  for (int y = 0; y < m.rows; ++y) {
    uint8_t* p = m.ptr<uint8_t>(y);
    for (int x = 0; x < m.cols * m.channels(); ++x) {
      const float v = std::clamp(static_cast<float>(p[x]) * a + b, 0.0f, 255.0f);
      p[x] = static_cast<uint8_t>(v);
    }
  }
}

}  // namespace

cv::Size rescale_size(cv::Size in, double long_side, double short_side) {
  const double scale = std::min(long_side / std::max(in.width, in.height), short_side / std::min(in.width, in.height));
  return {static_cast<int>(in.width * scale + 0.5), static_cast<int>(in.height * scale + 0.5)};
}

cv::Rect seg_random_crop_box(const cv::Mat& label, int crop, double cat_max_ratio, SampleRng& rng) {
  auto draw = [&] {
    const int margin_h = std::max(label.rows - crop, 0), margin_w = std::max(label.cols - crop, 0);
    const int y = static_cast<int>(rng.randint(0, margin_h)), x = static_cast<int>(rng.randint(0, margin_w));
    return cv::Rect(x, y, std::min(crop, label.cols - x), std::min(crop, label.rows - y));
  };
  cv::Rect box = draw();
  if (cat_max_ratio < 1.0) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      std::array<int64_t, 256> count{};
      const cv::Mat roi = label(box);
      for (int y = 0; y < roi.rows; ++y) {
        const uint8_t* p = roi.ptr<uint8_t>(y);
        for (int x = 0; x < roi.cols; ++x) ++count[p[x]];
      }
      count[kIgnoreLabel] = 0;
      int64_t classes = 0, total = 0, most = 0;
      for (int64_t c : count)
        if (c) {
          ++classes;
          total += c;
          most = std::max(most, c);
        }
      if (classes > 1 && static_cast<double>(most) / total < cat_max_ratio) break;
      box = draw();
    }
  }
  return box;
}

void photometric_distortion(cv::Mat& image, SampleRng& rng) {
  auto coin = [&] { return rng.randint(0, 1) == 1; };
  if (coin()) convert(image, 1.0, rng.uniform(-32, 32));
  const bool contrast_first = coin();
  auto contrast = [&] {
    if (coin()) convert(image, rng.uniform(0.5, 1.5), 0);
  };
  if (contrast_first) contrast();
  if (coin()) {
    cv::Mat hsv;
    cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV);
    std::vector<cv::Mat> ch;
    cv::split(hsv, ch);
    convert(ch[1], rng.uniform(0.5, 1.5), 0);
    cv::merge(ch, hsv);
    cv::cvtColor(hsv, image, cv::COLOR_HSV2RGB);
  }
  if (coin()) {
    cv::Mat hsv;
    cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV);
    const int delta = static_cast<int>(rng.randint(-18, 17));  // np.random.randint(-18, 18): high exclusive
    for (int y = 0; y < hsv.rows; ++y) {
      uint8_t* p = hsv.ptr<uint8_t>(y);
      for (int x = 0; x < hsv.cols; ++x) p[3 * x] = static_cast<uint8_t>(((p[3 * x] + delta) % 180 + 180) % 180);
    }
    cv::cvtColor(hsv, image, cv::COLOR_HSV2RGB);
  }
  if (!contrast_first) contrast();
}

void seg_train_augment(cv::Mat& image, cv::Mat& label, const SegTrainConfig& cfg, SampleRng& rng) {
  VT_CHECK(image.type() == CV_8UC3 && label.type() == CV_8UC1 && image.size() == label.size(),
           "[data] segmentation sample: image ", image.cols, "x", image.rows, " and label ", label.cols, "x",
           label.rows, " must be RGB and 8-bit single-channel of the same size");
  const double ratio = rng.uniform(cfg.ratio_min, cfg.ratio_max);
  // mmseg RandomResize truncates the ratio-scaled target scale to integers before the keep-ratio rescale.
  const cv::Size size =
      rescale_size(image.size(), static_cast<int>(cfg.scale_long * ratio), static_cast<int>(cfg.scale_short * ratio));
  cv::Mat img, lab;
  cv::resize(image, img, size, 0, 0, cv::INTER_LINEAR);
  cv::resize(label, lab, size, 0, 0, cv::INTER_NEAREST);
  const cv::Rect box = seg_random_crop_box(lab, cfg.crop, cfg.cat_max_ratio, rng);
  img = img(box).clone();
  lab = lab(box).clone();
  if (rng.uniform() < cfg.flip) {
    cv::flip(img, img, 1);
    cv::flip(lab, lab, 1);
  }
  if (cfg.photometric) photometric_distortion(img, rng);
  image = img;
  label = lab;
}

cv::Mat seg_eval_resize(const cv::Mat& image, int long_side, int short_side) {
  cv::Mat out;
  cv::resize(image, out, rescale_size(image.size(), long_side, short_side), 0, 0, cv::INTER_LINEAR);
  return out;
}

void seg_to_tensors(const cv::Mat& image, const cv::Mat& label, int crop, float* image_out, int64_t* label_out,
                    const Normalization& norm) {
  VT_CHECK(image.cols <= crop && image.rows <= crop && label.size() == image.size(), "[data] segmentation sample ",
           image.cols, "x", image.rows, " does not fit the ", crop, " crop");
  // mmseg normalizes on the 0-255 scale; scaling in double gives ImageNet's 123.675f, 58.395f, … exactly.
  float mean[3], stdv[3];
  for (int c = 0; c < 3; ++c) {
    mean[c] = static_cast<float>(static_cast<double>(norm.mean[c]) * 255.0);
    stdv[c] = static_cast<float>(static_cast<double>(norm.std[c]) * 255.0);
  }
  const int64_t plane = static_cast<int64_t>(crop) * crop;
  for (int c = 0; c < 3; ++c) std::fill(image_out + c * plane, image_out + (c + 1) * plane, 0.0f);
  std::fill(label_out, label_out + plane, static_cast<int64_t>(kIgnoreLabel));
  for (int y = 0; y < image.rows; ++y) {
    const uint8_t* p = image.ptr<uint8_t>(y);
    const uint8_t* l = label.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols; ++x) {
      for (int c = 0; c < 3; ++c) image_out[c * plane + y * crop + x] = (p[3 * x + c] - mean[c]) / stdv[c];
      label_out[y * crop + x] = l[x];
    }
  }
}

}  // namespace vt::data
