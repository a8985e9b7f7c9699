#include "cli/timm_flags.h"

#include <memory>

namespace vt::cli {
namespace {

// CLI11 names for a table row: positional names stay as they are; two-letter short flags (-vb) are dropped here
// and rewritten to the long name before parsing (timm_short_flags_to_long).
std::string cli_names(const char* names) {
  std::string out, rest = names;
  for (size_t at = 0; at <= rest.size();) {
    size_t comma = rest.find(',', at);
    if (comma == std::string::npos) comma = rest.size();
    const std::string n = rest.substr(at, comma - at);
    const bool long_short = n.size() > 2 && n[0] == '-' && n[1] != '-';
    if (!long_short) out += (out.empty() ? "" : ",") + n;
    at = comma + 1;
  }
  return out;
}

std::string help_of(const io::TimmFlag& f) { return std::string(f.help) + "  [" + f.key + "]"; }

void add_entry(CLI::App& cmd, TimmFlagOptions& o, const io::TimmFlag& f, const char* key_override = nullptr) {
  o.entries.push_back({&f, nullptr, {}});
  auto& e = o.entries.back();
  const std::string help = key_override ? std::string(f.help) + "  [" + key_override + "]" : help_of(f);
  if (f.kind == io::TimmArg::flag) {
    e.option = cmd.add_flag(cli_names(f.names), help);
  } else {
    e.option = cmd.add_option(cli_names(f.names), e.values, help);
    e.option->expected(1, f.kind == io::TimmArg::list ? CLI::detail::expected_max_vector_size : 1);
    if (f.kind != io::TimmArg::list) e.option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

}  // namespace

void add_timm_train_flags(CLI::App& train, TimmFlagOptions& o) {
  o.entries.reserve(io::timm_flags().size());
  for (const io::TimmFlag& f : io::timm_flags()) add_entry(train, o, f);
}

void add_timm_validate_flags(CLI::App& eval, TimmFlagOptions& o) {
  // validate.py's -b is the evaluation batch: its own row, the rest are train.py's rows.
  static const io::TimmFlag batch{"-b,--batch-size",
                                  "batch_size",
                                  "eval.batch_size",
                                  io::TimmArg::value,
                                  nullptr,
                                  nullptr,
                                  "evaluation batch (validate.py -b)"};
  static const io::TimmFlag model{"-m,--model",
                                  "model",
                                  "model.name",
                                  io::TimmArg::value,
                                  nullptr,
                                  nullptr,
                                  "model name (timm's, e.g. deit_small_patch16_224.fb_in1k)"};
  o.entries.reserve(16);
  add_entry(eval, o, model);
  add_entry(eval, o, batch);
  for (const char* dest : {"data_dir", "data", "img_size", "crop_pct", "num_classes", "mean", "std"})
    add_entry(eval, o, *io::find_timm_flag(dest));
}

std::vector<std::string> TimmFlagOptions::overrides() const {
  std::vector<std::string> out;
  for (const auto& [flag, o] : sourced_overrides()) out.push_back(o);
  return out;
}

std::vector<std::pair<std::string, std::string>> TimmFlagOptions::sourced_overrides() const {
  std::vector<std::pair<std::string, std::string>> out;
  std::string output, experiment;
  bool output_given = false;
  for (const Entry& e : entries) {
    if (e.option->count() == 0) continue;
    const std::string dest = e.flag->dest;
    if (dest == "output" || dest == "experiment") {
      (dest == "output" ? output : experiment) = e.values.empty() ? "" : e.values.back();
      output_given = true;
      continue;
    }
    std::string shown = e.option->get_name();
    for (const auto& v : e.values) shown += " " + v;
    for (const auto& o : io::timm_flag_overrides(*e.flag, e.values)) out.emplace_back(shown, o);
  }
  if (output_given) {
    const std::string dir = io::timm_output_dir(output, experiment);
    out.emplace_back("--output/--experiment", "train.output=" + (dir.empty() ? std::string("output/train") : dir));
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> TimmFlagOptions::experiment() const {
  std::string output, experiment;
  bool given = false;
  for (const Entry& e : entries) {
    if (e.option->count() == 0 || e.values.empty()) continue;
    if (e.flag->dest == std::string("output")) output = e.values.back();
    if (e.flag->dest == std::string("experiment")) experiment = e.values.back(), given = true;
  }
  if (!given) return std::nullopt;
  return std::pair{output.empty() ? std::string("output/train") : output, experiment};
}

std::vector<std::string> timm_short_flags_to_long(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (auto& a : args)
    if (a == "-vb") a = "--validation-batch-size";
  return args;
}

}  // namespace vt::cli
