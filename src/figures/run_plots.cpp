// Training curves of a run (see the header).
#include "figures/run_plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "figures/chart.h"

namespace vt::figures {
namespace {

double field(const io::MetricRow& r, const char* key) {
  const auto it = r.find(key);
  return it == r.end() ? std::nan("") : it->second;
}

bool is_train_row(const io::MetricRow& r) { return r.count("train_loss") > 0; }

Series collect(const std::vector<io::MetricRow>& rows, const char* key, const std::string& name, bool train_rows,
               double per_epoch) {
  Series s{name, {}, !train_rows, false};
  for (const io::MetricRow& r : rows) {
    if (is_train_row(r) != train_rows || !r.count(key)) continue;
    const double x = train_rows ? epoch_of(r, per_epoch) : field(r, "epoch");
    s.points.emplace_back(x, field(r, key));
  }
  return s;
}

}  // namespace

double updates_per_epoch(const std::vector<io::MetricRow>& rows) {
  for (const io::MetricRow& r : rows)
    if (!is_train_row(r) && field(r, "epoch") > 0 && field(r, "step") > 0) return field(r, "step") / field(r, "epoch");
  return 0;
}

double epoch_of(const io::MetricRow& row, double per_epoch) {
  const double step = field(row, "step");
  if (per_epoch > 0) return step / per_epoch;
  return std::nan("");
}

std::vector<std::string> plot_metrics(const std::vector<io::MetricRow>& rows, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  double per_epoch = updates_per_epoch(rows);
  // A run without an evaluation yet: the training rows' epoch numbers bound the steps of each epoch.
  std::string x_title = "epoch";
  if (per_epoch == 0) {
    double last_step_of_first = 0;
    bool later = false;
    for (const io::MetricRow& r : rows)
      if (is_train_row(r)) {
        if (field(r, "epoch") == 1) last_step_of_first = std::max(last_step_of_first, field(r, "step"));
        else later = true;
      }
    if (later && last_step_of_first > 0) per_epoch = last_step_of_first;
  }
  std::vector<std::string> written;
  auto chart = [&](const std::string& name, std::vector<Series> series, ChartSpec spec) {
    std::erase_if(series, [](const Series& s) { return s.points.empty(); });
    if (series.empty()) return;
    spec.x_title = x_title;
    const std::string stem = (std::filesystem::path(out_dir) / name).string();
    const auto fig = draw_chart(series, spec, stem + ".png");
    for (const std::string& p : save_figure(*fig, stem + ".png")) written.push_back(p);
  };
  if (per_epoch == 0) {  // still in epoch 1: the update count is the only x there is
    x_title = "update";
    per_epoch = 1;
  }
  chart("loss",
        {collect(rows, "train_loss", "train", true, per_epoch), collect(rows, "test_loss", "test", false, per_epoch),
         collect(rows, "ema_loss", "test, EMA weights", false, per_epoch)},
        {"Loss", "", "cross-entropy loss"});
  chart("lr", {collect(rows, "lr", "", true, per_epoch)}, {"Learning rate", "", "learning rate"});
  chart("accuracy",
        {collect(rows, "test_top1", "test top-1", false, per_epoch),
         collect(rows, "test_top5", "test top-5", false, per_epoch),
         collect(rows, "ema_top1", "EMA top-1", false, per_epoch),
         collect(rows, "ema_top5", "EMA top-5", false, per_epoch)},
        {"Test accuracy", "", "accuracy (%)"});
  chart("miou",
        {collect(rows, "miou", "mIoU", false, per_epoch), collect(rows, "macc", "mAcc", false, per_epoch),
         collect(rows, "aacc", "aAcc", false, per_epoch)},
        {"Segmentation scores", "", "score (%)"});
  return written;
}

}  // namespace vt::figures
