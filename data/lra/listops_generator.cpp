#include "data/lra/listops_generator.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "data/lra/release_folder.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

constexpr double kOperatorProbability = 0.25;  // LRA's VALUE_P: r <= 0.25 makes an operator
constexpr std::array<const char*, 4> kOperators = {"[MIN", "[MAX", "[MED", "[SM"};

int32_t apply_operator(int op, std::vector<int32_t>& args) {
  if (args.empty()) return 0;  // drawing stopped early: the tree is thrown away
  switch (op) {
    case 0: return *std::min_element(args.begin(), args.end());
    case 1: return *std::max_element(args.begin(), args.end());
    case 2: {  // numpy's median (the mean of the middle two for an even count), then int() rounds down
      std::sort(args.begin(), args.end());
      const size_t n = args.size();
      return n % 2 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2;
    }
    default: {
      int32_t sum = 0;
      for (int32_t a : args) sum += a;
      return sum % 10;
    }
  }
}

// Appends the subtree at `depth` to `out` and adds its length to `length`; stops early once `length` reaches the
// limit (the caller then throws the tree away).
int32_t draw_node(SampleRng& rng, int depth, const ListOpsOptions& o, std::string& out, int64_t& length) {
  const double r = depth < o.max_depth ? rng.uniform() : 1.0;
  if (r > kOperatorProbability) {
    const auto digit = static_cast<int32_t>(rng.randint(0, 9));
    out += static_cast<char>('0' + digit);
    length += 1;
    return digit;
  }
  const auto num_args = static_cast<int>(rng.randint(2, o.max_args));
  const auto op = static_cast<int>(rng.randint(0, static_cast<int64_t>(kOperators.size()) - 1));
  length += 2;  // the operator and its closing bracket
  for (int i = 0; i <= num_args; ++i) out += "( ";
  out += kOperators[op];
  std::vector<int32_t> args;
  args.reserve(num_args);
  for (int i = 0; i < num_args && length < o.max_length; ++i) {
    out += ' ';
    args.push_back(draw_node(rng, depth + 1, o, out, length));
    out += " )";
  }
  out += " ] )";
  return apply_operator(op, args);
}

}  // namespace

ListOpsExpression draw_listops_tree(SampleRng& rng, const ListOpsOptions& options) {
  VT_CHECK(options.max_depth >= 1 && options.max_args >= 2 && options.min_length < options.max_length,
           "[data] ListOps: bad options (max_depth ", options.max_depth, ", max_args ", options.max_args, ", lengths ",
           options.min_length, "..", options.max_length, ")");
  ListOpsExpression e;
  e.value = draw_node(rng, 1, options, e.source, e.length);
  return e;
}

ListOpsExpression generate_listops_example(uint64_t seed, int split, int64_t index, const ListOpsOptions& options) {
  SampleRng rng(seed, split, index, /*stream=*/0x4c4f);
  for (;;) {
    ListOpsExpression e = draw_listops_tree(rng, options);
    if (e.length > options.min_length && e.length < options.max_length) return e;
  }
}

void write_listops_release(const std::string& out_dir, uint64_t seed, int64_t train, int64_t val, int64_t test,
                           const ListOpsOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  const fs::path dir = fs::path(out_dir) / "listops-1000";
  create_release_folder(dir.string());
  const std::array<std::pair<const char*, int64_t>, 3> splits = {{{"train", train}, {"val", val}, {"test", test}}};
  const int64_t total = train + val + test;
  int64_t done = 0;
  for (int s = 0; s < 3; ++s) {
    const fs::path path = dir / (std::string("basic_") + splits[s].first + ".tsv");
    std::ofstream f(path, std::ios::binary);
    VT_CHECK(f.good(), "[data] cannot write ", path.string());
    f << "Source\tTarget\r\n";
    for (int64_t i = 0; i < splits[s].second; ++i) {
      const ListOpsExpression e = generate_listops_example(seed, s, i, options);
      f << e.source << '\t' << e.value << "\r\n";
      if (progress && (++done % 5000 == 0 || done == total)) progress(done, total);
    }
    f.close();
    VT_CHECK(f.good(), "[data] writing ", path.string(), " failed");
  }
  if (progress && total == 0) progress(0, 0);
}

}  // namespace vt::data::lra
