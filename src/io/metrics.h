// Training logs: a JSON-lines metrics file (one object per event, flushed, easy to plot or tail) and the
// one-line progress text printed during training.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vt::io {

/// Appends one JSON object per log() call to a file. Thread-safe; each line is flushed so a crash loses nothing
/// already logged.
class MetricsLog {
 public:
  /// Opens `path` (creating parent directories); truncates it unless `append` (use append when resuming).
  explicit MetricsLog(const std::string& path, bool append = false);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  /// Writes {"<string key>":"<value>",...,"<key>":<number>,...} (compact, nlohmann::json): string fields first,
  /// then numbers, each in the given order. Integral numbers print without a fraction ("step":120), others as the
  /// shortest decimal that reads back exactly; NaN and ±Inf, which JSON cannot represent, print as null.
  /// Duplicate keys throw vt::Error.
  void log(const std::vector<std::pair<std::string, double>>& fields,
           const std::vector<std::pair<std::string, std::string>>& strings = {});

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mu_;
};

/// The JSON line MetricsLog::log writes (without the newline); exposed for tests and other writers.
std::string metrics_json(const std::vector<std::pair<std::string, double>>& fields,
                         const std::vector<std::pair<std::string, std::string>>& strings = {});

/// One metrics.jsonl line: its numeric fields (null, i.e. NaN/Inf, and string fields are skipped).
using MetricRow = std::map<std::string, double>;

/// One metrics.jsonl line parsed, or nullopt when it is not a JSON object (e.g. a line cut by a crash).
std::optional<MetricRow> parse_metrics_line(const std::string& line);

/// Reads a JSON-lines metrics file written by MetricsLog (blank lines skipped). Throws vt::Error naming the file
/// and line on a line that is not a JSON object.
std::vector<MetricRow> read_metrics(const std::string& path);

/// Shortest decimal text that reads back as exactly `v` ("0.1", "120", "1e-05"); "null" for NaN/Inf.
std::string format_number(double v);

/// "3m12s", "1h02m05s", "45s"; "?" for a negative or non-finite time.
std::string format_duration(double seconds);

/// `epoch 1/5 [ 120/ 468] loss 1.2345 lr 2.00e-03 1234 img/s ETA 3m12s`. Step counters are padded to the width
/// of `steps` (at least 4) and the epoch to the width of `epochs`, so successive lines stay aligned.
std::string progress_line(int epoch, int epochs, int64_t step, int64_t steps, double loss, double lr, double img_per_s,
                          double eta_s);

}  // namespace vt::io
