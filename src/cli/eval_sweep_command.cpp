// eval-sweep and eval-swap (see eval_sweep_command.h). Each cell is one engine::evaluate_weights call: the model
// is rebuilt with the cell's attention settings and the frozen weights are loaded into it
// non-strictly (load_weights_compatible), so any attention kind the config names can be swept.
#include "cli/eval_sweep_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/command_support.h"
#include "core/error.h"
#include "figures/heatmap.h"
#include "engine/trainer.h"
#include "models/attention.h"

namespace vt::cli {
namespace {

namespace fs = std::filesystem;

engine::EvalResult evaluate_cell(const io::Config& cfg, const std::string& weights, const std::string& what) {
  std::printf("evaluating %s ...\n", what.c_str());
  std::fflush(stdout);
  // Cells evaluate weights trained with another kind or (m, k): tensors one kind has and another lacks are
  // expected here, so the load is non-strict (the skipped tensors are still listed in a warning).
  engine::EvalOptions options;
  options.load.strict = false;
  const engine::EvalResult r = engine::evaluate_weights(cfg, weights, options);
  std::printf("  %s: top-1 %.2f%%  top-5 %.2f%%  loss %.4f  (%lld images)\n", what.c_str(), r.top1, r.top5, r.loss,
              static_cast<long long>(r.count));
  std::fflush(stdout);
  return r;
}

struct SweepOptions {
  RunOptions run;
  std::string out;
  std::vector<int64_t> ms, ks;
};

void run_sweep(const SweepOptions& o) {
  const io::Config base = o.run.load();
  VT_CHECK(base.model.attention.is_mita(),
           "[eval-sweep] sweeping (m, k) needs MiTA attention "
           "(model.attention.type mita or mita_route); the config's attention is '",
           base.model.attention.type, "'");
  VT_CHECK(!o.ms.empty() && !o.ks.empty(), "[eval-sweep] --m and --k need at least one value each");
  const models::ViTConfig v = engine::vit_config(base);
  const int64_t grid = v.img_size / v.patch_size, tokens = grid * grid + 1;
  // Every cell's settings are checked before the first evaluation, so a long sweep cannot fail half-way.
  std::vector<std::vector<io::Config>> cells;
  for (int64_t m : o.ms) {
    cells.emplace_back();
    for (int64_t k : o.ks) {
      io::Config c = base;
      c.model.attention.m = m;
      c.model.attention.k = k;
      c.validate();
      models::check_attention_shape(c.model.attention, tokens);
      cells.back().push_back(c);
    }
  }
  fs::create_directories(o.out);
  const std::string csv_path = (fs::path(o.out) / "mk_sweep.csv").string();
  std::ofstream csv(csv_path);
  VT_CHECK(csv, "[eval-sweep] cannot write '", csv_path, "'");
  csv << "m,k,top1,top5,loss,images\n";
  std::vector<std::vector<double>> top1(o.ms.size(), std::vector<double>(o.ks.size()));
  figures::HeatmapSpec spec;
  spec.title = "Top-1 (%) with (m, k) changed at evaluation";
  spec.row_axis = "m (experts)";
  spec.col_axis = "k (keys per expert)";
  spec.value_name = "top-1 (%)";
  const int64_t trained_k = base.model.attention.k > 0                  ? base.model.attention.k
                            : base.model.attention.type == "mita_route" ? 2 * base.model.attention.m
                                                                        : base.model.attention.m;
  for (size_t i = 0; i < o.ms.size(); ++i) {
    spec.row_labels.push_back(std::to_string(o.ms[i]));
    for (size_t j = 0; j < o.ks.size(); ++j) {
      if (i == 0) spec.col_labels.push_back(std::to_string(o.ks[j]));
      const auto r =
          evaluate_cell(cells[i][j], o.run.weights, "m=" + std::to_string(o.ms[i]) + " k=" + std::to_string(o.ks[j]));
      top1[i][j] = r.top1;
      csv << o.ms[i] << ',' << o.ks[j] << ',' << r.top1 << ',' << r.top5 << ',' << r.loss << ',' << r.count << '\n';
      csv.flush();
      if (o.ms[i] == base.model.attention.m && o.ks[j] == trained_k)
        spec.outlined.emplace_back(static_cast<int>(i), static_cast<int>(j));  // the config's own budget
    }
  }
  VT_CHECK(csv.flush(), "[eval-sweep] failed writing '", csv_path, "'");
  const std::string png = (fs::path(o.out) / "mk_sweep.png").string();
  figures::write_heatmap(top1, spec, png);
  std::printf("%s\n%s\n", csv_path.c_str(), png.c_str());
}

struct SwapOptions {
  RunOptions run;
  std::string weights_dense, weights_mita, weights_agent, csv, out;
};

// The kinds of the matrix, in its order; Agent attention only when asked for.
const std::vector<std::string> kAllKinds = {"dense", "mita", "agent"};

// top1[trained][evaluated] and its kinds (dense, mita and, when any row names it, agent) from a CSV with a header
// naming trained, evaluated and top1 columns.
std::vector<std::vector<double>> read_swap_csv(const std::string& path, std::vector<std::string>& kinds) {
  std::ifstream in(path);
  VT_CHECK(in, "[eval-swap] cannot read '", path, "'");
  auto split = [](const std::string& line) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    return f;
  };
  std::string line;
  VT_CHECK(static_cast<bool>(std::getline(in, line)), "[eval-swap] '", path, "' is empty");
  std::map<std::string, size_t> col;
  const auto header = split(line);
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"trained", "evaluated", "top1"})
    VT_CHECK(col.count(need), "[eval-swap] '", path, "': the header needs a '", need,
             "' column (trained,evaluated,top1)");
  std::vector<std::vector<double>> top1(3, std::vector<double>(3, std::nan("")));
  bool agent = false;
  auto index = [&](const std::string& kind, int line_no) -> size_t {
    for (size_t i = 0; i < kAllKinds.size(); ++i)
      if (kAllKinds[i] == kind) {
        agent = agent || i == 2;
        return i;
      }
    VT_FAIL("[eval-swap] '", path, "' line ", line_no, ": kind '", kind, "' is not dense, mita or agent");
  };
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = split(line);
    VT_CHECK(f.size() == header.size(), "[eval-swap] '", path, "' line ", n, ": ", f.size(), " fields, expected ",
             header.size());
    try {
      top1[index(f[col["trained"]], n)][index(f[col["evaluated"]], n)] = std::stod(f[col["top1"]]);
    } catch (const std::invalid_argument&) {
      VT_FAIL("[eval-swap] '", path, "' line ", n, ": top1 '", f[col["top1"]], "' is not a number");
    }
  }
  kinds.assign(kAllKinds.begin(), kAllKinds.begin() + (agent ? 3 : 2));
  top1.resize(kinds.size());
  for (auto& row : top1) row.resize(kinds.size());
  return top1;
}

