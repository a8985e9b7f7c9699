// mmseg-style segmentation scores (see seg_metrics.h).
#include "engine/seg_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace vt::engine {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio_percent(int64_t num, int64_t den) { return den == 0 ? kNaN : 100.0 * num / den; }

double nanmean(const std::vector<double>& v) {
  double sum = 0;
  int64_t n = 0;
  for (double x : v)
    if (!std::isnan(x)) sum += x, ++n;
  return n == 0 ? kNaN : sum / n;
}

std::string class_name(const std::vector<std::string>& names, size_t c) {
  return c < names.size() ? names[c] : "class " + std::to_string(c);
}

std::string two_decimals(double x) {
  if (std::isnan(x)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

}  // namespace

SegAreas::SegAreas(int64_t num_classes, int64_t ignore_index)
    : intersect_(static_cast<size_t>(num_classes)),
      union_(intersect_),
      pred_(intersect_),
      label_(intersect_),
      ignore_(ignore_index) {
  VT_CHECK(num_classes > 0 && num_classes <= 256, "[seg] class count must be in 1..256, got ", num_classes);
}

void SegAreas::add(const uint8_t* pred, const uint8_t* label, int64_t n) {
  const int64_t K = num_classes();
  std::vector<int64_t> inter(static_cast<size_t>(K)), p_area(inter), l_area(inter);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = label[i], p = pred[i];
    if (l == ignore_) continue;
    VT_CHECK(l < K, "[seg] label value ", l, " is outside 0..", K - 1, " and is not the ignore index ", ignore_);
    VT_CHECK(p < K, "[seg] predicted class ", p, " is outside 0..", K - 1);
    ++l_area[static_cast<size_t>(l)];
    ++p_area[static_cast<size_t>(p)];
    if (l == p) ++inter[static_cast<size_t>(l)];
  }
  for (size_t c = 0; c < inter.size(); ++c) {
    intersect_[c] += inter[c];
    pred_[c] += p_area[c];
    label_[c] += l_area[c];
    union_[c] += p_area[c] + l_area[c] - inter[c];
  }
}

void SegAreas::merge(const SegAreas& other) {
  VT_CHECK(other.num_classes() == num_classes(), "[seg] cannot merge areas of ", other.num_classes(), " and ",
           num_classes(), " classes");
  for (size_t c = 0; c < intersect_.size(); ++c) {
    intersect_[c] += other.intersect_[c];
    union_[c] += other.union_[c];
    pred_[c] += other.pred_[c];
    label_[c] += other.label_[c];
  }
}

std::vector<int64_t> SegAreas::totals() const {
  std::vector<int64_t> t;
  t.reserve(4 * intersect_.size());
  for (const auto* v : {&intersect_, &union_, &pred_, &label_}) t.insert(t.end(), v->begin(), v->end());
  return t;
}

SegAreas SegAreas::from_totals(const std::vector<int64_t>& totals, int64_t ignore_index) {
  VT_CHECK(!totals.empty() && totals.size() % 4 == 0, "[seg] area totals need 4 counts per class, got ", totals.size());
  const size_t K = totals.size() / 4;
  SegAreas a(static_cast<int64_t>(K), ignore_index);
  for (size_t c = 0; c < K; ++c) {
    a.intersect_[c] = totals[c];
    a.union_[c] = totals[K + c];
    a.pred_[c] = totals[2 * K + c];
    a.label_[c] = totals[3 * K + c];
  }
  return a;
}

SegScores SegAreas::scores() const {
  SegScores s;
  int64_t total_intersect = 0, total_label = 0;
  for (size_t c = 0; c < intersect_.size(); ++c) {
    s.iou.push_back(ratio_percent(intersect_[c], union_[c]));
    s.acc.push_back(ratio_percent(intersect_[c], label_[c]));
    total_intersect += intersect_[c];
    total_label += label_[c];
  }
  s.miou = nanmean(s.iou);
  s.macc = nanmean(s.acc);
  s.aacc = ratio_percent(total_intersect, total_label);
  return s;
}

std::string seg_scores_table(const SegScores& s, const std::vector<std::string>& class_names) {
  size_t width = 5;  // "Class"
  for (size_t c = 0; c < s.iou.size(); ++c) width = std::max(width, class_name(class_names, c).size());
  const int w = static_cast<int>(width);
  std::string rule(
      width + 3, '-');  // "+" and width + 2 dashes, built in place: GCC 12 warns (-Wrestrict) on "+" + std::string(...)
  rule.front() = '+';
  rule += "+-------+-------+\n";
  char buf[512];
  std::string out = "per class results:\n" + rule;
  std::snprintf(buf, sizeof buf, "| %-*s |  IoU  |  Acc  |\n", w, "Class");
  out += buf + rule;
  for (size_t c = 0; c < s.iou.size(); ++c) {
    std::snprintf(buf, sizeof buf, "| %-*s | %5s | %5s |\n", w, class_name(class_names, c).c_str(),
                  two_decimals(s.iou[c]).c_str(), two_decimals(s.acc[c]).c_str());
    out += buf;
  }
  out += rule + "summary:\n+-------+-------+-------+\n|  aAcc |  mIoU |  mAcc |\n+-------+-------+-------+\n";
  std::snprintf(buf, sizeof buf, "| %5s | %5s | %5s |\n", two_decimals(s.aacc).c_str(), two_decimals(s.miou).c_str(),
                two_decimals(s.macc).c_str());
  out += buf;
  out += "+-------+-------+-------+\n";
  return out;
}

std::string seg_summary_line(const SegScores& s) {
  return "mIoU " + two_decimals(s.miou) + "  mAcc " + two_decimals(s.macc) + "  aAcc " + two_decimals(s.aacc);
}

std::string seg_scores_json(const SegScores& s, const std::vector<std::string>& class_names,
                            const std::vector<std::pair<std::string, double>>& fields) {
  auto score = [](double x) -> nlohmann::ordered_json {  // mmseg's 2 decimals; NaN → null
    if (!std::isfinite(x)) return nullptr;
    return std::round(x * 100) / 100;
  };
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : fields) {
    if (!std::isfinite(value)) j[key] = nullptr;
    else if (value == std::trunc(value) && std::fabs(value) < 9e15) j[key] = static_cast<int64_t>(value);
    else j[key] = value;
  }
  j["mIoU"] = score(s.miou);
  j["mAcc"] = score(s.macc);
  j["aAcc"] = score(s.aacc);
  j["classes"] = nlohmann::ordered_json::array();
  for (size_t c = 0; c < s.iou.size(); ++c)
    j["classes"].push_back({{"name", class_name(class_names, c)}, {"IoU", score(s.iou[c])}, {"Acc", score(s.acc[c])}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vt::engine
