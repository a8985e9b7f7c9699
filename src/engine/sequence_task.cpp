// Long Range Arena training (see the header): the task; engine/train_loop runs it.
#include "engine/sequence_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "autograd/node.h"
#include "data/samplers.h"
#include "dist/communicator.h"
#include "engine/device.h"
#include "engine/recipe.h"
#include "engine/run_support.h"
#include "engine/train_loop.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::engine {

namespace {

using data::lra::SequenceSet;

std::string split_name(const io::Config& cfg, const std::string& split) {
  return fmt::format("LRA {} {} split under '{}'", cfg.data.lra_task, split, cfg.data.data_dir);
}

// The split's vocabulary and classes against the training split's: the model is sized by the latter.
void require_same_kind(const io::Config& cfg, const SequenceSet& train, const SequenceSet& other,
                       const std::string& split) {
  VT_CHECK(!other.examples.empty(), "[data] the ", split_name(cfg, split), " has no examples");
  VT_CHECK(
      other.vocab_size <= train.vocab_size && other.num_classes == train.num_classes && other.pairs() == train.pairs(),
      "[data] the ", split_name(cfg, split), " has vocabulary ", other.vocab_size, " and ", other.num_classes,
      " classes, the training split ", train.vocab_size, " and ", train.num_classes);
}

// Top-1 and loss of `model` over `set` in batches of `batch`; batch s goes to rank s % world and the sums are
// added over the ranks (exact totals).
SequenceEval evaluate_set(const models::LraClassifier& model, const SequenceSet& set, int64_t batch, Device device,
                          std::optional<DType> amp, int rank = 0, int world = 1, dist::Communicator* comm = nullptr) {
  NoGradGuard no_grad;
  double loss_sum = 0, correct = 0, count = 0;
  const auto n = static_cast<int64_t>(set.examples.size());
  for (int64_t s = rank; s * batch < n; s += world) {
    std::vector<int64_t> rows;
    for (int64_t i = s * batch; i < std::min(n, (s + 1) * batch); ++i) rows.push_back(i);
    std::vector<double> labels;
    for (int64_t i : rows) labels.push_back(set.examples[static_cast<size_t>(i)].label);
    const Tensor target = Tensor::from_vector(labels, {static_cast<int64_t>(rows.size())}, DType::i64);
    Tensor logits;
    {
      nn::AutocastGuard autocast(amp);
      logits = model.forward(pad_tokens(set, rows, model.config().max_length).to(device));
    }
    logits = logits.to(DType::f32).to(cpu());
    const auto B = static_cast<double>(rows.size());
    loss_sum += ops::cross_entropy(logits, target).item() * B;
    const Tensor pred = ops::argmax(logits, 1);
    const int64_t* p = pred.data<int64_t>();
    for (size_t i = 0; i < rows.size(); ++i) correct += p[i] == static_cast<int64_t>(labels[i]);
    count += B;
  }
  if (comm && comm->world() > 1) {
    const std::vector<double> t = dist::sum_over_ranks(*comm, {loss_sum, correct, count}, device);
    loss_sum = t[0], correct = t[1], count = t[2];
  }
  VT_CHECK(count > 0, "[eval] the evaluation split has no examples");
  return {100.0 * correct / count, loss_sum / count, static_cast<int64_t>(count)};
}

// Sequence classification as a task of the training loop: batches from the training split's stream of shuffled
// passes, an LraClassifier, cross-entropy, top-1 on the validation and test splits (written to `out`).
class SequenceTask final : public TrainTask {
 public:
  SequenceTask(const io::Config& cfg, const RunStart& run, SequenceTrainSummary& out, const LraSplits& data)
      : cfg_(cfg),
        out_(out),
        data_(data),
        rank_(run.group.rank),
        world_(run.group.world),
        device_(run.group.device),
        amp_(amp_dtype(cfg)),
        comm_(run.group.comm),
        stream_(static_cast<int64_t>(data.train.examples.size()), static_cast<uint64_t>(cfg.train.seed)) {
    const auto n = static_cast<int64_t>(data.train.examples.size());
    const int64_t update_rows = static_cast<int64_t>(cfg.train.batch_size) * world_ * cfg.train.grad_accum_steps;
    VT_CHECK(n >= update_rows, "[train] ", n, " training sequences make no global batch of ", update_rows,
             " (train.batch_size x processes x train.grad_accum_steps)");
    require_same_kind(cfg, data.train, data.val, "val");
    require_same_kind(cfg, data.train, data.test, "test");
    if (run.resumed.state.best_epoch >= 0) best_ = run.resumed.state.best_metric, has_best_ = true;
    const int64_t updates = cfg.data.updates_per_epoch > 0 ? cfg.data.updates_per_epoch : n / update_rows;
    batches_ = updates * cfg.train.grad_accum_steps;
    const models::LraConfig arch = lra_model_config(cfg, data.train);
    model_ = std::make_unique<models::LraClassifier>(arch);
    if (cfg.train.model_ema) ema_model_ = std::make_unique<models::LraClassifier>(arch);
    run.log->info(
        "LRA {}: {} training sequences ({} updates per epoch), {} validation, {} test; max_length {}, "
        "vocabulary {}, {} classes{}",
        cfg.data.lra_task, n, updates, data.val.examples.size(), data.test.examples.size(), arch.max_length,
        arch.vocab_size, arch.num_classes, arch.dual ? ", document pairs" : "");
    run.log->info("model {} ({} attention, {} pooling): {} parameters", cfg.model.name, cfg.model.attention.type,
                  arch.pooling, model_->num_parameters());
  }

