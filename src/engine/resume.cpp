// Resume-checkpoint choice and metrics rewinding (see the header).
#include "engine/resume.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "io/metrics.h"
#include "io/atomic_file.h"

namespace vt::engine {
namespace {

namespace fs = std::filesystem;

// checkpoint-<epoch>.safetensors files of `dir`, newest epoch first.
std::vector<std::string> epoch_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("checkpoint-", 0) != 0 || e.path().extension() != ".safetensors") continue;
    const std::string num = n.substr(11, n.size() - 11 - 12);
    if (!num.empty() && num.size() < 18 && num.find_first_not_of("0123456789") == std::string::npos)
      found.emplace_back(std::stoll(num), e.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& [epoch, p] : found) out.push_back(std::move(p));
  return out;
}

}  // namespace

ResumeChoice choose_resume_checkpoint(const std::string& output_dir) {
  ResumeChoice choice;
  if (!fs::is_directory(output_dir)) return choice;
  std::optional<int64_t> best_step;
  // Loads `p` if it exists; true when it verified (and became the choice if it has more updates).
  auto consider = [&](const std::string& p) {
    if (!fs::exists(p)) return false;
    Checkpoint c;
    try {
      c = load_checkpoint(p);
    } catch (const std::exception& e) {
      choice.skipped.push_back(p + ": " + e.what());
      return false;
    }
    if (!best_step || c.state.position.global_step > *best_step) {
      best_step = c.state.position.global_step;
      choice.path = p;
      choice.checkpoint = std::move(c);
    }
    return true;
  };
  const fs::path dir(output_dir);
  const bool last_ok = consider((dir / "last.safetensors").string());
  consider((dir / "recovery.safetensors").string());
  if (!last_ok)  // an epoch checkpoint is never newer than an intact last
    for (const std::string& p : epoch_checkpoints(dir))
      if (consider(p)) break;
  return choice;
}

std::string find_resume_checkpoint(const std::string& output_dir) { return choose_resume_checkpoint(output_dir).path; }

int rewind_metrics(const std::string& path, const CheckpointState& state) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::string kept;
  int dropped = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::optional<io::MetricRow> row = io::parse_metrics_line(line);
    bool keep = false;
    if (row) {
      auto field = [&](const char* k) {
        auto it = row->find(k);
        return it == row->end() ? -1.0 : it->second;
      };
      keep = row->count("train_loss") ? field("step") <= static_cast<double>(state.position.global_step)
                                      : field("epoch") <= static_cast<double>(state.position.epoch);
    }
    if (keep) kept += line + '\n';
    else ++dropped;
  }
  in.close();
  if (dropped == 0) return 0;
  io::AtomicFile out(path);
  out.write(kept);
  out.commit();
  return dropped;
}

}  // namespace vt::engine
