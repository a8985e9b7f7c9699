#include "data/image_batches.h"

#include <algorithm>
#include <numeric>
#include <opencv2/core.hpp>

#include "core/rng.h"

namespace vt::data {

ImageBatches::ImageBatches(ImageSet set, int64_t batch_size, bool train, double hflip, double mean, double std,
                           uint64_t seed)
    : set_(set), batch_size_(batch_size), train_(train), hflip_(hflip), mean_(mean), std_(std), seed_(seed) {
  VT_CHECK(batch_size > 0, "[data] batch_size must be positive, got ", batch_size);
  VT_CHECK(set.n > 0, "[data] the dataset is empty");
}

int64_t ImageBatches::batches_per_epoch() const {
  return train_ ? set_.n / batch_size_ : (set_.n + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> ImageBatches::order(int64_t epoch) const {
  std::vector<int64_t> idx(set_.n);
  std::iota(idx.begin(), idx.end(), 0);
  if (!train_) return idx;
  // Fisher-Yates driven by Philox counters of (seed, epoch): reproducible and independent of threads.
  const uint64_t key = seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch);
  for (int64_t i = set_.n - 1; i > 0; --i) {
    uint64_t r = (static_cast<uint64_t>(rng::bits_at(key, 0, 2 * i)) << 32) | rng::bits_at(key, 0, 2 * i + 1);
    std::swap(idx[i], idx[r % static_cast<uint64_t>(i + 1)]);
  }
  return idx;
}

Batch ImageBatches::build(int64_t epoch, int64_t step) const {
  const int64_t begin = step * batch_size_, end = std::min(set_.n, begin + batch_size_), B = end - begin;
  const int64_t H = set_.rows, W = set_.cols;
  Batch b{Tensor::empty({B, 1, H, W}), Tensor::empty({B}, DType::i64), Tensor()};
  float* img = b.images.data<float>();
  int64_t* lab = b.labels.data<int64_t>();
  const float scale = static_cast<float>(1.0 / (255.0 * std_)), shift = static_cast<float>(mean_ / std_);
  const uint64_t flip_key = seed_ ^ 0xF11Bull;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t src = order_[begin + i];
    cv::Mat in(static_cast<int>(H), static_cast<int>(W), CV_8UC1, const_cast<uint8_t*>(set_.pixels + src * H * W));
    cv::Mat out(static_cast<int>(H), static_cast<int>(W), CV_32FC1, img + i * H * W);
    const bool flip =
        train_ && hflip_ > 0 &&
        rng::uniform_at(flip_key, static_cast<uint64_t>(epoch) * static_cast<uint64_t>(set_.n), src) < hflip_;
    if (flip) {
      cv::Mat flipped;
      cv::flip(in, flipped, 1);
      flipped.convertTo(out, CV_32F, scale, -shift);
    } else {
      in.convertTo(out, CV_32F, scale, -shift);
    }
    lab[i] = set_.labels[src];
  }
  return b;
}

Batch ImageBatches::get(int64_t epoch, int64_t step) {
  VT_CHECK(step >= 0 && step < batches_per_epoch(), "[data] step ", step, " out of range");
  if (cached_epoch_ != epoch) {
    if (prefetched_.valid()) prefetched_.wait();
    order_ = order(epoch);
    cached_epoch_ = epoch;
    prefetched_ = {};
  }
  Batch b;
  if (prefetched_.valid() && prefetched_epoch_ == epoch && prefetched_step_ == step) {
    b = prefetched_.get();
  } else {
    if (prefetched_.valid()) prefetched_.wait();
    b = build(epoch, step);
  }
  if (step + 1 < batches_per_epoch()) {
    prefetched_epoch_ = epoch;
    prefetched_step_ = step + 1;
    prefetched_ = std::async(std::launch::async, [this, epoch, step] { return build(epoch, step + 1); });
  }
  return b;
}

}  // namespace vt::data
