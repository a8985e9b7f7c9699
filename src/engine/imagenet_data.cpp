#include "engine/imagenet_data.h"

#include <numeric>

#include "core/error.h"
#include "data/datasets.h"
#include "data/normalize_erase.h"
#include "data/samplers.h"

namespace vt::engine {

namespace {

constexpr uint64_t kMixStream = 0x6d6978;  // "mix": the batch-level draws, apart from the per-sample streams

// data.train_limit / test_limit: `limit` files evenly spaced over the class-sorted list, so every class keeps its
// share (the first `limit` would be the first classes only); 0 or at least the list's size: all of them.
std::vector<data::LabeledFile> limited(std::vector<data::LabeledFile> files, int64_t limit) {
  const auto n = static_cast<int64_t>(files.size());
  if (limit <= 0 || limit >= n) return files;
  std::vector<data::LabeledFile> out;
  out.reserve(static_cast<size_t>(limit));
  for (int64_t i = 0; i < limit; ++i) out.push_back(std::move(files[static_cast<size_t>(i * n / limit)]));
  return out;
}

data::ClassificationTransform eval_transform(const io::DataConfig& d, int size) {
  data::ClassificationTransform t = data::eval_transform(size, d.crop_pct);
  t.norm = normalization(d);
  t.max_image_pixels = d.max_image_pixels;
  return t;
}

data::ClassificationTransform train_transform(const io::DataConfig& d, int size) {
  data::ClassificationTransform t = data::train_transform(size);
  t.norm = normalization(d);
  t.hflip = d.hflip;
  t.auto_augment = d.aa;
  t.erasing.probability = d.reprob;
  t.filter = d.train_interpolation == "bilinear" ? data::PilFilter::bilinear : data::PilFilter::bicubic;
  t.max_image_pixels = d.max_image_pixels;
  return t;
}

}  // namespace

data::Normalization normalization(const io::DataConfig& d) {
  data::Normalization n;
  for (size_t c = 0; c < d.mean.size() && c < 3; ++c) n.mean[c] = static_cast<float>(d.mean[c]);
  for (size_t c = 0; c < d.std.size() && c < 3; ++c) n.std[c] = static_cast<float>(d.std[c]);
  return n;
}

data::Loader::Sampler train_sampler(int64_t n, uint64_t seed, int rank, int world) {
  if (world == 1) return [n, seed](int64_t epoch) { return data::shuffled_order(n, seed, epoch); };
  data::DistributedSamplerOptions o;
  o.rank = rank;
  o.world = world;
  o.seed = seed;
  return [n, o](int64_t epoch) { return data::distributed_indices(n, o, epoch); };
}

data::LoaderOptions train_loader_options(const io::Config& cfg, int rank) {
  data::LoaderOptions lo;
  lo.batch_size = cfg.train.batch_size;
  lo.threads = std::max(1, cfg.data.workers);
  lo.seed = static_cast<uint64_t>(cfg.train.seed);
  lo.stream = static_cast<uint64_t>(rank);  // each rank its own augmentations
  lo.max_bad_files = cfg.data.max_bad_files;
  return lo;
}

bool uses_image_folder(const io::Config& cfg) {
  return cfg.data.dataset == "imagefolder" || cfg.data.dataset == "imagenet";
}

ImageNetData::ImageNetData(const io::Config& cfg, int img_size, Device device, bool with_train, int rank, int world)
    : seed_(static_cast<uint64_t>(cfg.train.seed)), epochs_(cfg.train.epochs) {
  const auto& d = cfg.data;
  val_dir_ = data::find_split_dir(d.data_dir, "val");
  world_ = world;
  data::ClassificationFiles val = data::image_folder(val_dir_);
  classes_ = val.classes.size();
  eval_source_ = std::make_unique<data::ImageFileSource>(limited(std::move(val.samples), d.test_limit),
                                                         eval_transform(d, img_size));
  data::LoaderOptions eo;
  eo.threads = std::max(1, d.workers);
  eo.seed = seed_;
  eo.batch_size = cfg.eval.batch_size;
  eo.drop_last = false;
  eo.max_bad_files = d.max_bad_files;
  eo.replace_bad = false;  // a bad val/ image is left out of the metrics, not replaced by its neighbour
  const int64_t n_val = eval_source_->size();
  data::DistributedSamplerOptions eval_shard;  // no padding: exact totals once the ranks' sums are added
  eval_shard.rank = rank;
  eval_shard.world = world;
  eval_shard.shuffle = false;
  eval_shard.pad = false;
  eval_loader_ = std::make_unique<data::Loader>(
      *eval_source_,
      [n_val, eval_shard](int64_t) {
        if (eval_shard.world > 1) return data::distributed_indices(n_val, eval_shard, 0);
        std::vector<int64_t> all(static_cast<size_t>(n_val));
        std::iota(all.begin(), all.end(), int64_t{0});
        return all;
      },
      eo);
  if (!with_train) return;

  data::ClassificationFiles train = data::image_folder(data::find_split_dir(d.data_dir, "train"));
  VT_CHECK(val.classes == train.classes, "[data] ", d.data_dir, ": val/ and train/ have different class folders");
  train.samples = limited(std::move(train.samples), d.train_limit);
  const int64_t n = static_cast<int64_t>(train.samples.size());
  train_source_ = std::make_unique<data::ImageFileSource>(std::move(train.samples), train_transform(d, img_size));

  data::Loader::Sampler sampler;
  if (d.aug_repeats > 0) {
    data::RepeatedAugOptions o;
    o.repeats = d.aug_repeats;
    o.seed = seed_;
    o.rank = rank;
    o.world = world;
    o.selected_round = n >= 256 ? 256 : 0;  // DeiT rounds down to 256s, which would leave a tiny set empty
    sampler = [n, o](int64_t epoch) { return data::repeated_aug_indices(n, o, epoch); };
  } else {
    sampler = train_sampler(n, seed_, rank, world);
  }
  train_batches_ = static_cast<int64_t>(sampler(0).size()) / cfg.train.batch_size;  // same length every epoch
  data::LoaderOptions lo = train_loader_options(cfg, rank);
  lo.pixels = true;  // u8 over the bus; normalize + erasing in train_batch on the training device
  train_loader_ = std::make_unique<data::Loader>(*train_source_, sampler, lo);
  prefetcher_ = std::make_unique<data::DevicePrefetcher>(*train_loader_, device);

  if (d.mixup > 0 || d.cutmix > 0) {
    VT_CHECK(cfg.train.batch_size % 2 == 0, "[config] Mixup/CutMix needs an even train.batch_size, got ",
             cfg.train.batch_size);
    data::MixupConfig m;
    m.mixup_alpha = d.mixup;
    m.cutmix_alpha = d.cutmix;
    m.prob = d.mixup_prob;
    m.switch_prob = d.mixup_switch_prob;
    m.label_smoothing = cfg.optim.smoothing;
    m.num_classes = cfg.model.num_classes > 0 ? cfg.model.num_classes : static_cast<int64_t>(classes_);
    mix_ = m;
  }
}

ImageNetData::~ImageNetData() = default;

int64_t ImageNetData::eval_size() const { return eval_source_->size(); }

int64_t ImageNetData::eval_bad_files() const { return static_cast<int64_t>(eval_loader_->bad_files().size()); }

int64_t ImageNetData::bad_files() const {
  const size_t n = eval_loader_->bad_files().size() + (train_loader_ ? train_loader_->bad_files().size() : 0);
  return static_cast<int64_t>(n);
}

data::Batch ImageNetData::train_batch(int64_t epoch, int64_t step) {
  VT_CHECK(prefetcher_, "[data] this ImageNetData was built for evaluation only");
  if (epoch != epoch_ || step < next_step_) {
    prefetcher_->start_epoch(epoch);
    epoch_ = epoch;
    next_step_ = 0;
  }
  data::Batch b;
  for (; next_step_ <= step; ++next_step_)
    VT_CHECK(prefetcher_->next(b), "[data] epoch ", epoch, " has no batch ", step);
  if (step + 1 == train_batches_ &&
      epoch + 1 < epochs_) {  // the loader starts on the next epoch while this one ends (eval, checkpoints)
    prefetcher_->start_epoch(epoch + 1);
    epoch_ = epoch + 1;
    next_step_ = 0;
  }
  b.images = data::normalize_and_erase(b.images, b.erasing, train_source_->normalization());
  b.erasing = Tensor();
  if (mix_) {
    data::SampleRng rng(seed_, epoch, step, kMixStream);
    const data::MixDraw draw =
        data::draw_mix(*mix_, static_cast<int>(b.images.size(2)), static_cast<int>(b.images.size(3)), rng);
    b.labels = data::apply_mix(b.images, b.labels, draw, *mix_);
  }
  return b;
}

void ImageNetData::for_each_eval_batch(const std::function<void(const data::Batch&)>& fn) {
  eval_loader_->start_epoch(0);
  data::Batch b;
  int64_t images = 0;
  while (eval_loader_->next(b)) {
    images += b.images.size(0);
    fn(b);
  }
  // With several ranks one rank's share may be all bad; the summed count is what matters there.
  VT_CHECK(images > 0 || world_ > 1, "[data] ", val_dir_, ": every image is unreadable (", eval_bad_files(),
           " bad files)");
}

}  // namespace vt::engine
