// ListOps: the generator's labels against an evaluator of the text written here, its lengths and classes, its
// determinism, and the reader on files in the release's format (our own and hand-written ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <vector>

#include "data/lra/listops_generator.h"
#include "data/lra/listops_vocab.h"
#include "data/lra/sequence_set.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

using data::lra::ListOpsExpression;

// The symbols of an expression with the parentheses dropped.
std::vector<std::string> symbols_of(const std::string& source) {
  std::istringstream in(source);
  std::vector<std::string> out;
  for (std::string s; in >> s;)
    if (s != "(" && s != ")") out.push_back(s);
  return out;
}

// Evaluates the bracket structure "[OP a b ... ]" recursively from symbols[at].
int evaluate(const std::vector<std::string>& symbols, size_t& at) {
  const std::string s = symbols.at(at++);
  if (s.size() == 1 && std::isdigit(static_cast<unsigned char>(s[0]))) return s[0] - '0';
  std::vector<int> args;
  while (symbols.at(at) != "]") args.push_back(evaluate(symbols, at));
  ++at;
  EXPECT_GE(args.size(), 2u) << s;
  std::sort(args.begin(), args.end());
  if (s == "[MIN") return args.front();
  if (s == "[MAX") return args.back();
  if (s == "[SM") {
    int sum = 0;
    for (int a : args) sum += a;
    return sum % 10;
  }
  EXPECT_EQ(s, "[MED");
  const size_t n = args.size();
  return n % 2 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2;  // np.median, then int()
}

int evaluate(const std::string& source) {
  const std::vector<std::string> symbols = symbols_of(source);
  size_t at = 0;
  const int value = evaluate(symbols, at);
  EXPECT_EQ(at, symbols.size()) << "trailing symbols";
  return value;
}

TEST(LraListOps, EvaluatorOfTheTextAgreesWithHandWorkedExamples) {
  EXPECT_EQ(evaluate("( ( ( [MAX 2 ) 9 ) ] )"), 9);
  EXPECT_EQ(evaluate("( ( ( ( [MED 1 ) 8 ) 3 ) ] )"), 3);
  EXPECT_EQ(evaluate("( ( ( ( ( [MED 1 ) 8 ) 3 ) 4 ) ] )"), 3);  // (3 + 4) / 2 rounded down
  EXPECT_EQ(evaluate("( ( ( [SM 7 ) ( ( ( [MIN 5 ) 6 ) ] ) ) ] )"), 2);
}

TEST(LraListOps, LabelIsTheValueOfTheExpressionAndLengthsAreInRange) {
  const data::lra::ListOpsOptions options;
  std::map<int, int> classes;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    const ListOpsExpression e = data::lra::generate_listops_example(7, 0, i, options);
    ASSERT_EQ(e.value, evaluate(e.source)) << "example " << i;
    const auto length = static_cast<int64_t>(symbols_of(e.source).size());
    EXPECT_EQ(length, e.length);
    EXPECT_GT(length, options.min_length);
    EXPECT_LT(length, options.max_length);
    // The surface form: every "(" closed, as Python's to_string writes it.
    EXPECT_EQ(occurrences(e.source, "("), occurrences(e.source, ")"));
    ++classes[e.value];
  }
  // All ten values occur; none dominates (LRA's classes are unbalanced, but not degenerate).
  EXPECT_EQ(classes.size(), 10u);
  for (const auto& [value, count] : classes) {
    EXPECT_GE(count, n / 100) << "value " << value;
    EXPECT_LE(count, n / 3) << "value " << value;
  }
}

TEST(LraListOps, SmallTreesFollowLrasDrawingRule) {
  // At max_depth 1 every tree is one digit; at max_depth 2 about a quarter are an operator over 2..max_args
  // digits.
  data::SampleRng rng(3, 0, 0);
  data::lra::ListOpsOptions flat{1, 10, 0, 2000};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(data::lra::draw_listops_tree(rng, flat).length, 1);
  data::lra::ListOpsOptions two{2, 4, 0, 2000};
  int operators = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const ListOpsExpression e = data::lra::draw_listops_tree(rng, two);
    ASSERT_EQ(e.value, evaluate(e.source)) << e.source;
    if (e.length > 1) {
      ++operators;
      EXPECT_GE(e.length, 2 + 2);
      EXPECT_LE(e.length, 2 + 4);
    }
  }
  EXPECT_NEAR(static_cast<double>(operators) / n, 0.25, 0.03);
}

TEST(LraListOps, TheSeedDecidesEveryExample) {
  const data::lra::ListOpsOptions options;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(data::lra::generate_listops_example(11, 1, i, options).source,
              data::lra::generate_listops_example(11, 1, i, options).source);
    EXPECT_NE(data::lra::generate_listops_example(11, 1, i, options).source,
              data::lra::generate_listops_example(12, 1, i, options).source);
    EXPECT_NE(data::lra::generate_listops_example(11, 1, i, options).source,
              data::lra::generate_listops_example(11, 2, i, options).source);
  }
}

