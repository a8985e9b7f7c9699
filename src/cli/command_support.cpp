#include "cli/command_support.h"

#include <cstdio>
#include <exception>

namespace vt::cli {

io::Config load_command_config(const std::string& path, std::vector<std::string> sets, const std::string& device) {
  if (!device.empty()) sets.push_back("train.device=" + device);  // last, so it wins over --set
  if (!path.empty()) return io::load_config(path, sets);
  io::Config cfg;
  for (const auto& s : sets) io::apply_override(cfg, s);
  cfg.validate();
  return cfg;
}

void finish_command(const std::function<int()>& body) {
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    throw CLI::RuntimeError(1);
  }
  std::fflush(stdout);
  if (code != 0) throw CLI::RuntimeError(code);
  throw CLI::Success();  // done: main has nothing else to run
}

}  // namespace vt::cli
