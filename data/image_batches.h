// Batches of small in-memory u8 images (Fashion-MNIST) as normalised f32 tensors, with per-sample random
// horizontal flips. Shuffling and flips are pure functions of (seed, epoch, index), so a run is reproducible
// whatever the thread timing, and resuming at (epoch, step) replays the same batches.
#pragma once
#include <cstdint>
#include <future>
#include <vector>

#include "tensor/tensor.h"

namespace vt::data {

struct Batch {
  Tensor images;   // f32 [B, 1, H, W], normalised
  Tensor labels;   // i64 [B]
  Tensor erasing;  // i64 [B, 5] RandomErasing draws when images are u8 pixels (data/normalize_erase.h)
};

struct ImageSet {
  int64_t n = 0, rows = 0, cols = 0;
  const uint8_t* pixels = nullptr;  // [n, rows, cols]
  const uint8_t* labels = nullptr;  // [n]
};

class ImageBatches {
 public:
  /// `train`: shuffle each epoch, drop the last partial batch, apply flips with probability hflip.
  ImageBatches(ImageSet set, int64_t batch_size, bool train, double hflip, double mean, double std, uint64_t seed);
  int64_t batches_per_epoch() const;
  /// Batch `step` of `epoch`. The next batch is prepared on a worker thread while the caller trains.
  Batch get(int64_t epoch, int64_t step);

 private:
  Batch build(int64_t epoch, int64_t step) const;
  std::vector<int64_t> order(int64_t epoch) const;

  ImageSet set_;
  int64_t batch_size_;
  bool train_;
  double hflip_, mean_, std_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> order_;
  int64_t prefetched_epoch_ = -1, prefetched_step_ = -1;
  std::future<Batch> prefetched_;
};

}  // namespace vt::data
