#include "engine/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "autograd/node.h"
#include "data/idx.h"
#include "dist/data_parallel.h"
#include "engine/device.h"
#include "engine/imagenet_data.h"
#include "engine/pretrained_cfg.h"
#include "engine/run_support.h"
#include "engine/timm_weights.h"
#include "engine/train_loop.h"
#include "io/safetensors.h"
#include "models/registry.h"
#include "nn/autocast.h"
#include "ops/ops.h"

namespace vt::engine {

namespace {

constexpr double kFashionMean = 0.2860, kFashionStd = 0.3530;

data::ImageSet image_set(const data::IdxImages& images, const std::vector<uint8_t>& labels, int64_t limit) {
  int64_t n = limit > 0 ? std::min<int64_t>(limit, images.n) : images.n;
  return {n, images.rows, images.cols, images.pixels.data(), labels.data()};
}

// `name` with its first dotted segment equal to `from` replaced by `to` ("a.qkv.weight" → "a.qkvg.weight"),
// or "" when no segment is `from`.
std::string replace_segment(const std::string& name, const std::string& from, const std::string& to) {
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    if (end - start == from.size() && name.compare(start, from.size(), from) == 0)
      return name.substr(0, start) + to + name.substr(end);
    start = end + 1;
  }
  return "";
}

}  // namespace

std::optional<DType> amp_dtype(const io::Config& cfg) {
  if (!cfg.train.amp) return std::nullopt;
  return DType::bf16;  // config validation rejects every other train.amp_dtype
}

models::ViTConfig vit_config(const io::Config& cfg) {
  find_pretrained_cfg(cfg.model.name);  // an unknown pretrained tag is an error
  return models::vit_config(cfg.model, static_cast<uint64_t>(cfg.train.seed));
}

namespace {

// Top-1/top-5/loss over the batches that `for_each_batch` hands to its callback.
// With `comm`, each rank passes its share of the batches and the sums are added over the ranks (exact totals).
EvalResult evaluate_batches(const models::VisionTransformer& model,
                            const std::function<void(const std::function<void(const data::Batch&)>&)>& for_each_batch,
                            Device device, std::optional<DType> amp, dist::Communicator* comm = nullptr) {
  NoGradGuard no_grad;
  EvalResult r;
  double loss_sum = 0;
  int64_t correct1 = 0, correct5 = 0;
  for_each_batch([&](const data::Batch& b) {
    Tensor logits;
    {
      nn::AutocastGuard autocast(amp);
      logits = model.forward(b.images.to(device));
    }
    logits = logits.to(DType::f32).to(cpu());  // [B, classes]: small; the metrics below read it on the host
    const int64_t B = logits.size(0), C = logits.size(1);
    loss_sum += ops::cross_entropy(logits, b.labels).item() * static_cast<double>(B);
    auto top = ops::topk(logits, std::min<int64_t>(5, C), 1).second;  // [B, k]
    const int64_t k = top.size(1);
    const int64_t* idx = top.data<int64_t>();
    const int64_t* lab = b.labels.data<int64_t>();
    for (int64_t i = 0; i < B; ++i) {
      correct1 += idx[i * k] == lab[i];
      for (int64_t j = 0; j < k; ++j) correct5 += idx[i * k + j] == lab[i];
    }
    r.count += B;
  });
  if (comm && comm->world() > 1) {
    const std::vector<double> t = dist::sum_over_ranks(
        *comm, {loss_sum, static_cast<double>(correct1), static_cast<double>(correct5), static_cast<double>(r.count)},
        device);
    loss_sum = t[0];
    correct1 = static_cast<int64_t>(t[1]);
    correct5 = static_cast<int64_t>(t[2]);
    r.count = static_cast<int64_t>(t[3]);
  }
  r.loss = loss_sum / static_cast<double>(r.count);
  r.top1 = 100.0 * static_cast<double>(correct1) / static_cast<double>(r.count);
  r.top5 = 100.0 * static_cast<double>(correct5) / static_cast<double>(r.count);
  return r;
}

// The Fashion-MNIST test split: batch s goes to rank s % world.
EvalResult evaluate_fashion(const models::VisionTransformer& model, data::ImageBatches& batches, Device device,
                            std::optional<DType> amp, int rank = 0, int world = 1, dist::Communicator* comm = nullptr) {
  return evaluate_batches(
      model,
      [&](const auto& fn) {
        for (int64_t s = rank; s < batches.batches_per_epoch(); s += world) fn(batches.get(0, s));
      },
      device, amp, comm);
}

// Image classification as a task of the training loop: Fashion-MNIST in memory or an ImageFolder through the
// threaded loader (engine/imagenet_data.h), a VisionTransformer, (soft-target) cross-entropy, top-1/top-5
// (written to `out`, the run's summary).
class ClassificationTask final : public TrainTask {
 public:
  ClassificationTask(const io::Config& cfg, const RunStart& run, TrainSummary& out)
      : cfg_(cfg),
        out_(out),
        rank_(run.group.rank),
        world_(run.group.world),
        device_(run.group.device),
        amp_(amp_dtype(cfg)),
        comm_(run.group.comm) {
    if (uses_image_folder(cfg)) {
      imagenet_.emplace(cfg, vit_config(cfg).img_size, device_, true, rank_, world_);
      VT_CHECK(imagenet_->num_classes() <= vit_config(cfg).num_classes, "[data] ", cfg.data.data_dir, " has ",
               imagenet_->num_classes(), " classes, more than model.num_classes = ", vit_config(cfg).num_classes);
    } else {
      ds_ = data::load_fashion_mnist(cfg.data.data_dir);
      // Data parallel: every rank builds the global batch of batch_size × world and trains on its rows (so the
      // ranks together see exactly the batches of one process with the global batch size).
      train_batches_.emplace(image_set(ds_->train_images, ds_->train_labels, cfg.data.train_limit),
                             static_cast<int64_t>(cfg.train.batch_size) * world_, true, cfg.data.hflip, kFashionMean,
                             kFashionStd, static_cast<uint64_t>(cfg.train.seed));
      test_batches_.emplace(image_set(ds_->test_images, ds_->test_labels, cfg.data.test_limit), cfg.eval.batch_size,
                            false, 0.0, kFashionMean, kFashionStd, 0);
    }
    model_ = std::make_unique<models::VisionTransformer>(vit_config(cfg));
    if (cfg.train.model_ema) ema_model_ = std::make_unique<models::VisionTransformer>(vit_config(cfg));
    run.log->info("model {} ({} attention): {} parameters", cfg.model.name, cfg.model.attention.type,
                  model_->num_parameters());
  }

