// validate.py-style results. Numbers are printed as Python's json does (shortest round-trip repr, "72.0" not
// "72"), after the same rounding, so rows from vitrain and timm can sit in one results table; the JSON is written
// by nlohmann::json.
#include "engine/eval_results.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "io/atomic_file.h"
#include <nlohmann/json.hpp>

namespace vt::engine {

namespace {

// Python's repr of round(x, digits).
std::string py_float(double x, int digits) {
  const double p = std::pow(10.0, digits);
  const double r = std::round(x * p) / p;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), r);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

struct Field {
  std::string key, value;
  bool is_string = false;  // quoted in JSON
};

// timm's keys in its order, then ours.
std::vector<Field> fields(const EvalResultsRow& r) {
  return {{"model", r.model, true},
          {"top1", py_float(r.top1, 4)},
          {"top1_err", py_float(100.0 - r.top1, 4)},
          {"top5", py_float(r.top5, 4)},
          {"top5_err", py_float(100.0 - r.top5, 4)},
          {"param_count", py_float(static_cast<double>(r.param_count) / 1e6, 2)},
          {"img_size", std::to_string(r.img_size)},
          {"crop_pct", py_float(r.crop_pct, 4)},
          {"interpolation", r.interpolation, true},
          {"loss", py_float(r.loss, 4)},
          {"images", std::to_string(r.images)},
          {"bad_files", std::to_string(r.bad_files)},
          {"img_per_s", py_float(r.img_per_s, 1)},
          {"amp", r.amp ? "true" : "false"}};
}

// A CSV cell: quoted only when it holds a separator, quote or newline (Python's csv module's minimal quoting).
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string eval_summary_line(const EvalResultsRow& row) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), " * Acc@1 %.3f (%.3f) Acc@5 %.3f (%.3f)", row.top1, 100.0 - row.top1, row.top5,
                100.0 - row.top5);
  return buf;
}

std::string eval_results_json(const EvalResultsRow& row, int indent) {
  auto rounded = [](double x, int digits) {
    const double p = std::pow(10.0, digits);
    return std::round(x * p) / p;
  };
  // nlohmann writes doubles as Python's json does (shortest round trip, "91.0" for whole numbers).
  nlohmann::ordered_json j;
  j["model"] = row.model;
  j["top1"] = rounded(row.top1, 4);
  j["top1_err"] = rounded(100.0 - row.top1, 4);
  j["top5"] = rounded(row.top5, 4);
  j["top5_err"] = rounded(100.0 - row.top5, 4);
  j["param_count"] = rounded(static_cast<double>(row.param_count) / 1e6, 2);
  j["img_size"] = row.img_size;
  j["crop_pct"] = rounded(row.crop_pct, 4);
  j["interpolation"] = row.interpolation;
  j["loss"] = rounded(row.loss, 4);
  j["images"] = row.images;
  j["bad_files"] = row.bad_files;
  j["img_per_s"] = rounded(row.img_per_s, 1);
  j["amp"] = row.amp;
  return j.dump(indent > 0 ? indent : -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string eval_results_csv(const EvalResultsRow& row) {
  std::string head, values;
  for (const Field& f : fields(row)) {
    if (!head.empty()) head += ',', values += ',';
    head += f.key;
    values += csv_cell(f.value);
  }
  return head + "\n" + values + "\n";
}

void write_eval_results(const std::string& path, const EvalResultsRow& row) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  io::AtomicFile out(path);
  out.write(json ? eval_results_json(row) + "\n" : eval_results_csv(row));
  out.commit();
}

}  // namespace vt::engine