  nn::Module& model() override { return *model_; }
  nn::Module* ema_model() override { return ema_model_.get(); }
  void load_initial_weights() override {}  // check_supported refuses model.initial_checkpoint
  int64_t batches_per_epoch() const override { return batches_; }
  void begin_epoch(int64_t epoch, int64_t first) override {
    epoch_ = epoch;
    next_ = first;
  }
  TaskBatch next_batch() override {
    // Micro-batch g of the run covers stream positions g·R .. g·R + R - 1 (R rows over all ranks); this rank takes
    // its B of them.
    const int64_t B = cfg_.train.batch_size, R = B * world_;
    const int64_t g = epoch_ * batches_ + next_++;
    std::vector<int64_t> rows;
    std::vector<double> labels;
    for (int64_t j = rank_ * B; j < (rank_ + 1) * B; ++j) {
      rows.push_back(stream_.at(g * R + j));
      labels.push_back(data_.train.examples[static_cast<size_t>(rows.back())].label);
    }
    return {pad_tokens(data_.train, rows, data_.train.max_length).to(device_),
            Tensor::from_vector(labels, {B}, DType::i64).to(device_)};
  }
  Tensor loss(const TaskBatch& b) override { return ops::cross_entropy(model_->forward(b.input), b.target); }
  TaskEvaluation evaluate() override {
    const int64_t batch = cfg_.eval.batch_size;
    auto score = [&](const models::LraClassifier& m, const SequenceSet& set) {
      return evaluate_set(m, set, batch, device_, amp_, rank_, world_, comm_);
    };
    const SequenceEval val = out_.val = score(*model_, data_.val);
    const std::string& metric = cfg_.eval.best_metric;  // [ema_]top1 or [ema_]loss, of the validation split
    const bool of_ema = metric.rfind("ema_", 0) == 0;
    VT_CHECK(!of_ema || ema_model_, "[train] eval.best_metric ", metric, " needs the EMA");
    TaskEvaluation e;
    e.line = fmt::format("val top-1 {:.2f}% loss {:.4f} ({})", val.top1, val.loss, val.count);
    e.scores = {{"val_top1", val.top1}, {"val_loss", val.loss}};
    SequenceEval chosen = val;
    if (ema_model_) {
      const SequenceEval ema_val = score(*ema_model_, data_.val);
      e.line += fmt::format("; EMA val top-1 {:.2f}% loss {:.4f}", ema_val.top1, ema_val.loss);
      e.ema_scores = {{"ema_val_top1", ema_val.top1}, {"ema_val_loss", ema_val.loss}};
      if (of_ema) chosen = ema_val;
    }
    e.value = higher_is_better() ? chosen.top1 : chosen.loss;
    // LRA reports the test accuracy of the best validation model: the test split is scored (by the model the
    // metric reads) only when it becomes the best, as the loop's best checkpoint does.
    if (!has_best_ || better(e.value, best_)) {
      best_ = e.value;
      has_best_ = true;
      const SequenceEval test = out_.test = score(of_ema ? *ema_model_ : *model_, data_.test);
      e.line += fmt::format("; new best: test top-1 {:.2f}% loss {:.4f} ({})", test.top1, test.loss, test.count);
      e.scores.emplace_back("best_test_top1", test.top1);
      e.scores.emplace_back("best_test_loss", test.loss);
    }
    return e;
  }
  bool better(double value, double best) const override { return higher_is_better() ? value > best : value < best; }
  std::string best_text(double best) const override {
    return fmt::format("best val {} {:.4f}", cfg_.eval.best_metric, best);
  }

