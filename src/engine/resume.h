// Picking up a run where it stopped: which checkpoint `--resume auto` takes (the newest one that loads and
// validates, naming the ones it skipped and why) and the metrics file cut back to that checkpoint, so a resumed
// run logs each update and each evaluation once.
#pragma once
#include <string>
#include <vector>

#include "engine/checkpoint.h"

namespace vt::engine {

struct ResumeChoice {
  std::string path;                  ///< "" when no checkpoint in the folder verifies (or none exists)
  Checkpoint checkpoint;             ///< the loaded checkpoint at `path`
  std::vector<std::string> skipped;  ///< "PATH: why", for each damaged candidate passed over
};

/// Among last.safetensors, recovery.safetensors and (when last does not verify) the checkpoint-<epoch> files of
/// `output_dir`: the one with the most updates that loads and validates (ties: last, then recovery, then the
/// newest epoch).
ResumeChoice choose_resume_checkpoint(const std::string& output_dir);

/// choose_resume_checkpoint(output_dir).path.
std::string find_resume_checkpoint(const std::string& output_dir);

/// Rewrites the metrics file at `path` (atomically) without the rows a run resumed from `state` will log again:
/// update rows (with "train_loss") past its global update, evaluation rows past its completed epochs, and lines
/// that do not parse (a line cut by a crash). Returns the number of lines dropped; a missing file is left alone.
int rewind_metrics(const std::string& path, const CheckpointState& state);

}  // namespace vt::engine