TEST(LraListOps, ReaderReadsTheWrittenRelease) {
  TempDir dir;
  int64_t last_done = -1, last_total = -1;
  data::lra::write_listops_release(dir.path().string(), 5, 30, 4, 3, {}, [&](int64_t done, int64_t total) {
    last_done = done;
    last_total = total;
  });
  EXPECT_EQ(last_done, 37);
  EXPECT_EQ(last_total, 37);
  const std::string head = read_file(dir.path() / "listops-1000" / "basic_val.tsv").substr(0, 14);
  EXPECT_EQ(head, "Source\tTarget\r");
  const data::lra::SequenceSet train = data::lra::load_sequence_set("listops", dir.path().string(), "train", 0);
  EXPECT_EQ(train.task, "listops");
  EXPECT_EQ(train.vocab_size, 16);
  EXPECT_EQ(train.num_classes, 10);
  EXPECT_EQ(train.max_length, 2000);
  ASSERT_EQ(train.examples.size(), 30u);
  for (int i = 0; i < 30; ++i) {
    const ListOpsExpression e = data::lra::generate_listops_example(5, 0, i, {});
    const data::lra::SequenceExample& ex = train.examples[static_cast<size_t>(i)];
    EXPECT_EQ(ex.label, e.value);
    EXPECT_TRUE(ex.tokens2.empty());
    const std::vector<std::string> symbols = symbols_of(e.source);
    ASSERT_EQ(ex.tokens.size(), symbols.size());
    for (size_t t = 0; t < symbols.size(); ++t) {
      ASSERT_EQ(ex.tokens[t], data::lra::listops_token(symbols[t]));
      ASSERT_GE(ex.tokens[t], 1);
      ASSERT_LT(ex.tokens[t], train.vocab_size);
    }
  }
  EXPECT_EQ(data::lra::load_sequence_set("listops", dir.path().string(), "val", 0).examples.size(), 4u);
  EXPECT_EQ(data::lra::load_sequence_set("listops", dir.path().string(), "test", 0).examples.size(), 3u);
  const data::lra::SequenceSet cut = data::lra::load_sequence_set("listops", dir.path().string(), "train", 100, 7);
  ASSERT_EQ(cut.examples.size(), 7u);
  EXPECT_EQ(cut.max_length, 100);
  for (const auto& ex : cut.examples) EXPECT_EQ(ex.tokens.size(), 100u);
}

TEST(LraListOps, ReaderTokensOfAHandWrittenFile) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "listops-1000");
  write_bytes(dir.file("listops-1000/basic_test.tsv"),
              "Source\tTarget\n( ( ( [SM 7 ) ( ( ( [MIN 5 ) 6 ) ] ) ) ] )\t2\n\n( ( ( [MED 0 ) 9 ) ] )\t4\n");
  const data::lra::SequenceSet set = data::lra::load_sequence_set("listops", dir.path().string(), "test", 0);
  ASSERT_EQ(set.examples.size(), 2u);
  EXPECT_EQ(set.examples[0].tokens, (std::vector<int32_t>{14, 8, 11, 6, 7, 15, 15}));
  EXPECT_EQ(set.examples[0].label, 2);
  EXPECT_EQ(set.examples[1].tokens, (std::vector<int32_t>{13, 1, 10, 15}));
  EXPECT_EQ(set.examples[1].label, 4);
}

TEST(LraListOps, BadFilesNameTheFileAndLine) {
  TempDir dir;
  const std::string root = dir.path().string();
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); },
               (dir.path() / "listops-1000").string() + " does not exist");
  std::filesystem::create_directories(dir.path() / "listops-1000");
  const std::string path = dir.file("listops-1000/basic_train.tsv");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); }, "cannot open " + path);
  write_bytes(path, "Input\tLabel\n");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); }, path + ":1: the header");
  write_bytes(path, "Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\t9\n( ( ( [MAX 2 ) 9 ) ] )\t10\n");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); }, path + ":3: bad label '10'");
  write_bytes(path, "Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\n");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); }, path + ":2: expected two");
  write_bytes(path, "Source\tTarget\n( ( ( [MAX 2 ) 19 ) ] )\t9\n");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "train", 0); }, path + ":2: unknown symbol '19'");
  expect_error([&] { data::lra::load_sequence_set("listops", root, "dev", 0); }, "unknown split 'dev'");
  expect_error([&] { data::lra::load_sequence_set("listops", root + "/nowhere", "train", 0); },
               root + "/nowhere does not exist");
  expect_error([&] { data::lra::load_sequence_set("lisops", root, "train", 0); }, "unknown LRA task 'lisops'");
}

}  // namespace
}  // namespace vt::test