 private:
  bool higher_is_better() const { return cfg_.eval.best_metric.find("top1") != std::string::npos; }

  const io::Config& cfg_;
  SequenceTrainSummary& out_;
  const LraSplits& data_;
  const int rank_, world_;
  const Device device_;
  const std::optional<DType> amp_;
  dist::Communicator* comm_;
  std::unique_ptr<models::LraClassifier> model_, ema_model_;
  int64_t batches_ = 0, epoch_ = 0, next_ = 0;
  double best_ = 0;  // the best eval.best_metric so far (a resumed run's from its checkpoint)
  bool has_best_ = false;
  PassStream stream_;
};

}  // namespace

PassStream::PassStream(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  VT_CHECK(n >= 1, "[data] an empty training split has no stream of passes");
}

int64_t PassStream::at(int64_t position) {
  VT_CHECK(position >= 0, "[data] negative stream position ", position);
  if (const int64_t pass = position / n_; pass != pass_) {
    order_ = data::shuffled_order(n_, seed_, pass);
    pass_ = pass;
  }
  return order_[static_cast<size_t>(position % n_)];
}

LraSplits load_lra_splits(const io::Config& cfg) {
  require_data_dir(cfg);
  const auto& d = cfg.data;
  return {data::lra::load_sequence_set(d.lra_task, d.data_dir, "train", d.max_length, d.train_limit),
          data::lra::load_sequence_set(d.lra_task, d.data_dir, "val", d.max_length, d.test_limit),
          data::lra::load_sequence_set(d.lra_task, d.data_dir, "test", d.max_length, d.test_limit)};
}

models::LraConfig lra_model_config(const io::Config& cfg, const SequenceSet& data) {
  const io::ModelConfig& m = cfg.model;
  VT_CHECK(m.embed_dim > 0 && m.depth > 0 && m.num_heads > 0,
           "[config] an LRA model has no preset: set "
           "model.embed_dim, model.depth and model.num_heads (got ",
           m.embed_dim, ", ", m.depth, ", ", m.num_heads, ")");
  VT_CHECK(m.num_classes == 0 || m.num_classes == data.num_classes, "[config] model.num_classes is ", m.num_classes,
           " but LRA ", data.task, " has ", data.num_classes, " classes: set model.num_classes: 0 (the task's)");
  models::LraConfig c;
  c.encoder.dim = m.embed_dim, c.encoder.depth = m.depth, c.encoder.heads = m.num_heads;
  c.encoder.mlp_ratio = m.mlp_ratio, c.encoder.layer_norm_eps = m.layer_norm_eps;
  c.encoder.drop_rate = m.drop_rate;
  c.encoder.attention = m.attention;
  c.encoder.seed = static_cast<uint64_t>(cfg.train.seed);
  c.vocab_size = data.vocab_size;
  c.max_length = data.max_length;  // data.max_length, or the task's length when that is 0
  c.num_classes = data.num_classes;
  c.head_hidden = static_cast<int64_t>(static_cast<double>(m.embed_dim) * m.mlp_ratio);
  c.pooling = m.pooling.empty() ? "mean" : m.pooling;
  c.dual = data.pairs();
  return c;
}

