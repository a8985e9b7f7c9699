// `vitrain flops [--config X | --model NAME] [--set k=v ...] [--json]`: builds the model on the CPU and counts it.
#include "cli/flops_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command_support.h"
#include "engine/trainer.h"
#include "io/config.h"
#include "io/json.h"

namespace vt::cli {

namespace {

// One table line; rows with nothing to count (absent DWC, gate, ...) are left out, as fvcore's table does.
void append_row(std::string& out, const models::FlopsRow& r, const std::string& indent) {
  if (r.params == 0 && r.macs == 0 && r.macs_fvcore == 0) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-28s %10s %16s %16s\n", (indent + r.name).c_str(),
                models::si_count(r.params).c_str(), models::si_count(r.macs).c_str(),
                models::si_count(r.macs_fvcore).c_str());
  out += buf;
}

io::JsonValue row_json(const models::FlopsRow& r) {
  return io::JsonValue::make_object({{"name", io::JsonValue::make_string(r.name)},
                                     {"params", io::JsonValue::make_int(r.params)},
                                     {"macs", io::JsonValue::make_int(r.macs)},
                                     {"macs_fvcore", io::JsonValue::make_int(r.macs_fvcore)}});
}

}  // namespace

std::string flops_table(const std::string& model_name, const models::FlopsReport& rep) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s%s, %s attention, %lldx%lld image, patch %lld, %lld tokens; per image:\n",
                model_name.c_str(), rep.decoder.empty() ? "" : (" + " + rep.decoder + " decoder").c_str(),
                rep.attention.c_str(), static_cast<long long>(rep.image_size), static_cast<long long>(rep.image_size),
                static_cast<long long>(rep.patch_size), static_cast<long long>(rep.tokens));
  std::string out = buf;
  std::snprintf(buf, sizeof buf, "%-28s %10s %16s %16s\n", "module", "params", "MACs (all)", "MACs (fvcore)");
  out += buf;
  append_row(out, rep.total, "");
  for (const auto& r : rep.rows) {
    if (r.name != "blocks") {
      append_row(out, r, "  ");
      continue;
    }
    models::FlopsRow all = r;
    all.name = "blocks (" + std::to_string(rep.depth) + " x, one below)";
    append_row(out, all, "  ");
    for (const auto& b : rep.block_rows) append_row(out, b, "    ");
  }
  std::snprintf(buf, sizeof buf, "params %s  MACs %s (all matmuls) / %s (fvcore-style)\n",
                models::si_count(rep.total.params).c_str(), models::si_count(rep.total.macs).c_str(),
                models::si_count(rep.total.macs_fvcore).c_str());
  out += buf;
  return out;
}

std::string flops_json(const std::string& model_name, const models::FlopsReport& rep) {
  using io::JsonValue;
  auto rows = [](const std::vector<models::FlopsRow>& list) {
    std::vector<JsonValue> out;
    for (const auto& r : list) out.push_back(row_json(r));
    return JsonValue::make_array(std::move(out));
  };
  return io::to_json(JsonValue::make_object({{"model", JsonValue::make_string(model_name)},
                                             {"attention", JsonValue::make_string(rep.attention)},
                                             {"decoder", JsonValue::make_string(rep.decoder)},
                                             {"image_size", JsonValue::make_int(rep.image_size)},
                                             {"patch_size", JsonValue::make_int(rep.patch_size)},
                                             {"tokens", JsonValue::make_int(rep.tokens)},
                                             {"depth", JsonValue::make_int(rep.depth)},
                                             {"params", JsonValue::make_int(rep.total.params)},
                                             {"macs", JsonValue::make_int(rep.total.macs)},
                                             {"macs_fvcore", JsonValue::make_int(rep.total.macs_fvcore)},
                                             {"modules", rows(rep.rows)},
                                             {"block_modules", rows(rep.block_rows)}}));
}

void add_flops_command(CLI::App& app) {
  struct Options {
    RunOptions run;
    std::string model;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("flops",
                                 "count parameters and multiply-accumulates per image, per module "
                                 "(all attention matmuls, and fvcore-style)");
  add_run_options(*cmd, opts->run, {.device = false});
  cmd->add_option("--model", opts->model, "model preset (sets model.name)");
  cmd->add_flag("--json", opts->json, "also print the counts as one JSON line");
  cmd->callback([opts] {
    finish_command([&] {
      std::vector<std::string> sets;
      if (!opts->model.empty()) sets.push_back("model.name=" + opts->model);
      sets.insert(sets.end(), opts->run.sets.begin(), opts->run.sets.end());
      const io::Config cfg = load_command_config(opts->run.config, sets);
      VT_CHECK(cfg.data.dataset != "lra", "[flops] vitrain flops counts ViT and Segmenter configs; the Long Range ",
               "Arena classifiers (data.dataset: lra) are not covered");
      // A segmentation config (model.decoder.type set) counts the Segmenter: encoder + decoder + upsampling.
      const models::FlopsReport rep = cfg.model.decoder.type.empty()
                                          ? models::count_flops(models::VisionTransformer(engine::vit_config(cfg)))
                                          : models::count_flops(models::Segmenter(models::segmenter_config(
                                                cfg.model, static_cast<uint64_t>(cfg.train.seed))));
      std::printf("%s", flops_table(cfg.model.name, rep).c_str());
      if (opts->json) std::printf("%s\n", flops_json(cfg.model.name, rep).c_str());
      return 0;
    });
  });
}

}  // namespace vt::cli
