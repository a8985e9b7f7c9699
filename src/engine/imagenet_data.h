// The ImageNet-style input pipeline of a training run (data.dataset: imagefolder): ImageFolder train/ and val/
// through the threaded loader with timm's transforms, DeiT's repeated-augmentation sampler, and Mixup/CutMix on
// the training device. Every batch is a pure function of (train.seed, epoch, batch index), so a resumed run sees
// the same batches as an uninterrupted one. data.mean/std normalise both splits (empty: ImageNet's); data.train_limit
// and data.test_limit keep that many files of train/ and val/, evenly spaced over the classes.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/device.h"
#include "data/device_prefetcher.h"
#include "data/loader.h"
#include "data/mixup.h"
#include "data/sources.h"
#include "io/config.h"

namespace vt::engine {

/// data.mean / data.std (timm --mean/--std; mmseg's for segmentation); empty keeps ImageNet's.
data::Normalization normalization(const io::DataConfig& d);
/// An epoch's training order for rank `rank` of `world`: a shuffle of (seed, epoch), or with several ranks
/// DistributedSampler's shard of it (padded: every rank the same length).
data::Loader::Sampler train_sampler(int64_t n, uint64_t seed, int rank, int world);
/// The training loader of rank `rank`: train.batch_size, data.workers threads, data.max_bad_files, train.seed with
/// the rank as its augmentation stream.
data::LoaderOptions train_loader_options(const io::Config& cfg, int rank);

/// True when cfg.data.dataset names the ImageFolder layout ("imagefolder", or "imagenet" as the Table 2 configs say).
bool uses_image_folder(const io::Config& cfg);

class ImageNetData {
 public:
  /// Lists data.data_dir's train/ and val/ folders and builds both loaders; `img_size` is the model's input size.
  /// With `with_train` false (evaluation only) just val/ is read, and its class folders define the classes.
  /// Data parallel: rank `rank` of `world` reads its share of both splits (train: DistributedSampler or RASampler
  /// order, padded; val: every image exactly once across the ranks) and draws its own augmentations.
  ImageNetData(const io::Config& cfg, int img_size, Device device, bool with_train = true, int rank = 0, int world = 1);
  ~ImageNetData();
  /// Training batches per epoch (the last partial batch is dropped).
  int64_t train_batches_per_epoch() const { return train_batches_; }
  /// Number of classes found under train/.
  int64_t num_classes() const { return static_cast<int64_t>(classes_); }
  /// Batch `step` of `epoch` on the device. Steps must be asked in order within an epoch (a resumed run starts
  /// mid-epoch: the skipped batches are built and dropped). With Mixup/CutMix on, labels are the f32 soft targets
  /// [B, classes] (label smoothing folded in); otherwise the i64 labels [B]. Handing out an epoch's last batch
  /// starts building the next epoch's first ones.
  data::Batch train_batch(int64_t epoch, int64_t step);
  /// Number of val/ images.
  int64_t eval_size() const;
  /// Distinct unreadable images skipped so far (train and val; each is logged with its path when met).
  int64_t bad_files() const;
  /// Distinct unreadable val/ images met so far: left out of the evaluation batches (not replaced).
  int64_t eval_bad_files() const;
  /// Calls `fn` with each of this rank's val/ batches (host tensors, eval transform, every good image once across
  /// the ranks; a bad one is left out, so a batch can be short).
  void for_each_eval_batch(const std::function<void(const data::Batch&)>& fn);

 private:
  std::unique_ptr<data::ImageFileSource> train_source_, eval_source_;
  std::unique_ptr<data::Loader> train_loader_, eval_loader_;
  std::unique_ptr<data::DevicePrefetcher> prefetcher_;
  std::optional<data::MixupConfig> mix_;
  uint64_t seed_ = 0;
  size_t classes_ = 0;
  int64_t train_batches_ = 0;
  int64_t epochs_ = 0;  // train.epochs: no epoch is started beyond the last
  int64_t epoch_ = -1, next_step_ = 0;
  std::string val_dir_;
  int world_ = 1;
};

}  // namespace vt::engine
