#include "data/loader.h"

#include "data/normalize_erase.h"

#include <spdlog/spdlog.h>

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <opencv2/core/utility.hpp>

namespace vt::data {

void tune_process_for_loading() {
  // The pool parallelises over samples; OpenCV's own threads inside every worker would oversubscribe the
  // cores (PyTorch users call cv2.setNumThreads(0) in DataLoader workers for the same reason).
  cv::setNumThreads(0);
  // Every sample allocates and frees image buffers of 0.1-1 MB. With glibc's defaults these are mmap'd or
  // trimmed from the heap top and page-faulted back in each time: measured 2.5x slower per image here.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

Loader::Loader(const SampleSource& source, Sampler sampler, LoaderOptions options)
    : source_(source),
      sampler_(std::move(sampler)),
      opt_(options),
      shape_(source.image_shape()),
      label_map_(source.label_map_shape()),
      pixels_(options.pixels && source.yields_pixels()) {
  VT_CHECK(opt_.batch_size > 0, "[data] loader: batch_size must be positive, got ", opt_.batch_size);
  VT_CHECK(opt_.threads >= 1, "[data] loader: threads must be >= 1, got ", opt_.threads);
  VT_CHECK(opt_.prefetch_batches >= 1, "[data] loader: prefetch_batches must be >= 1");
  VT_CHECK(source.size() > 0, "[data] loader: the dataset is empty");
  tune_process_for_loading();
}

Loader::~Loader() { stop_workers(); }

void Loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

int64_t Loader::rows_in(int64_t batch) const { return std::min(opt_.batch_size, positions_ - batch * opt_.batch_size); }

void Loader::start_epoch(int64_t epoch) {
  stop_workers();
  order_ = sampler_(epoch);
  for (int64_t i : order_)
    VT_CHECK(i >= 0 && i < source_.size(), "[data] sampler index ", i, " outside the dataset of ", source_.size());
  const int64_t n = static_cast<int64_t>(order_.size()), B = opt_.batch_size;
  epoch_ = epoch;
  num_batches_ = opt_.drop_last ? n / B : (n + B - 1) / B;
  positions_ = opt_.drop_last ? num_batches_ * B : n;
  next_position_ = consumed_ = 0;
  stop_ = false;
  error_ = nullptr;
  slots_.assign(static_cast<size_t>(opt_.prefetch_batches), Slot{});
  for (int t = 0; t < opt_.threads; ++t) threads_.emplace_back([this] { worker(); });
}

std::optional<int64_t> Loader::load_with_fallback(int64_t position, const SampleOut& out) {
  SampleRng rng(opt_.seed, epoch_, position, opt_.stream);
  const int64_t n = source_.size();
  int64_t index = order_[static_cast<size_t>(position)];
  // A bad file is replaced by the next index of the dataset: the same choice for any thread count.
  for (int64_t attempt = 0;; ++attempt) {
    try {
      if (out.pixels) return source_.load_pixels(index, rng, out.pixels, out.erasing);
      if (!out.label_map) return source_.load(index, rng, out.image);
      source_.load_with_label_map(index, rng, out.image, out.label_map);
      return 0;
    } catch (const BadSampleError& e) {
      std::lock_guard<std::mutex> lock(mu_);
      if (bad_.insert(source_.describe(index)).second) spdlog::warn("[data] skipping bad file: {}", e.what());
      VT_CHECK(static_cast<int64_t>(bad_.size()) <= opt_.max_bad_files, "[data] ", bad_.size(),
               " bad files, more than max_bad_files = ", opt_.max_bad_files, "; the last: ", e.what());
      if (!opt_.replace_bad) return std::nullopt;
      VT_CHECK(attempt < n, "[data] every file of the dataset is bad");
    }
    rng = SampleRng(opt_.seed, epoch_, position, opt_.stream);
    index = (index + 1) % n;
  }
}

void Loader::worker() {
  const int64_t per_image = shape_[0] * shape_[1] * shape_[2], per_map = label_map_[0] * label_map_[1];
  for (;;) {
    int64_t position, batch;
    SampleOut out;
    Slot* slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_ || error_ || next_position_ >= positions_) return;
      position = next_position_++;
      batch = position / opt_.batch_size;
      work_cv_.wait(lock, [&] { return stop_ || error_ || batch < consumed_ + opt_.prefetch_batches; });
      if (stop_ || error_) return;
      slot = &slots_[static_cast<size_t>(batch % opt_.prefetch_batches)];
      if (slot->batch != batch) {
        const int64_t rows = rows_in(batch);
        slot->batch = batch;
        slot->remaining = rows;
        slot->images = pixels_ ? Tensor::empty({rows, shape_[1], shape_[2], shape_[0]}, DType::u8)
                               : Tensor::empty({rows, shape_[0], shape_[1], shape_[2]});
        if (pixels_) slot->erasing = Tensor::empty({rows, kErasingColumns}, DType::i64);
        slot->left_out.assign(static_cast<size_t>(rows), 0);
        slot->labels = per_map ? Tensor::empty({rows, label_map_[0], label_map_[1]}, DType::i64)
                               : Tensor::empty({rows}, DType::i64);
      }
      const int64_t row = position - batch * opt_.batch_size;
      if (pixels_) {
        out.pixels = slot->images.data<uint8_t>() + row * per_image;
        out.erasing = slot->erasing.data<int64_t>() + row * kErasingColumns;
      } else {
        out.image = slot->images.data<float>() + row * per_image;
      }
      if (per_map) out.label_map = slot->labels.data<int64_t>() + row * per_map;
    }
    // The first error wins; every waiter wakes up to see it.
    auto fail = [&](std::exception_ptr e) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::move(e);
      ready_cv_.notify_all();
      work_cv_.notify_all();
    };
    auto wrapped = [&](const char* what) {
      const int64_t index = order_[static_cast<size_t>(position)];
      return std::make_exception_ptr(
          Error(detail::concat("[data] loading sample ", index, " (", source_.describe(index), ") failed: ", what)));
    };
    try {
      const std::optional<int64_t> label = load_with_fallback(position, out);
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t row = position - batch * opt_.batch_size;
      if (!label) {
        slot->left_out[static_cast<size_t>(row)] = 1;
      } else if (!per_map) {
        slot->labels.data<int64_t>()[row] = *label;
      }
      if (--slot->remaining == 0) ready_cv_.notify_all();
    } catch (const Error& e) {
      const std::string name = source_.describe(order_[static_cast<size_t>(position)]);
      const bool named = std::string(e.what()).find(name) != std::string::npos;
      return fail(named ? std::current_exception() : wrapped(e.what()));
    } catch (const std::exception& e) {
      return fail(wrapped(e.what()));
    } catch (...) {
      return fail(wrapped("unknown exception"));
    }
  }
}

