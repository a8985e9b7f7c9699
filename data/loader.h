// The threaded loader: a pool of worker threads fills a bounded ring of batches while the trainer consumes
// them in order. Each sample's random choices come from SampleRng(seed, epoch, position, stream), so batches
// are the same for any thread count or timing. Bad files are counted and either replaced deterministically
// (training) or left out of their batch (evaluation); past max_bad_files, or on any other worker error, next()
// throws with the file named.
#pragma once
#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/image_batches.h"
#include "data/sample_rng.h"

namespace vt::data {

/// Thrown by a SampleSource for a file that cannot be decoded: the loader skips it (up to a limit).
class BadSampleError : public Error {
 public:
  using Error::Error;
};

/// A dataset plus its per-sample transform, seen by the loader. load() must be safe to call concurrently.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// Number of samples.
  virtual int64_t size() const = 0;
  /// The {C, H, W} of every image load() writes.
  virtual std::array<int64_t, 3> image_shape() const = 0;
  /// What to call sample `index` in messages (its file path).
  virtual std::string describe(int64_t index) const = 0;
  /// Writes sample `index` as C*H*W floats to `image` and returns its label; throws BadSampleError for a bad file.
  virtual int64_t load(int64_t index, SampleRng& rng, float* image) const = 0;
  /// {H, W} of a per-pixel label map (segmentation), or {0, 0} for one label per image (classification).
  virtual std::array<int64_t, 2> label_map_shape() const { return {0, 0}; }
  /// True when load_pixels() is implemented (training image files).
  virtual bool yields_pixels() const { return false; }
  /// Writes sample `index` as 8-bit H*W*C pixels, before normalization, plus its RandomErasing draw (5 values,
  /// see data/normalize_erase.h) and returns its label; data::normalize_and_erase finishes it on the device.
  virtual int64_t load_pixels(int64_t index, SampleRng& rng, uint8_t* pixels, int64_t* erasing) const {
    VT_FAIL("[data] ", describe(index), ": this dataset has no 8-bit pixel form");
  }
  /// Segmentation: writes the image and its H*W int64 label map; only called when label_map_shape() is set.
  virtual void load_with_label_map(int64_t index, SampleRng& rng, float* image, int64_t* label_map) const {
    VT_FAIL("[data] ", describe(index), ": this dataset has no label maps");
  }
};

struct LoaderOptions {
  int64_t batch_size = 64;
  int threads = 4;
  int prefetch_batches = 4;  // the bounded queue: batches being built or waiting
  bool drop_last = true;
  uint64_t seed = 0;
  uint64_t stream = 0;          // e.g. the rank, so ranks draw different augmentations
  int64_t max_bad_files = 100;  // more distinct bad files than this stops the run
  /// true: a bad file is replaced by the next index of the dataset (training: full batches). false: its row is left
  /// out, so a batch can be smaller than batch_size and a batch of bad files only is not handed out (evaluation:
  /// every good image counted once, no duplicates).
  bool replace_bad = true;
  /// With a source that yields_pixels(): batches carry u8 [B, H, W, C] pixels and i64 [B, 5] erasing draws, to be
  /// finished by normalize_and_erase where they land (timm's prefetcher split).
  bool pixels = false;
};

/// Process-wide settings for decoding on a thread pool (OpenCV single-threaded, glibc malloc keeping freed
/// image buffers instead of returning them to the OS); the Loader calls it, tools may call it directly.
void tune_process_for_loading();

class Loader {
 public:
  /// An epoch's indices for this rank (see samplers.h).
  using Sampler = std::function<std::vector<int64_t>(int64_t epoch)>;

  /// `source` must outlive the loader.
  Loader(const SampleSource& source, Sampler sampler, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Stops any running epoch and starts building `epoch`'s batches.
  void start_epoch(int64_t epoch);
  /// Batches in the current epoch.
  int64_t batches_per_epoch() const { return num_batches_; }
  /// The next batch of the epoch in order; false when the epoch is done. Rethrows a worker's error. Labels are
  /// i64 [B], or [B, H, W] for a source with label maps. Images are f32 [B, C, H, W], or u8 pixels (options.pixels).
  /// With replace_bad off, B counts only the good rows.
  bool next(Batch& out);
  /// Paths of the distinct bad files met so far.
  std::vector<std::string> bad_files() const;

 private:
  struct Slot {
    int64_t batch = -1, remaining = 0;
    Tensor images, labels, erasing;
    std::vector<uint8_t> left_out;  // per row: 1 = a bad file (replace_bad off)
  };
  struct SampleOut {  // where one sample goes in its slot
    float* image = nullptr;
    uint8_t* pixels = nullptr;
    int64_t* erasing = nullptr;
    int64_t* label_map = nullptr;
  };
  void stop_workers();
  void worker();
  int64_t rows_in(int64_t batch) const;
  /// The label, or nothing when the file is bad and replace_bad is off.
  std::optional<int64_t> load_with_fallback(int64_t position, const SampleOut& out);

  const SampleSource& source_;
  Sampler sampler_;
  LoaderOptions opt_;
  std::array<int64_t, 3> shape_;
  std::array<int64_t, 2> label_map_;
  bool pixels_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<std::thread> threads_;
  std::vector<Slot> slots_;
  std::vector<int64_t> order_;
  int64_t epoch_ = 0, num_batches_ = 0, positions_ = 0, next_position_ = 0, consumed_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::set<std::string> bad_;
};

}  // namespace vt::data
