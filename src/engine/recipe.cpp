// Global batch, LR scaling, LR per update, and the trainer's refusal of recipe keys it cannot honour.
#include "engine/recipe.h"

#include <cmath>
#include <string>

#include <spdlog/fmt/fmt.h>

#include "core/error.h"
#include "data/datasets.h"
#include "models/registry.h"
#include "models/segmenter.h"

namespace vt::engine {

io::Config resolve_for_world(const io::Config& cfg, int world) {
  io::Config r = cfg;
  const int64_t global = cfg.train.global_batch_size, accum = cfg.train.grad_accum_steps;
  if (global == 0) return r;
  const int64_t ways = accum * world;
  const std::string split = std::to_string(world) + " process" + (world > 1 ? "es" : "") + " x " +
                            std::to_string(accum) + " accumulation step" + (accum > 1 ? "s" : "");
  VT_CHECK(global % ways == 0, "[config] train.global_batch_size ", global, " does not divide over ", split,
           ": choose a multiple of ", ways, " or another train.grad_accum_steps");
  const int64_t per = global / ways;
  VT_CHECK(cfg.train.batch_size == 0 || cfg.train.batch_size == per, "[config] train.batch_size ", cfg.train.batch_size,
           " per process disagrees with train.global_batch_size ", global, " over ", split, " (", per,
           " per process): set train.batch_size: 0 to derive it, or train.global_batch_size: 0 to keep ",
           "the per-process batch (timm's -b)");
  r.train.batch_size = static_cast<int>(per);
  return r;
}

int64_t global_batch(const io::Config& cfg, int world) {
  VT_CHECK(cfg.train.batch_size > 0,
           "[config] train.batch_size is 0: the config was not resolved for the number "
           "of processes (engine::resolve_for_world)");
  return static_cast<int64_t>(cfg.train.batch_size) * cfg.train.grad_accum_steps * world;
}

std::string describe_batch_and_lr(const io::Config& cfg, int world) {
  const auto& o = cfg.optim;
  const int64_t accum = cfg.train.grad_accum_steps;
  std::string lr = o.lr > 0 ? " (optim.lr)"
                            : fmt::format(" (optim.lr_base {:g} x {} / {}{})", o.lr_base, global_batch(cfg, world),
                                          o.lr_base_size, o.lr_base_scale == "sqrt" ? ", square root" : "");
  return fmt::format("global batch {} = {} per GPU x {} accumulation step{} x {} process{}; lr {:.3e}{}",
                     global_batch(cfg, world), cfg.train.batch_size, accum, accum > 1 ? "s" : "", world,
                     world > 1 ? "es" : "", resolved_lr(cfg, world), lr);
}

double resolved_lr(const io::Config& cfg, int world) {
  const auto& o = cfg.optim;
  if (o.lr > 0) return o.lr;
  const double ratio = static_cast<double>(global_batch(cfg, world)) / static_cast<double>(o.lr_base_size);
  return o.lr_base * (o.lr_base_scale == "sqrt" ? std::sqrt(ratio) : ratio);
}

LrPlan::LrPlan(const io::Config& cfg, int64_t updates_per_epoch, int world)
    : poly_on_(cfg.schedule.sched == "poly"),
      on_updates_(cfg.schedule.sched_on_updates),
      deit_lag_(cfg.schedule.deit_epoch_lag) {
  const auto& s = cfg.schedule;
  sched_.base_lr = resolved_lr(cfg, world);
  sched_.warmup_lr = s.warmup_lr;
  sched_.min_lr = s.min_lr;
  sched_.warmup_prefix = s.warmup_prefix;
  if (on_updates_) {
    // Whole updates, as optim::LrSchedule, so this reproduces it exactly.
    sched_.warmup_t =
        static_cast<double>(static_cast<int64_t>(s.warmup_epochs * static_cast<double>(updates_per_epoch)));
    sched_.total_t = static_cast<double>(updates_per_epoch * cfg.train.epochs);
  } else {
    sched_.warmup_t = s.warmup_epochs;
    sched_.total_t = cfg.train.epochs;
  }
  VT_CHECK(sched_.total_t > sched_.warmup_t, "[config] schedule.warmup_epochs (", s.warmup_epochs,
           ") must be shorter than the run (", cfg.train.epochs, " epochs)");
  poly_ = {sched_.base_lr, s.warmup_lr, s.min_lr, s.poly_power, sched_.warmup_t, sched_.total_t};
}

double LrPlan::lr(int64_t global_step, int64_t epoch) const {
  if (poly_on_) return poly_.at(static_cast<double>(on_updates_ ? global_step : epoch));
  if (on_updates_) return sched_.at(static_cast<double>(global_step));
  return optim::epoch_lr(sched_, epoch, deit_lag_);
}

namespace {

// "model.in_chans is 3 (from the preset deit_tiny_patch16_224)" or "... is 3": where the value came from.
std::string model_value(const char* key, int64_t resolved, int set, const std::string& preset) {
  return std::string("model.") + key + " is " + std::to_string(resolved) +
         (set > 0 ? "" : " (from the preset " + preset + ")");
}

}  // namespace

void check_model_fits_data(const io::Config& cfg) {
  const io::ModelConfig& m = cfg.model;
  const std::string& dataset = cfg.data.dataset;
  if (dataset != "fashion_mnist" && dataset != "imagefolder" && dataset != "imagenet" && dataset != "ade20k")
    return;  // check_supported names an unknown dataset
  const bool segmentation = !m.decoder.type.empty();
  int64_t in_chans = 0, num_classes = 0;
  if (segmentation) {
    const models::SegmenterConfig s = models::segmenter_config(m, 0);
    in_chans = s.backbone.in_chans;
    num_classes = s.num_classes;
  } else {
    const models::ViTConfig v = models::vit_config(m, 0);
    in_chans = v.in_chans;
    num_classes = v.num_classes;
  }
  // Fashion-MNIST is gray (1 channel, 10 classes); ImageFolder and ADE20K images are decoded to RGB.
  const int64_t channels = dataset == "fashion_mnist" ? 1 : 3;
  VT_CHECK(in_chans == channels, "[config] ", model_value("in_chans", in_chans, m.in_chans, m.name),
           " but data.dataset ", dataset, " has ", channels, "-channel images: set model.in_chans: ", channels);
  if (dataset == "fashion_mnist")
    VT_CHECK(num_classes >= 10, "[config] ", model_value("num_classes", num_classes, m.num_classes, m.name),
             " but data.dataset fashion_mnist has 10 classes: set model.num_classes: 10");
  if (dataset == "ade20k")
    VT_CHECK(num_classes == data::kAde20kClasses, "[config] ",
             model_value("num_classes", num_classes, m.num_classes, m.name), " but data.dataset ade20k has ",
             data::kAde20kClasses, " classes: set model.num_classes: ", data::kAde20kClasses);
}

void require_data_dir(const io::Config& cfg) {
  VT_CHECK(!cfg.data.data_dir.empty(),
           "[config] data.data_dir is not set: give the dataset folder (vitrain train "
           "DIR, vitrain validate DIR, or --set data.data_dir=DIR; ImageNet: DIR/train/<wnid>/*.JPEG and "
           "DIR/val/<wnid>/*.JPEG)");
}

void check_supported(const io::Config& cfg) {
  const auto& d = cfg.data;
  std::string missing;
  auto need = [&](bool used, const std::string& what) {
    if (used) missing += (missing.empty() ? "" : ", ") + what;
  };
  if (!cfg.model.decoder.type.empty()) {  // segmentation (engine/seg_trainer): Segmenter's recipe only
    need(d.mixup > 0 || d.cutmix > 0, "data.mixup/cutmix");
    need(!d.aa.empty(), "data.aa");
    need(d.reprob > 0, "data.reprob");
    need(d.aug_repeats > 0, "data.aug_repeats");
    need(cfg.optim.smoothing > 0, "optim.smoothing (set 0: the pixel cross-entropy has no label smoothing)");
    VT_CHECK(missing.empty(), "[train] the segmentation trainer cannot honour: ", missing,
             ". Supported: data.dataset ade20k with mmseg's train pipeline (resize, crop, flip data.hflip, "
             "photometric distortion), data.mean/std, SGD/AdamW with cosine or poly, optim.clip_grad, "
             "train.grad_accum_steps, train.model_ema, train.cuda_graph");
    check_model_fits_data(cfg);
    return;
  }
  if (d.dataset == "lra") {  // sequence classification (engine/sequence_task): Nystromformer's LRA recipe
    const io::AttentionConfig& a = cfg.model.attention;
    need(d.mixup > 0 || d.cutmix > 0, "data.mixup/cutmix");
    need(!d.aa.empty(), "data.aa");
    need(d.reprob > 0, "data.reprob");
    need(d.aug_repeats > 0, "data.aug_repeats");
    need(d.hflip > 0, "data.hflip (set 0)");
    need(!d.mean.empty() || !d.std.empty(), "data.mean/std");
    need(cfg.optim.smoothing > 0, "optim.smoothing (set 0)");
    need(cfg.model.drop_path_rate > 0, "model.drop_path_rate (set 0)");
    need(!cfg.model.initial_checkpoint.empty(), "model.initial_checkpoint");
    need(cfg.model.img_size > 0 || cfg.model.patch_size > 0 || cfg.model.in_chans > 0,
         "model.img_size/patch_size/in_chans (set 0: sequences have no image)");
    need(a.type == "agent_bias", "model.attention.type: agent_bias (its biases need a patch grid; use agent)");
    need(a.type == "bra", "model.attention.type: bra (its regions need a patch grid)");
    need(a.is_mita() && (a.dwc || a.gate), "model.attention.dwc/gate (they need a patch grid)");
    need((a.is_mita() || a.type == "agent") && (a.landmark_pool == "shifted" || a.landmark_pool == "patches"),
         "model.attention.landmark_pool: " + a.landmark_pool + " (sequences have no CLS token: use sequence)");
    VT_CHECK(missing.empty(), "[train] the LRA trainer cannot honour: ", missing,
             ". Supported: data.dataset lra (data.lra_task, data.max_length, data.updates_per_epoch), every "
             "attention kind with landmark_pool sequence, model.pooling mean or cls, model.drop_rate, AdamW/SGD "
             "with cosine or poly, optim.clip_grad, train.grad_accum_steps, train.model_ema, train.cuda_graph");
    return;
  }
  const bool folder = d.dataset == "imagefolder" || d.dataset == "imagenet";
  need(d.dataset != "fashion_mnist" && !folder, "data.dataset: " + d.dataset);
  const bool imagenet_only = d.mixup > 0 || d.cutmix > 0 || !d.aa.empty() || d.reprob > 0 || d.aug_repeats > 0;
  need(!folder && imagenet_only,
       "data.mixup/cutmix/aa/reprob/aug_repeats with fashion_mnist (they need data.dataset: imagefolder)");
  need(d.dataset == "fashion_mnist" && (!d.mean.empty() || !d.std.empty()),
       "data.mean/std with fashion_mnist (it is normalised with its own mean and std)");
  need(d.mixup_mode != "batch", "data.mixup_mode: " + d.mixup_mode);
  need(d.reprob > 0 && d.remode != "pixel", "data.remode: " + d.remode);
  need(d.reprob > 0 && d.recount != 1, "data.recount: " + std::to_string(d.recount));
  need(folder && d.train_interpolation == "random", "data.train_interpolation: random");
  VT_CHECK(missing.empty(), "[train] the trainer cannot honour: ", missing,
           ". Supported: data.dataset fashion_mnist, or imagefolder/imagenet (train/ and val/ under data.data_dir) "
           "with mixup/cutmix in batch mode, RandAugment, pixel random erasing (count 1) and repeated augmentation");
  check_model_fits_data(cfg);
  require_data_dir(cfg);
}

}  // namespace vt::engine
