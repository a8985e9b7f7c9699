// A run folder that does not overwrite an earlier run (see the header).
#include "engine/run_dir.h"

#include "core/error.h"

namespace vt::engine {
namespace {

bool taken(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return false;
  return !std::filesystem::is_directory(p, ec) || !std::filesystem::is_empty(p, ec);
}

}  // namespace

std::filesystem::path pick_run_dir(const std::string& output, const std::string& experiment, bool resuming) {
  VT_CHECK(!output.empty() || !experiment.empty(), "[train] no output folder: set --output (train.output)");
  std::filesystem::path base =
      experiment.empty() ? std::filesystem::path(output) : std::filesystem::path(output) / experiment;
  if (base.filename().empty()) base = base.parent_path();  // "runs/" → "runs"
  std::filesystem::path dir = base;
  for (int n = 1; !resuming && taken(dir); ++n) {
    VT_CHECK(n < 100000, "[train] ", base.string(), "-1 ... -", n, " are all taken");
    dir = base.string() + "-" + std::to_string(n);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  VT_CHECK(!ec && std::filesystem::is_directory(dir), "[train] cannot create the run folder '", dir.string(),
           "': ", ec ? ec.message() : "a file of that name exists");
  return dir;
}

}  // namespace vt::engine