  nn::Module& model() override { return *model_; }
  nn::Module* ema_model() override { return ema_model_.get(); }
  void load_initial_weights() override {  // timm --initial-checkpoint (fine-tuning)
    if (!cfg_.model.initial_checkpoint.empty())
      load_timm_weights(*model_, read_model_weights(cfg_.model.initial_checkpoint));
  }
  int64_t batches_per_epoch() const override {
    return imagenet_ ? imagenet_->train_batches_per_epoch() : train_batches_->batches_per_epoch();
  }
  void begin_epoch(int64_t epoch, int64_t first) override {
    epoch_ = epoch;
    next_ = first;
  }
  TaskBatch next_batch() override {
    const int64_t index = next_++;
    data::Batch b = imagenet_ ? imagenet_->train_batch(epoch_, index) : train_batches_->get(epoch_, index);
    if (!imagenet_ && world_ > 1) {  // this rank's rows of the global Fashion-MNIST batch
      const int64_t B = cfg_.train.batch_size;
      b.images = b.images.slice(0, rank_ * B, (rank_ + 1) * B);
      b.labels = b.labels.slice(0, rank_ * B, (rank_ + 1) * B);
    }
    return {b.images.to(device_), b.labels.to(device_)};
  }
  Tensor loss(const TaskBatch& b) override {
    const Tensor logits = model_->forward(b.input);
    // Mixup/CutMix hand soft targets (smoothing folded in); plain labels use smoothed cross-entropy.
    return b.target.dtype() == DType::f32 ? ops::soft_target_cross_entropy(logits, b.target)
                                          : ops::cross_entropy(logits, b.target, cfg_.optim.smoothing);
  }
  TaskEvaluation evaluate() override {
    const EvalResult& test = out_.test = evaluate_on_test(*model_);
    if (ema_model_) out_.test_ema = evaluate_on_test(*ema_model_);
    const std::optional<EvalResult>& ema = out_.test_ema;
    const std::string& metric = cfg_.eval.best_metric;  // [ema_]top1 or [ema_]loss
    const bool of_ema = metric.rfind("ema_", 0) == 0;
    VT_CHECK(!of_ema || ema, "[train] eval.best_metric ", metric, " needs the EMA");
    TaskEvaluation e;
    e.value = higher_is_better() ? (of_ema ? *ema : test).top1 : (of_ema ? *ema : test).loss;
    e.line = fmt::format(
        "test top-1 {:.2f}% top-5 {:.2f}% loss {:.4f} ({} images){}", test.top1, test.top5, test.loss, test.count,
        ema ? fmt::format("; EMA top-1 {:.2f}% top-5 {:.2f}% loss {:.4f}", ema->top1, ema->top5, ema->loss)
            : std::string());
    e.scores = {{"test_top1", test.top1}, {"test_top5", test.top5}, {"test_loss", test.loss}};
    if (imagenet_) e.scores.emplace_back("test_bad_files", static_cast<double>(test.bad_files));
    if (ema) e.ema_scores = {{"ema_top1", ema->top1}, {"ema_top5", ema->top5}, {"ema_loss", ema->loss}};
    return e;
  }
  bool better(double value, double best) const override { return higher_is_better() ? value > best : value < best; }
  std::string best_text(double best) const override {
    return fmt::format("best {} {:.4f}", cfg_.eval.best_metric, best);
  }
  std::optional<int64_t> bad_files() const override {
    return imagenet_ ? std::optional<int64_t>(imagenet_->bad_files()) : std::nullopt;
  }

