// The segmentation training loop (spec §5, Segmenter's train.py): a models::Segmenter on ADE20K's training split
// through the threaded loader (mmseg's train pipeline), pixel cross-entropy (ignore 255) on the logits upsampled
// to the crop, the configured optimizer (Table 4: SGD Nesterov) with the LR stepped every update (poly), sliding-
// window mIoU on the validation split every eval.interval epochs and at the end, checkpoints as the
// classification trainer writes them (last, best by mIoU, checkpoint-<epoch>, recovery; exact resume).
// Data parallel as train(): train.batch_size per rank, each rank a shard of the training set, gradients averaged
// (dist/data_parallel.h), the evaluation split over the ranks with exact area totals; rank 0 writes the files.
#pragma once
#include <cstdint>
#include <string>

#include "engine/seg_evaluate.h"
#include "engine/trainer.h"
#include "io/config.h"

namespace vt::engine {

struct SegTrainSummary : RunSummary {  // best_metric: the best mIoU (eval.best_metric: miou)
  SegEvalResult test;  // the last evaluation on the validation split
};

/// Trains the configured Segmenter (model.decoder set, data.dataset ade20k under data.data_dir) on
/// cfg.train.device, starting from model.initial_checkpoint (a timm ViT, engine::load_segmenter_backbone) or
/// resuming from cfg.train.resume exactly where that checkpoint stopped; writes train.log, metrics.jsonl
/// (progress rows and evaluation rows with "miou"), checkpoints and model.safetensors under cfg.train.output.
/// With hooks.communicator (tests: ranks as threads) or in a launched job, trains data parallel as train() does:
/// the logged loss is the mean over the ranks, every rank returns the same evaluation scores, rank 0 alone writes
/// the log, metrics, checkpoints (the single-process format) and weights. hooks.on_update sees this rank's loss.
SegTrainSummary train_segmentation(const io::Config& cfg, const TrainHooks& hooks = {});

/// The lines `vitrain train` prints after a segmentation run that trained to the end (scores, speed, file paths).
std::string seg_train_report(const SegTrainSummary& s);

}  // namespace vt::engine
