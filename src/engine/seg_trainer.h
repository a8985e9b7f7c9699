// Segmentation training (Segmenter's train.py) as a task of the training loop (engine/train_loop.h): a
// models::Segmenter on ADE20K's training split through the threaded loader (mmseg's train pipeline), pixel
// cross-entropy (ignore 255) on the logits upsampled to the crop, sliding-window mIoU on the validation split
// (data parallel: split over the ranks with exact area totals).
#pragma once
#include <cstdint>
#include <string>

#include "engine/seg_evaluate.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::engine {

struct SegTrainSummary : RunSummary {  // best_metric: the best mIoU (eval.best_metric: miou)
  SegEvalResult test;                  // the last evaluation on the validation split
};

/// Trains the configured Segmenter (model.decoder set, data.dataset ade20k under data.data_dir), starting from
/// model.initial_checkpoint (a timm ViT, engine::load_segmenter_backbone) unless it resumes; evaluation rows carry
/// "miou" (and "ema_miou" with train.model_ema). hooks.on_update sees this rank's loss.
SegTrainSummary train_segmentation(const io::Config& cfg, const TrainHooks& hooks = {});

/// The lines `vitrain train` prints after a segmentation run that trained to the end (scores, speed, file paths).
std::string seg_train_report(const SegTrainSummary& s);

}  // namespace vt::engine
