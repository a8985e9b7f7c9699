// The parts of a training recipe that are arithmetic on the config: the global batch, the LR scaling rule, the
// learning rate of each update, and the check that the trainer can honour every recipe key it was given.
#pragma once
#include <cstdint>
#include <string>

#include "io/config.h"
#include "optim/lr_schedule.h"
#include "optim/schedule_cosine.h"

namespace vt::engine {

/// `cfg` for a run of `world` processes: train.batch_size (per process) = train.global_batch_size / (world ×
/// train.grad_accum_steps) when the global batch is set. Throws naming the keys when it does not divide, or when
/// an explicit train.batch_size disagrees with it.
io::Config resolve_for_world(const io::Config& cfg, int world);

/// Images per optimizer update: train.batch_size × train.grad_accum_steps × `world` processes (data parallel).
/// `cfg` is resolved (resolve_for_world).
int64_t global_batch(const io::Config& cfg, int world = 1);

/// "global batch 1024 = 128 per GPU x 1 accumulation x 8 processes; lr 1.000e-03 (optim.lr_base 0.0005 x 1024 /
/// 512)": the run's first recipe line, for a resolved `cfg`.
std::string describe_batch_and_lr(const io::Config& cfg, int world);

/// The base learning rate: optim.lr when > 0, else the timm/DeiT scaling rule
/// lr_base · global_batch / lr_base_size (linear) or lr_base · sqrt(global_batch / lr_base_size) (sqrt).
double resolved_lr(const io::Config& cfg, int world = 1);

/// The learning rate of each optimizer update, per update or per epoch (schedule.sched_on_updates): cosine with
/// DeiT's per-epoch lag when schedule.deit_epoch_lag (see optim/schedule_cosine.h), or schedule.sched: poly
/// (optim::PolySchedule; Segmenter: per update, no warmup).
class LrPlan {
 public:
  /// `updates_per_epoch` optimizer updates make one epoch; the run has cfg.train.epochs epochs over `world`
  /// processes.
  LrPlan(const io::Config& cfg, int64_t updates_per_epoch, int world = 1);
  /// The rate for update `global_step` (0-based), which belongs to epoch `epoch` (0-based).
  double lr(int64_t global_step, int64_t epoch) const;

 private:
  optim::CosineSchedule sched_;
  optim::PolySchedule poly_;
  bool poly_on_, on_updates_, deit_lag_;
};

/// Throws a vt::Error listing every recipe key the trainer cannot honour (an unknown dataset, the ImageNet
/// augmentations or data.mean/std on fashion_mnist, mixup_mode other than batch, remode other than pixel, recount != 1, random
/// interpolation; with a decoder (segmentation) every classification-only key: mixup/cutmix, RandAugment,
/// erasing, repeated augmentation, label smoothing; with data.dataset lra also flips, data.mean/std, drop path,
/// initial checkpoints, image sizes and the attention settings that need a patch grid), instead of silently
/// ignoring them.
/// Then check_model_fits_data.
void check_supported(const io::Config& cfg);

/// Throws a vt::Error saying how to give data.data_dir when it is empty (the default: there is no usual place).
void require_data_dir(const io::Config& cfg);

/// Throws a vt::Error naming the key when the model (the preset with the config's overrides) cannot take the
/// dataset's images or labels: model.in_chans against the dataset's channels (fashion_mnist 1, ImageFolder and
/// ADE20K 3), model.num_classes against fashion_mnist's 10 or ADE20K's 150. An ImageFolder's class count is only
/// known once listed; the trainer checks it then. Builds no model.
void check_model_fits_data(const io::Config& cfg);

}  // namespace vt::engine
