// Long Range Arena training (the MiTA paper's Table 5) as a task of the training loop (engine/train_loop.h): a
// models::LraClassifier on one LRA task's token sequences (data/lra/sequence_set.h) padded to data.max_length,
// cross-entropy, top-1 accuracy and loss on the validation split (eval.best_metric), and on the test split whenever
// the model becomes the best (LRA's protocol: the test accuracy of the best validation model). An epoch is data.updates_per_epoch updates drawn from an endless stream of shuffled passes over the
// training split (pass p in data::shuffled_order(n, train.seed, p)), so LRA's step counts map onto epochs exactly
// and a resumed run continues the same stream.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"
#include "engine/trainer.h"
#include "engine/weights_load.h"
#include "io/config.h"
#include "models/lra_classifier.h"

namespace vt::engine {

/// The three splits of one LRA task.
struct LraSplits {
  data::lra::SequenceSet train, val, test;
};

/// Accuracy (percent) and mean cross-entropy over one split.
struct SequenceEval {
  double top1 = 0, loss = 0;
  int64_t count = 0;
};

struct SequenceTrainSummary : RunSummary {  // best_metric: eval.best_metric of the validation split
  SequenceEval val;                         // the last evaluation of the validation split
  SequenceEval test;                        // the test split, scored when the model last became the best
};

/// Reads data.lra_task's train (the first data.train_limit examples; 0: all), val and test (data.test_limit each)
/// splits under data.data_dir at data.max_length.
LraSplits load_lra_splits(const io::Config& cfg);

/// The classifier a config asks for on `data` (its vocabulary, classes and pairs): model.embed_dim, depth,
/// num_heads, mlp_ratio (the MLP's and the head's hidden width), layer_norm_eps, drop_rate, attention, pooling,
/// data.max_length. Errors name the keys.
models::LraConfig lra_model_config(const io::Config& cfg, const data::lra::SequenceSet& data);

/// The training split as an endless stream: position p is example shuffled_order(n, seed, p / n)[p % n], so every
/// pass holds each example once, in its own order.
class PassStream {
 public:
  PassStream(int64_t n, uint64_t seed);
  int64_t at(int64_t position);

 private:
  int64_t n_;
  uint64_t seed_;
  int64_t pass_ = -1;  // the pass whose order is held
  std::vector<int64_t> order_;
};

/// Token ids of examples `rows` of `set`, padded with 0 (or truncated) to `length`: i64 [B, length], or
/// [B, 2, length] for pairs.
Tensor pad_tokens(const data::lra::SequenceSet& set, const std::vector<int64_t>& rows, int64_t length);

/// Trains the configured LRA classifier on `given` splits, or on load_lra_splits(cfg) when null. Empty val or test
/// splits, or ones whose vocabulary or classes differ from the training split's, are errors naming the split.
SequenceTrainSummary train_sequence(const io::Config& cfg, const TrainHooks& hooks = {},
                                    const LraSplits* given = nullptr);

/// Loads a weights file (strict unless options say otherwise) into the configured classifier and evaluates the
/// test split (data.test_limit) on cfg.train.device, f32 unless `amp`.
SequenceEval evaluate_sequence_weights(const io::Config& cfg, const std::string& weights_path,
                                       const WeightsLoadOptions& options = {}, bool amp = false);

/// The lines `vitrain train` prints after an LRA run that trained to the end.
std::string sequence_train_report(const SequenceTrainSummary& s);

}  // namespace vt::engine
