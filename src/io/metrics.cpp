// JSON-lines metrics writer and reader (nlohmann::json) and progress-line formatting.
#include "io/metrics.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace vt::io {

std::string format_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  VT_ASSERT(res.ec == std::errc());
  return std::string(buf, res.ptr);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[64];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string metrics_json(const std::vector<std::pair<std::string, double>>& fields,
                         const std::vector<std::pair<std::string, std::string>>& strings) {
  nlohmann::ordered_json row = nlohmann::ordered_json::object();
  auto add = [&](const std::string& k, nlohmann::ordered_json v) {
    VT_CHECK(!row.contains(k), "[metrics] duplicate key '", k, "'");
    row[k] = std::move(v);
  };
  for (const auto& [k, v] : strings) add(k, v);
  for (const auto& [k, v] : fields) {
    if (!std::isfinite(v)) add(k, nullptr);
    else if (v == std::trunc(v) && std::fabs(v) < 9e15) add(k, static_cast<int64_t>(v));  // "step":120, not 120.0
    else add(k, v);
  }
  return row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<MetricRow> parse_metrics_line(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  MetricRow row;
  for (const auto& [key, value] : j.items())
    if (value.is_number()) row[key] = value.get<double>();
  return row;
}

std::vector<MetricRow> read_metrics(const std::string& path) {
  std::ifstream f(path);
  VT_CHECK(f, "[metrics] cannot open '", path, "'");
  std::vector<MetricRow> rows;
  int line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::optional<MetricRow> row = parse_metrics_line(line);
    VT_CHECK(row, "[metrics] ", path, ":", line_no, ": not a JSON object: ", line.substr(0, 80));
    rows.push_back(std::move(*row));
  }
  return rows;
}

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  VT_CHECK(file_ != nullptr, "[metrics] cannot open '", path, "': ", std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::log(const std::vector<std::pair<std::string, double>>& fields,
                     const std::vector<std::pair<std::string, std::string>>& strings) {
  std::string line = metrics_json(fields, strings);
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  VT_CHECK(ok, "[metrics] write to '", path_, "' failed: ", std::strerror(errno));
}

std::string progress_line(int epoch, int epochs, int64_t step, int64_t steps, double loss, double lr, double img_per_s,
                          double eta_s) {
  int ew = static_cast<int>(std::to_string(epochs).size());
  int sw = std::max<int>(4, static_cast<int>(std::to_string(steps).size()));
  char buf[256];
  std::snprintf(buf, sizeof buf, "epoch %*d/%d [%*lld/%*lld] loss %.4f lr %.2e %.0f img/s ETA %s", ew, epoch, epochs,
                sw, static_cast<long long>(step), sw, static_cast<long long>(steps), loss, lr, img_per_s,
                format_duration(eta_s).c_str());
  return buf;
}

}  // namespace vt::io