 private:
  bool higher_is_better() const { return cfg_.eval.best_metric.find("top1") != std::string::npos; }
  EvalResult evaluate_on_test(const models::VisionTransformer& m) {
    if (!imagenet_) return evaluate_fashion(m, *test_batches_, device_, amp_, rank_, world_, comm_);
    EvalResult r = evaluate_batches(
        m, [&](const auto& fn) { imagenet_->for_each_eval_batch(fn); }, device_, amp_, comm_);
    r.bad_files = imagenet_->eval_bad_files();  // val/ images left out, over all ranks
    if (comm_ && world_ > 1)
      r.bad_files = static_cast<int64_t>(dist::sum_over_ranks(*comm_, {static_cast<double>(r.bad_files)}, device_)[0]);
    return r;
  }

  const io::Config& cfg_;
  TrainSummary& out_;
  const int rank_, world_;
  const Device device_;
  const std::optional<DType> amp_;
  dist::Communicator* comm_;
  std::optional<data::FashionMnist> ds_;
  std::optional<data::ImageBatches> train_batches_, test_batches_;
  std::optional<ImageNetData> imagenet_;
  std::unique_ptr<models::VisionTransformer> model_, ema_model_;
  int64_t epoch_ = 0, next_ = 0;
};

}  // namespace

TrainSummary train(const io::Config& cfg, const TrainHooks& hooks) {
  return train_task<ClassificationTask, TrainSummary>(cfg, hooks);
}

WeightLoadReport load_weights_compatible(nn::Module& model, const io::NamedTensors& weights) {
  std::map<std::string, Tensor> given(weights.begin(), weights.end());
  std::set<std::string> used;
  WeightLoadReport report;
  io::NamedTensors matched;
  for (const auto& [name, dst] : model.state_dict()) {
    if (auto it = given.find(name); it != given.end()) {
      matched.emplace_back(name, it->second);
      used.insert(name);
      continue;
    }
    // A gated MiTA's qkvg rows are [q; k; v; g]: the first 3C rows are exactly a qkv projection.
    const std::string from_gate = replace_segment(name, "qkv", "qkvg");
    if (auto it = given.find(from_gate); !from_gate.empty() && it != given.end() && it->second.dim() >= 1 &&
                                         dst.dim() >= 1 && it->second.size(0) * 3 == dst.size(0) * 4) {
      matched.emplace_back(name, it->second.slice(0, 0, dst.size(0)));
      used.insert(from_gate);
      report.adapted.push_back(name + " <- " + from_gate + "[:" + std::to_string(dst.size(0)) + "]");
      continue;
    }
    const std::string to_gate = replace_segment(name, "qkvg", "qkv");
    VT_CHECK(to_gate.empty() || !given.count(to_gate), "[load] the weights have no tensor '", name,
             "': they come from an ungated model ('", to_gate, "' has no g rows), this model has a gate");
    VT_FAIL("[load] the weights have no tensor '", name, "', which this model needs");
  }
  for (const auto& [name, t] : given)
    if (!used.count(name)) report.ignored.push_back(name);
  model.load_state_dict(matched, true);  // checks the shapes, naming the tensor
  return report;
}

EvalResult evaluate_weights(const io::Config& cfg, const std::string& weights_path, const EvalOptions& options) {
  set_threads(cfg.train.threads);
  const Device device = resolve_device(cfg.train.device);
  models::VisionTransformer model(vit_config(cfg));
  load_vit_weights(model, weights_path, options.load);
  const std::optional<DType> amp = options.amp ? std::optional<DType>(DType::bf16) : std::nullopt;
  model.to(device);
  model.eval();
  EvalResult r;
  std::chrono::steady_clock::time_point start;
  if (uses_image_folder(cfg)) {  // val/ through the threaded loader with the eval transform (resize, center crop)
    ImageNetData val(cfg, static_cast<int>(vit_config(cfg).img_size), device, false);
    VT_CHECK(val.num_classes() <= vit_config(cfg).num_classes, "[data] ", cfg.data.data_dir, "/val has ",
             val.num_classes(), " class folders, more than the model's ", vit_config(cfg).num_classes, " classes");
    start = std::chrono::steady_clock::now();
    r = evaluate_batches(
        model, [&](const auto& fn) { val.for_each_eval_batch(fn); }, device, amp);
    r.bad_files = val.eval_bad_files();
  } else {
    VT_CHECK(cfg.data.dataset == "fashion_mnist", "[config] unknown data.dataset '", cfg.data.dataset, "'");
    data::FashionMnist ds = data::load_fashion_mnist(cfg.data.data_dir);
    data::ImageBatches test_batches(image_set(ds.test_images, ds.test_labels, cfg.data.test_limit), cfg.eval.batch_size,
                                    false, 0.0, kFashionMean, kFashionStd, 0);
    start = std::chrono::steady_clock::now();
    r = evaluate_fashion(model, test_batches, device, amp);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.img_per_s = seconds > 0 ? static_cast<double>(r.count) / seconds : 0.0;
  for (const auto& [name, p] : model.named_parameters()) r.params += p.numel();
  return r;
}

}  // namespace vt::engine
