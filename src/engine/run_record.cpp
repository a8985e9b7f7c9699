// One metrics row to metrics.jsonl, summary.csv and TensorBoard (see the header).
#include "engine/run_record.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace vt::engine {
namespace {

std::filesystem::path folder_of(const std::string& metrics_path) {
  const std::filesystem::path p = std::filesystem::path(metrics_path).parent_path();
  return p.empty() ? std::filesystem::path(".") : p;
}

std::vector<io::MetricRow> kept_rows(const std::string& metrics_path, bool resuming) {
  if (!resuming || !std::filesystem::exists(metrics_path)) return {};
  return io::read_metrics(metrics_path);
}

// The first step a resumed run logs again: one past the last step still in metrics.jsonl (0: nothing to purge).
int64_t purge_step(const std::vector<io::MetricRow>& rows) {
  double last = -1;
  for (const io::MetricRow& r : rows)
    if (const auto it = r.find("step"); it != r.end() && std::isfinite(it->second)) last = std::max(last, it->second);
  return last < 0 ? 0 : static_cast<int64_t>(last) + 1;
}

bool is_evaluation(const std::vector<std::pair<std::string, double>>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const auto& f) {
    return f.first == "test_top1" || f.first == "miou" || f.first == "val_top1";
  });
}

}  // namespace

std::string tensorboard_tag(const std::string& key, bool eval) {
  static const std::map<std::string, std::string> train = {{"train_loss", "train/loss"},
                                                           {"lr", "train/lr"},
                                                           {"img_per_s", "train/img_per_s"},
                                                           {"data_wait", "train/data_wait"},
                                                           {"bad_files", "train/bad_files"}};
  static const std::map<std::string, std::string> evaluation = {{"test_loss", "eval/loss"},
                                                                {"test_top1", "eval/top1"},
                                                                {"test_top5", "eval/top5"},
                                                                {"ema_loss", "eval_ema/loss"},
                                                                {"ema_top1", "eval_ema/top1"},
                                                                {"ema_top5", "eval_ema/top5"},
                                                                {"miou", "eval/mIoU"},
                                                                {"macc", "eval/mAcc"},
                                                                {"aacc", "eval/aAcc"},
                                                                {"eval_img_per_s", "eval/img_per_s"},
                                                                {"val_loss", "eval/loss"},
                                                                {"val_top1", "eval/top1"},
                                                                {"ema_val_loss", "eval_ema/loss"},
                                                                {"ema_val_top1", "eval_ema/top1"},
                                                                {"best_test_loss", "test/loss"},
                                                                {"best_test_top1", "test/top1"}};
  const auto& table = eval ? evaluation : train;
  const auto it = table.find(key);
  return it == table.end() ? std::string() : it->second;
}

RunRecord::RunRecord(const std::string& metrics_path, bool resuming)
    : metrics_(metrics_path, resuming),
      summary_((folder_of(metrics_path) / "summary.csv").string(), kept_rows(metrics_path, resuming)),
      events_(folder_of(metrics_path).string(), resuming ? purge_step(kept_rows(metrics_path, true)) : 0) {}

void RunRecord::log(const std::vector<std::pair<std::string, double>>& fields) {
  metrics_.log(fields);
  summary_.add(io::MetricRow(fields.begin(), fields.end()));
  const bool eval = is_evaluation(fields);
  std::vector<std::pair<std::string, float>> scalars;
  double step = 0;
  for (const auto& [key, value] : fields) {
    if (key == "step") step = value;
    if (std::string tag = tensorboard_tag(key, eval); !tag.empty())
      scalars.emplace_back(tag, static_cast<float>(value));
  }
  events_.add_scalars(static_cast<int64_t>(step), scalars);
}

}  // namespace vt::engine
