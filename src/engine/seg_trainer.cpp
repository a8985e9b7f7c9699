// Segmentation training (see the header): the task; engine/train_loop runs it.
#include "engine/seg_trainer.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "data/datasets.h"
#include "data/loader.h"
#include "data/sources.h"
#include "engine/imagenet_data.h"
#include "engine/run_support.h"
#include "engine/train_loop.h"
#include "engine/timm_weights.h"
#include "models/segmenter.h"
#include "ops/ops.h"

namespace vt::engine {

namespace {

constexpr int64_t kIgnoreIndex = 255;

// mmseg's train pipeline at the crop size, normalised with data.mean/std (empty: ImageNet's, as mmseg). The
// resize scale is (eval.seg_long_side, eval.seg_short_side): Segmenter's --im-size sets both the training scale
// and the evaluation's short side (512 → (2048, 512); ViT-L's 640 → (2560, 640)).
data::SegTrainConfig seg_train_config(const io::Config& cfg) {
  data::SegTrainConfig t;
  t.crop = static_cast<int>(models::segmenter_config(cfg.model, 0).backbone.img_size);
  t.scale_long = cfg.eval.seg_long_side;
  t.scale_short = cfg.eval.seg_short_side;
  t.flip = cfg.data.hflip;
  t.max_image_pixels = cfg.data.max_image_pixels;
  return t;
}

// The first data.train_limit pairs (0: all).
std::vector<data::SegmentationPair> limited(std::vector<data::SegmentationPair> pairs, int64_t limit) {
  if (limit > 0 && static_cast<size_t>(limit) < pairs.size()) pairs.resize(static_cast<size_t>(limit));
  return pairs;
}

// Segmentation as a task of the training loop: ADE20K pairs through the threaded loader, a Segmenter, pixel
// cross-entropy (ignore 255), sliding-window mIoU (the last one written to `out`, the run's summary).
class SegmentationTask final : public TrainTask {
 public:
  SegmentationTask(const io::Config& cfg, const RunStart& run, SegTrainSummary& out)
      : cfg_(cfg),
        out_(out),
        device_(run.group.device),
        comm_(run.group.comm),
        log_(*run.log),
        train_source_(limited(data::ade20k(cfg.data.data_dir, "training"), cfg.data.train_limit), seg_train_config(cfg),
                      /*reduce_zero=*/true, normalization(cfg.data)),
        val_pairs_(data::ade20k(cfg.data.data_dir, "validation")),
        eval_opt_(seg_eval_options(cfg)) {
    // Data parallel: each rank reads its shard of the epoch's order and draws its own augmentations.
    const int rank = run.group.rank, world = run.group.world;
    const int64_t n_train = train_source_.size();
    const data::Loader::Sampler sampler = train_sampler(n_train, static_cast<uint64_t>(cfg.train.seed), rank, world);
    batches_ = static_cast<int64_t>(sampler(0).size()) / cfg.train.batch_size;  // the last partial batch is dropped
    VT_CHECK(batches_ >= 1, "[train] ", n_train, " training images make no batch of train.batch_size ",
             cfg.train.batch_size, world > 1 ? fmt::format(" on each of {} ranks", world) : std::string());
    loader_.emplace(train_source_, sampler, train_loader_options(cfg, rank));
    log_.info("ADE20K {}: {} training pairs ({} updates per epoch), {} validation images{}", cfg.data.data_dir, n_train,
              batches_ / cfg.train.grad_accum_steps, val_pairs_.size(),
              cfg.data.test_limit > 0 ? fmt::format(" (evaluating the first {})", cfg.data.test_limit) : "");
    const models::SegmenterConfig arch = models::segmenter_config(cfg.model, static_cast<uint64_t>(cfg.train.seed));
    model_ = std::make_unique<models::Segmenter>(arch);
    if (cfg.train.model_ema) ema_model_ = std::make_unique<models::Segmenter>(arch);
    log_.info("model {} ({} attention) + {} decoder: {} parameters", cfg.model.name, cfg.model.attention.type,
              cfg.model.decoder.type, model_->num_parameters());
  }