void run_swap(const SwapOptions& o) {
  std::vector<std::vector<double>> top1;
  std::vector<std::string> kinds;
  if (!o.csv.empty()) {
    VT_CHECK(o.weights_dense.empty() && o.weights_mita.empty() && o.weights_agent.empty(),
             "[eval-swap] give either --csv or --weights-dense and --weights-mita (and --weights-agent), not both");
    top1 = read_swap_csv(o.csv, kinds);
  } else {
    VT_CHECK(!o.weights_dense.empty() && !o.weights_mita.empty(),
             "[eval-swap] needs --weights-dense and --weights-mita (or --csv)");
    kinds.assign(kAllKinds.begin(), kAllKinds.begin() + (o.weights_agent.empty() ? 2 : 3));
    const std::vector<std::string> weights = {o.weights_dense, o.weights_mita, o.weights_agent};
    const io::Config base = o.run.load();
    // The MiTA column evaluates with the config's attention when it is a MiTA kind, else with plain mita; the
    // Agent column with the config's Agent settings (agent_num) as plain Agent attention.
    io::AttentionConfig mita = base.model.attention;
    if (!mita.is_mita()) mita.type = "mita";
    io::AttentionConfig agent = base.model.attention;
    agent.type = "agent";
    agent.dwc = agent.gate = false;
    const size_t n = kinds.size();
    top1.assign(n, std::vector<double>(n));
    for (size_t t = 0; t < n; ++t)
      for (size_t e = 0; e < n; ++e) {
        io::Config c = base;
        if (e == 0) {
          c.model.attention.type = "dense";
        } else if (e == 1) {
          c.model.attention = mita;
          // Dense- and Agent-trained weights have no DWC or gate tensors: they can only be evaluated as plain MiTA.
          if (t != 1) c.model.attention.dwc = c.model.attention.gate = false;
        } else {
          c.model.attention = agent;
        }
        c.validate();
        top1[t][e] = evaluate_cell(c, weights[t], "trained " + kinds[t] + ", evaluated " + kinds[e]).top1;
      }
  }
  fs::create_directories(o.out);
  const std::string csv_path = (fs::path(o.out) / "swap.csv").string();
  {
    std::ofstream csv(csv_path);
    VT_CHECK(csv, "[eval-swap] cannot write '", csv_path, "'");
    csv << "trained,evaluated,top1\n";
    for (size_t t = 0; t < kinds.size(); ++t)
      for (size_t e = 0; e < kinds.size(); ++e) csv << kinds[t] << ',' << kinds[e] << ',' << top1[t][e] << '\n';
    VT_CHECK(csv.flush(), "[eval-swap] failed writing '", csv_path, "'");
  }
  figures::HeatmapSpec spec;
  spec.title = "Top-1 (%) with the attention swapped";
  spec.row_axis = "trained with";
  spec.col_axis = "evaluated with";
  spec.value_name = "top-1 (%)";
  spec.row_labels = spec.col_labels = kinds;
  spec.cell = 80;
  const std::string png = (fs::path(o.out) / "swap.png").string();
  figures::write_heatmap(top1, spec, png);
  std::printf("%s\n%s\n", csv_path.c_str(), png.c_str());
}

}  // namespace