Tensor pad_tokens(const SequenceSet& set, const std::vector<int64_t>& rows, int64_t length) {
  const int64_t docs = set.pairs() ? 2 : 1;
  const auto B = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::zeros(set.pairs() ? Shape{B, 2, length} : Shape{B, length}, DType::i64);
  int64_t* dst = out.data<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    VT_CHECK(rows[b] >= 0 && rows[b] < static_cast<int64_t>(set.examples.size()), "[data] no example ", rows[b]);
    const data::lra::SequenceExample& e = set.examples[static_cast<size_t>(rows[b])];
    for (int64_t doc = 0; doc < docs; ++doc) {
      const std::vector<int32_t>& t = doc == 0 ? e.tokens : e.tokens2;
      const int64_t n = std::min<int64_t>(length, static_cast<int64_t>(t.size()));
      std::copy(t.begin(), t.begin() + n, dst + (b * docs + doc) * length);
    }
  }
  return out;
}

SequenceTrainSummary train_sequence(const io::Config& given_cfg, const TrainHooks& hooks, const LraSplits* given) {
  const io::Config cfg = resolve_for_world(given_cfg, process_world(hooks.communicator));  // the per-GPU batch
  VT_CHECK(cfg.data.dataset == "lra", "[train] train_sequence needs data.dataset: lra, got '", cfg.data.dataset, "'");
  std::optional<LraSplits> loaded;
  std::optional<SequenceTask> task;
  SequenceTrainSummary summary;
  static_cast<RunSummary&>(summary) = train_loop(cfg, hooks, [&](const RunStart& run) -> TrainTask& {
    const LraSplits& data = given ? *given : loaded.emplace(load_lra_splits(cfg));
    return task.emplace(cfg, run, summary, data);
  });
  return summary;
}

SequenceEval evaluate_sequence_weights(const io::Config& cfg, const std::string& weights_path,
                                       const WeightsLoadOptions& options, bool amp) {
  set_threads(cfg.train.threads);
  const Device device = resolve_device(cfg.train.device);
  require_data_dir(cfg);
  const auto& d = cfg.data;
  // The model is sized by the training split's vocabulary, as in training; only its first example is read.
  const SequenceSet train = data::lra::load_sequence_set(d.lra_task, d.data_dir, "train", d.max_length, 1);
  const SequenceSet test = data::lra::load_sequence_set(d.lra_task, d.data_dir, "test", d.max_length, d.test_limit);
  require_same_kind(cfg, train, test, "test");
  models::LraClassifier model(lra_model_config(cfg, train));
  const WeightsFile file = load_weights_file(weights_path, options.pick);
  std::vector<std::string> names;
  for (const auto& [name, t] : model.state_dict()) names.push_back(name);
  enforce_fit(compare_names(names, file.tensors), weights_path, "the LRA classifier", options.strict);
  try {
    model.load_state_dict(file.tensors, /*strict=*/false);
  } catch (const Error& e) {
    VT_FAIL("[load] '", weights_path, "': ", e.what());
  }
  model.to(device);
  model.eval();
  return evaluate_set(model, test, cfg.eval.batch_size, device, amp ? std::optional<DType>(DType::bf16) : std::nullopt);
}

std::string sequence_train_report(const SequenceTrainSummary& s) {
  return fmt::format(
      "val top-1 {:.2f}% ({} sequences); best val {:.4f} (epoch {}), its test top-1 {:.2f}% ({} "
      "sequences)\ntraining speed {:.1f} sequences/s over {:.1f} s\nlog: {}\nmetrics: {}\nweights: {}",
      s.val.top1, s.val.count, s.best_metric, s.best_epoch, s.test.top1, s.test.count, s.train_img_per_s,
      s.train_seconds, s.log_path, s.metrics_path, s.weights_path);
}

}  // namespace vt::engine