  nn::Module& model() override { return *model_; }
  nn::Module* ema_model() override { return ema_model_.get(); }
  void load_initial_weights() override {  // a timm ViT as the backbone
    const std::string& path = cfg_.model.initial_checkpoint;
    if (path.empty()) return;
    const WeightLoadReport r = load_segmenter_backbone(*model_, path);
    log_.info("backbone {}: loaded{}{}", path,
              r.adapted.empty() ? "" : fmt::format("; {} adapted: {}", r.adapted.size(), fmt::join(r.adapted, ", ")),
              r.ignored.empty() ? "" : fmt::format("; {} unused: {}", r.ignored.size(), fmt::join(r.ignored, ", ")));
  }
  int64_t batches_per_epoch() const override { return batches_; }
  void begin_epoch(int64_t epoch, int64_t first) override {
    epoch_ = epoch;
    next_ = first;
    if (loader_epoch_ == epoch) return;  // started during the last epoch's evaluation
    loader_->start_epoch(epoch);
    loader_epoch_ = epoch;
    data::Batch skipped;
    for (int64_t s = 0; s < first; ++s)  // a resumed run starts mid-epoch: skip the batches done
      VT_CHECK(loader_->next(skipped), "[data] epoch ", epoch, " has no batch ", s);
  }
  void end_epoch(int64_t epoch) override {
    if (epoch + 1 >= cfg_.train.epochs) return;  // the next epoch's first batches are built during evaluation
    loader_->start_epoch(epoch + 1);
    loader_epoch_ = epoch + 1;
  }
  TaskBatch next_batch() override {
    data::Batch b;
    VT_CHECK(loader_->next(b), "[data] epoch ", epoch_, " has no batch ", next_);
    ++next_;
    return {b.images.to(device_), b.labels.to(device_)};
  }
  Tensor loss(const TaskBatch& b) override {
    return ops::pixel_cross_entropy(model_->forward(b.input), b.target, kIgnoreIndex);
  }
  TaskEvaluation evaluate() override {
    // One protocol for every evaluation: eval.seg_* (Segmenter's in-training eval used stride = crop). Data
    // parallel: each rank evaluates its share of the images; every rank gets the summed scores, so the best-
    // checkpoint decision (a collective) is the same on all.
    const SegEvalResult& test = out_.test = evaluate_segmentation(*model_, val_pairs_, eval_opt_, device_, comm_);
    TaskEvaluation e;
    e.value = test.scores.miou;
    e.line = fmt::format("{} ({} images, {:.1f} img/s)", seg_summary_line(test.scores), test.images, test.img_per_s);
    e.scores = {{"miou", test.scores.miou},
                {"macc", test.scores.macc},
                {"aacc", test.scores.aacc},
                {"eval_images", static_cast<double>(test.images)},
                {"eval_img_per_s", test.img_per_s}};
    if (ema_model_) {
      const SegEvalResult ema = evaluate_segmentation(*ema_model_, val_pairs_, eval_opt_, device_, comm_);
      e.line += "; EMA " + seg_summary_line(ema.scores);
      e.ema_scores = {{"ema_miou", ema.scores.miou}, {"ema_macc", ema.scores.macc}, {"ema_aacc", ema.scores.aacc}};
    }
    return e;
  }
  bool better(double value, double best) const override { return value > best; }
  std::string best_text(double best) const override { return fmt::format("best mIoU {:.2f}", best); }
  std::optional<int64_t> bad_files() const override { return static_cast<int64_t>(loader_->bad_files().size()); }

 private:
  const io::Config& cfg_;
  SegTrainSummary& out_;
  const Device device_;
  dist::Communicator* comm_;
  spdlog::logger& log_;
  data::SegmentationSource train_source_;
  const std::vector<data::SegmentationPair> val_pairs_;
  const SegEvalOptions eval_opt_;  // data.test_limit limits the validation images
  int64_t batches_ = 0;
  std::optional<data::Loader> loader_;
  std::unique_ptr<models::Segmenter> model_, ema_model_;
  int64_t epoch_ = 0, next_ = 0, loader_epoch_ = -1;  // loader_epoch_: the epoch the loader is building
};

}  // namespace

SegTrainSummary train_segmentation(const io::Config& given_cfg, const TrainHooks& hooks) {
  const io::Config cfg = resolve_for_world(given_cfg, process_world(hooks.communicator));  // the per-GPU batch
  VT_CHECK(!cfg.model.decoder.type.empty(), "[train] train_segmentation needs model.decoder.type (cbt | linear)");
  return train_task<SegmentationTask, SegTrainSummary>(cfg, hooks);
}

std::string seg_train_report(const SegTrainSummary& s) {
  return fmt::format(
      "validation {} ({} images); best mIoU {:.2f} (epoch {})\ntraining speed {:.1f} img/s over "
      "{:.1f} s\nlog: {}\nmetrics: {}\nweights: {}",
      seg_summary_line(s.test.scores), s.test.images, s.best_metric, s.best_epoch, s.train_img_per_s, s.train_seconds,
      s.log_path, s.metrics_path, s.weights_path);
}

}  // namespace vt::engine
