// summary.csv rows from metrics rows (see the header).
#include "engine/summary_csv.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "io/atomic_file.h"

namespace vt::engine {
namespace {

// (csv column, metrics key) of an evaluation row; epoch, train_loss and lr are filled separately.
const std::vector<std::pair<std::string, std::string>> kClassification = {
    {"eval_loss", "test_loss"}, {"eval_top1", "test_top1"}, {"eval_top5", "test_top5"}};
const std::vector<std::pair<std::string, std::string>> kEma = {
    {"ema_eval_loss", "ema_loss"}, {"ema_eval_top1", "ema_top1"}, {"ema_eval_top5", "ema_top5"}};
const std::vector<std::pair<std::string, std::string>> kSegmentation = {
    {"eval_mIoU", "miou"}, {"eval_mAcc", "macc"}, {"eval_aAcc", "aacc"}};
// Long Range Arena: the validation split decides (eval_*); the test split is scored when the model becomes the best.
const std::vector<std::pair<std::string, std::string>> kSequence = {
    {"eval_loss", "val_loss"}, {"eval_top1", "val_top1"}, {"test_top1", "best_test_top1"}};
const std::vector<std::pair<std::string, std::string>> kSequenceEma = {{"ema_eval_loss", "ema_val_loss"},
                                                                       {"ema_eval_top1", "ema_val_top1"}};

// Python's csv module writes floats with repr(): the shortest text that reads back, integral values with ".0"
// (51.0), "nan" for NaN.
std::string csv_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e16) return io::format_number(v) + ".0";
  return io::format_number(v);
}

double field(const io::MetricRow& row, const std::string& key) {
  const auto it = row.find(key);
  return it == row.end() ? std::nan("") : it->second;
}

}  // namespace

SummaryCsv::SummaryCsv(const std::string& path, const std::vector<io::MetricRow>& earlier) : path_(path) {
  std::string text;
  for (const io::MetricRow& row : earlier) text += take(row);
  io::AtomicFile out(path_);
  out.write(text);
  out.commit();
  file_ = std::fopen(path_.c_str(), "a");
  VT_CHECK(file_ != nullptr, "[summary] cannot open '", path_, "': ", std::strerror(errno));
}

SummaryCsv::~SummaryCsv() {
  if (file_) std::fclose(file_);
}

std::string SummaryCsv::render(const std::vector<io::MetricRow>& rows) {
  SummaryCsv s;
  std::string text;
  for (const io::MetricRow& row : rows) text += s.take(row);
  return text;
}

void SummaryCsv::add(const io::MetricRow& row) {
  const std::string line = take(row);
  if (line.empty()) return;
  const bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  VT_CHECK(ok, "[summary] write to '", path_, "' failed: ", std::strerror(errno));
}

std::string SummaryCsv::take(const io::MetricRow& row) {
  const double epoch = field(row, "epoch"), step = field(row, "step");
  if (row.count("train_loss")) {  // a training window: its mean loss over (step - previous step) updates
    const double updates = step - last_step_;
    if (updates > 0 && std::isfinite(epoch)) {
      loss_sum_[static_cast<int64_t>(epoch)] += field(row, "train_loss") * updates;
      loss_updates_[static_cast<int64_t>(epoch)] += updates;
    }
    if (std::isfinite(step)) last_step_ = step;
    return "";
  }
  const bool seg = row.count("miou") > 0, seq = row.count("val_top1") > 0;
  if (!seg && !seq && !row.count("test_top1")) return "";
  std::string out;
  if (columns_.empty()) {
    columns_ = {"epoch", "train_loss"};
    for (const auto& [col, key] : seg ? kSegmentation : seq ? kSequence : kClassification) columns_.push_back(col);
    if (!seg && (seq ? row.count("ema_val_top1") : row.count("ema_top1")))
      for (const auto& [col, key] : seq ? kSequenceEma : kEma) columns_.push_back(col);
    columns_.push_back("lr");
    for (size_t i = 0; i < columns_.size(); ++i) out += (i ? "," : "") + columns_[i];
    out += "\n";
  }
  const auto e = static_cast<int64_t>(epoch);
  std::map<std::string, double> values;
  values["epoch"] = epoch - 1;  // timm counts epochs from 0
  values["train_loss"] = loss_updates_.count(e) ? loss_sum_[e] / loss_updates_[e] : std::nan("");
  for (const auto* table :
       seq ? std::vector{&kSequence, &kSequenceEma} : std::vector{&kClassification, &kEma, &kSegmentation})
    for (const auto& [col, key] : *table)
      if (row.count(key)) values[col] = field(row, key);
  values["lr"] = field(row, "lr");
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i) out += ",";
    const auto it = values.find(columns_[i]);
    if (it == values.end() || (columns_[i] == "train_loss" && std::isnan(it->second))) continue;
    out += columns_[i] == "epoch" ? io::format_number(it->second) : csv_number(it->second);  // timm's epoch is an int
  }
  return out + "\n";
}

}  // namespace vt::engine
