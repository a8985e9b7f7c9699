#include "cli/data_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/command_support.h"
#include "cli/make_lra_command.h"
#include "data/check.h"

namespace vt::cli {
namespace {

struct CheckArgs {
  std::string dir;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;
};

int run_check(const CheckArgs& a) {
  const data::DataCheckReport r = data::check_images(a.dir, a.threads, a.max_image_pixels);
  for (const auto& b : r.bad) std::printf("bad: %s\n", b.error.c_str());
  std::printf("checked %lld images under %s: %zu bad\n", static_cast<long long>(r.checked), a.dir.c_str(),
              r.bad.size());
  return r.bad.empty() ? 0 : 1;
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "inspect datasets, generate the LRA sets of our own");
  data->require_subcommand(1);
  auto args = std::make_shared<CheckArgs>();
  auto* check = data->add_subcommand("check", "decode every image below DIR and list each bad file");
  check->add_option("dir", args->dir, "dataset folder (ImageFolder, ADE20K or any tree of images)")
      ->required()
      ->check(CLI::ExistingDirectory);
  check->add_option("-j,--threads", args->threads, "decoding threads")->check(CLI::PositiveNumber);
  check
      ->add_option("--max-image-pixels", args->max_image_pixels,
                   "an image declaring more pixels is bad, as data.max_image_pixels (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  check->callback([args] { finish_command([&] { return run_check(*args); }); });
  add_make_lra_command(*data);
}

}  // namespace vt::cli