void add_eval_sweep_commands(CLI::App& app) {
  auto sweep = std::make_shared<SweepOptions>();
  auto* s = app.add_subcommand("eval-sweep",
                               "evaluate frozen MiTA weights for every (m, k) of a grid: CSV and a "
                               "heat map (the paper's Figure 10)");
  add_run_options(*s, sweep->run, {.weights = true});
  s->add_option("--m", sweep->ms, "landmark counts, e.g. 16,25,36")->required()->delimiter(',');
  s->add_option("--k", sweep->ks, "keys per expert, e.g. 16,25,36")->required()->delimiter(',');
  s->add_option("-o,--out", sweep->out, "output folder")->required();
  s->callback([sweep] {
    finish_command([&] {
      run_sweep(*sweep);
      return 0;
    });
  });

  auto swap = std::make_shared<SwapOptions>();
  auto* w = app.add_subcommand("eval-swap",
                               "the matrix trained-with x evaluated-with {dense, mita[, agent]} at "
                               "frozen weights: CSV and a heat map (the paper's Figure 9)");
  add_run_options(*w, swap->run, {.config_help = "YAML config of the models (its MiTA settings make the mita column)"});
  w->add_option("--weights-dense", swap->weights_dense, "weights trained with dense attention")
      ->check(CLI::ExistingFile);
  w->add_option("--weights-mita", swap->weights_mita, "weights trained with MiTA attention")->check(CLI::ExistingFile);
  w->add_option("--weights-agent", swap->weights_agent, "weights trained with Agent attention (adds the third kind)")
      ->check(CLI::ExistingFile);
  w->add_option("--csv", swap->csv, "draw from this CSV (trained,evaluated,top1) instead of evaluating")
      ->check(CLI::ExistingFile);
  w->add_option("-o,--out", swap->out, "output folder")->required();
  w->callback([swap] {
    finish_command([&] {
      run_swap(*swap);
      return 0;
    });
  });
}

}  // namespace vt::cli