namespace {

// The rows of `t` (dim 0) whose `left_out` flag is 0, moved to the front; `kept` of them.
Tensor keep_rows(const Tensor& t, const std::vector<uint8_t>& left_out, int64_t kept) {
  if (!t.defined()) return t;
  const size_t row_bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype()) / left_out.size();
  auto* base = static_cast<uint8_t*>(t.raw_data());
  size_t to = 0;
  for (size_t from = 0; from < left_out.size(); ++from)
    if (!left_out[from]) std::memmove(base + row_bytes * to++, base + row_bytes * from, row_bytes);
  return t.slice(0, 0, kept).contiguous();
}

}  // namespace

bool Loader::next(Batch& out) {
  std::unique_lock<std::mutex> lock(mu_);
  VT_CHECK(!threads_.empty() || consumed_ >= num_batches_ || error_, "[data] loader: call start_epoch first");
  for (;;) {
    if (consumed_ >= num_batches_ && !error_) return false;
    Slot& slot = slots_[static_cast<size_t>(consumed_ % opt_.prefetch_batches)];
    ready_cv_.wait(lock, [&] { return error_ || (slot.batch == consumed_ && slot.remaining == 0); });
    if (error_) {
      std::exception_ptr e = error_;
      lock.unlock();
      stop_workers();
      std::rethrow_exception(e);
    }
    const int64_t rows = static_cast<int64_t>(slot.left_out.size());
    const int64_t kept = rows - std::count(slot.left_out.begin(), slot.left_out.end(), uint8_t{1});
    if (kept > 0) {
      out.images = kept < rows ? keep_rows(slot.images, slot.left_out, kept) : std::move(slot.images);
      out.labels = kept < rows ? keep_rows(slot.labels, slot.left_out, kept) : std::move(slot.labels);
      out.erasing = kept < rows ? keep_rows(slot.erasing, slot.left_out, kept) : std::move(slot.erasing);
    }
    slot.images = slot.labels = slot.erasing = Tensor();
    slot.batch = -1;
    ++consumed_;
    work_cv_.notify_all();
    if (kept > 0) return true;  // else: every row was a bad file, on to the next batch
  }
}

std::vector<std::string> Loader::bad_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {bad_.begin(), bad_.end()};
}

}  // namespace vt::data
