// The LRA readers of IMDB (aclImdb), AAN (tsv_data), CIFAR-10 (binary batches) and Pathfinder (metadata + PNGs),
// each on small files written here in the original format, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/lra/pathfinder_reader.h"
#include "data/lra/sequence_set.h"
#include "image_writers.h"
#include "test_util.h"
#include "unit/io_temp_dir.h"

namespace fs = std::filesystem;

namespace vt::test {
namespace {

using data::lra::load_sequence_set;
using data::lra::SequenceSet;

std::vector<int32_t> plus_one(const std::string& text) {
  std::vector<int32_t> out;
  for (unsigned char c : text) out.push_back(c + 1);
  return out;
}

void write_review(const TempDir& dir, const std::string& rel, const std::string& text) {
  fs::create_directories((dir.path() / rel).parent_path());
  write_bytes(dir.file(rel), text);
}

TEST(LraText, ReadsAclImdbAsBytesWithNegAndPosInterleaved) {
  TempDir dir;
  write_review(dir, "aclImdb/train/neg/0_3.txt", "Bad.");
  write_review(dir, "aclImdb/train/neg/1_2.txt", "Worse <br />\xc3\xa9");
  write_review(dir, "aclImdb/train/pos/0_9.txt", "Good");
  write_review(dir, "aclImdb/train/urls_pos.txt", "not a review");
  write_review(dir, "aclImdb/test/neg/0_1.txt", "no");
  write_review(dir, "aclImdb/test/pos/0_10.txt", "yes");
  const SequenceSet train = load_sequence_set("text", dir.path().string(), "train", 0);
  EXPECT_EQ(train.vocab_size, 257);
  EXPECT_EQ(train.num_classes, 2);
  EXPECT_EQ(train.max_length, 4000);
  ASSERT_EQ(train.examples.size(), 3u);
  EXPECT_EQ(train.examples[0].tokens, plus_one("Bad."));
  EXPECT_EQ(train.examples[0].label, 0);
  EXPECT_EQ(train.examples[1].tokens, plus_one("Good"));
  EXPECT_EQ(train.examples[1].label, 1);
  EXPECT_EQ(train.examples[2].tokens, plus_one("Worse <br />\xc3\xa9"));
  EXPECT_EQ(train.examples[2].tokens.back(), 0xa9 + 1);
  const SequenceSet cut = load_sequence_set("text", dir.path().string(), "train", 3, 2);
  ASSERT_EQ(cut.examples.size(), 2u);
  EXPECT_EQ(cut.examples[0].tokens, plus_one("Bad"));
  EXPECT_EQ(cut.examples[1].label, 1);
  // No validation split in LRA's text task: val reads the test reviews.
  const SequenceSet val = load_sequence_set("text", dir.path().string(), "val", 0);
  ASSERT_EQ(val.examples.size(), 2u);
  EXPECT_EQ(val.examples[1].tokens, plus_one("yes"));
  fs::remove_all(dir.path() / "aclImdb/test/pos");
  expect_error([&] { load_sequence_set("text", dir.path().string(), "test", 0); },
               (dir.path() / "aclImdb/test/pos").string() + " does not exist");
  expect_error([&] { load_sequence_set("text", dir.file("aclImdb"), "test", 0); },
               dir.file("aclImdb") + "/aclImdb does not exist");
}

TEST(LraRetrieval, ReadsBothDocumentsOfEachAanPair) {
  TempDir dir;
  fs::create_directories(dir.path() / "tsv_data");
  write_bytes(dir.file("tsv_data/new_aan_pairs.train.tsv"),
              "1.0\tP00-1001\tW05-0203\tText one \"quoted\"\tsecond doc\r\n0\tA\tB\tabc\tde\n");
  write_bytes(dir.file("tsv_data/new_aan_pairs.eval.tsv"), "0.0\tA\tB\tx\tyz\n");
  const SequenceSet train = load_sequence_set("retrieval", dir.path().string(), "train", 0);
  EXPECT_TRUE(train.pairs());
  EXPECT_EQ(train.vocab_size, 257);
  ASSERT_EQ(train.examples.size(), 2u);
  EXPECT_EQ(train.examples[0].label, 1);
  EXPECT_EQ(train.examples[0].tokens, plus_one("Text one \"quoted\""));
  EXPECT_EQ(train.examples[0].tokens2, plus_one("second doc"));
  EXPECT_EQ(train.examples[1].label, 0);
  const SequenceSet cut = load_sequence_set("retrieval", dir.path().string(), "train", 4);
  EXPECT_EQ(cut.examples[0].tokens, plus_one("Text"));
  EXPECT_EQ(cut.examples[0].tokens2, plus_one("seco"));
  const SequenceSet val = load_sequence_set("retrieval", dir.path().string(), "val", 0);
  ASSERT_EQ(val.examples.size(), 1u);
  EXPECT_EQ(val.examples[0].tokens2, plus_one("yz"));

  const std::string test = dir.file("tsv_data/new_aan_pairs.test.tsv");
  expect_error([&] { load_sequence_set("retrieval", dir.path().string(), "test", 0); }, "cannot open " + test);
  write_bytes(test, "1\ta\tb\tc\td\n1\ta\tb\tonly four\n");
  expect_error([&] { load_sequence_set("retrieval", dir.path().string(), "test", 0); },
               test + ":2: 4 tab-separated columns, expected five");
  write_bytes(test, "0.5\ta\tb\tc\td\n");
  expect_error([&] { load_sequence_set("retrieval", dir.path().string(), "test", 0); }, test + ":1: bad label '0.5'");
}

// A CIFAR-10 record: the label, then 1024 red, 1024 green and 1024 blue bytes; pixel p of record gets rgb.
std::string cifar_record(uint8_t label, uint8_t r, uint8_t g, uint8_t b) {
  std::string rec(1 + 3072, '\0');
  rec[0] = static_cast<char>(label);
  std::fill(rec.begin() + 1, rec.begin() + 1025, static_cast<char>(r));
  std::fill(rec.begin() + 1025, rec.begin() + 2049, static_cast<char>(g));
  std::fill(rec.begin() + 2049, rec.end(), static_cast<char>(b));
  return rec;
}

TEST(LraImage, GrayscaleAsTensorflowAndLrasSplitOfTheTrainingBatches) {
  TempDir dir;
  fs::create_directories(dir.path() / "cifar-10-batches-bin");
  // {r, g, b} and the gray value worked out by hand from tf.image.rgb_to_grayscale: trunc(255.5 * (0.2989 r +
  // 0.5870 g + 0.1140 b) / 255), e.g. pure green is 149.98 -> 149, not 150.
  const uint8_t colours[10][4] = {{0, 0, 0, 0},        {255, 255, 255, 255}, {255, 0, 0, 76},  {0, 255, 0, 149},
                                  {0, 0, 255, 29},     {100, 150, 200, 141}, {10, 10, 10, 10}, {1, 2, 3, 1},
                                  {200, 100, 50, 124}, {30, 60, 90, 54}};
  for (int b = 0; b < 5; ++b) {
    std::string bytes;
    for (int k = 0; k < 2; ++k) {
      const int i = 2 * b + k;
      bytes += cifar_record(static_cast<uint8_t>(i), colours[i][0], colours[i][1], colours[i][2]);
    }
    write_bytes(dir.file("cifar-10-batches-bin/data_batch_" + std::to_string(b + 1) + ".bin"), bytes);
  }
  write_bytes(dir.file("cifar-10-batches-bin/test_batch.bin"), cifar_record(3, 0, 255, 0));
  const SequenceSet train = load_sequence_set("image", dir.path().string(), "train", 0);
  EXPECT_EQ(train.vocab_size, 257);
  EXPECT_EQ(train.num_classes, 10);
  EXPECT_EQ(train.max_length, 1024);
  ASSERT_EQ(train.examples.size(), 9u);  // 90% of the 10 training records
  for (int i = 0; i < 9; ++i) {
    const auto& ex = train.examples[static_cast<size_t>(i)];
    EXPECT_EQ(ex.label, i);
    ASSERT_EQ(ex.tokens.size(), 1024u);
    EXPECT_EQ(ex.tokens.front(), colours[i][3] + 1) << "record " << i;
    EXPECT_EQ(ex.tokens.back(), colours[i][3] + 1) << "record " << i;
  }
  const SequenceSet val = load_sequence_set("image", dir.path().string(), "val", 0);
  ASSERT_EQ(val.examples.size(), 1u);
  EXPECT_EQ(val.examples[0].label, 9);
  EXPECT_EQ(val.examples[0].tokens[500], 54 + 1);
  const SequenceSet test = load_sequence_set("image", dir.path().string(), "test", 0);
  ASSERT_EQ(test.examples.size(), 1u);
  EXPECT_EQ(test.examples[0].tokens[0], 150);
  EXPECT_EQ(load_sequence_set("image", dir.path().string(), "train", 0, 3).examples.size(), 3u);

  const std::string bad = dir.file("cifar-10-batches-bin/test_batch.bin");
  write_bytes(bad, cifar_record(3, 0, 0, 0).substr(0, 3000));
  expect_error([&] { load_sequence_set("image", dir.path().string(), "test", 0); },
               bad + " has 3000 bytes, not a whole number of 3073-byte");
  write_bytes(bad, cifar_record(10, 0, 0, 0));
  expect_error([&] { load_sequence_set("image", dir.path().string(), "test", 0); }, bad + ": record 0 has label 10");
  fs::remove(dir.file("cifar-10-batches-bin/data_batch_4.bin"));
  expect_error([&] { load_sequence_set("image", dir.path().string(), "val", 0); },
               "cannot read " + dir.file("cifar-10-batches-bin/data_batch_4.bin"));
}

// 20 images in the release layout; image i is filled with the value i, its label is i % 2; image 7 is empty (the
// release has a few such files, which LRA skips).
void write_pathfinder_pool(const TempDir& dir) {
  const fs::path base = dir.path() / data::lra::kPathfinderFolder;
  fs::create_directories(base / "imgs" / "0");
  fs::create_directories(base / "imgs" / "1");
  fs::create_directories(base / "metadata");
  std::string meta[2];
  for (int i = 0; i < 20; ++i) {
    const int folder = i / 10;
    const std::string name = "sample_" + std::to_string(i % 10) + ".png";
    const std::string path = (base / "imgs" / std::to_string(folder) / name).string();
    if (i == 7) {
      write_bytes(path, "");
    } else {
      write_png(path, cv::Mat(32, 32, CV_8UC1, cv::Scalar(i)));
    }
    meta[folder] += "imgs/" + std::to_string(folder) + " " + name + " " + std::to_string(i % 10) + " " +
                    std::to_string(i % 2) + " 2 1.5 14\n";
  }
  write_bytes((base / "metadata" / "0.npy").string(), meta[0]);
  write_bytes((base / "metadata" / "1.npy").string(), meta[1]);
}

TEST(LraPathfinder, ReaderSplitsThePoolEightyTenTenAndSkipsEmptyImages) {
  TempDir dir;
  write_pathfinder_pool(dir);
  std::multiset<int> seen;
  size_t sizes[3];
  const char* splits[3] = {"train", "val", "test"};
  for (int s = 0; s < 3; ++s) {
    const SequenceSet set = load_sequence_set("pathfinder", dir.path().string(), splits[s], 0);
    EXPECT_EQ(set.vocab_size, 257);
    EXPECT_EQ(set.num_classes, 2);
    sizes[s] = set.examples.size();
    for (const auto& ex : set.examples) {
      ASSERT_EQ(ex.tokens.size(), 1024u);
      const int id = ex.tokens[0] - 1;
      EXPECT_TRUE(std::all_of(ex.tokens.begin(), ex.tokens.end(), [&](int32_t t) { return t == id + 1; }));
      EXPECT_EQ(ex.label, id % 2);
      seen.insert(id);
    }
  }
  // 20 entries: 16 / 2 / 2 by position, one of them the empty image.
  EXPECT_EQ(sizes[0] + sizes[1] + sizes[2], 19u);
  EXPECT_GE(sizes[0], 15u);
  EXPECT_EQ(sizes[1] + sizes[2], 19u - sizes[0]);
  std::multiset<int> expected;
  for (int i = 0; i < 20; ++i)
    if (i != 7) expected.insert(i);
  EXPECT_EQ(seen, expected);
  // The permutation is fixed: the same split twice, and not simply the file order.
  const auto entries = data::lra::read_pathfinder_metadata((dir.path() / data::lra::kPathfinderFolder).string());
  ASSERT_EQ(entries.size(), 20u);
  const auto train_a = data::lra::pathfinder_split(entries, "train");
  const auto train_b = data::lra::pathfinder_split(entries, "train");
  ASSERT_EQ(train_a.size(), 16u);
  EXPECT_EQ(data::lra::pathfinder_split(entries, "val").size(), 2u);
  EXPECT_EQ(data::lra::pathfinder_split(entries, "test").size(), 2u);
  bool identity = true;
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(train_a[i].image, train_b[i].image);
    identity = identity && train_a[i].image == entries[i].image;
  }
  EXPECT_FALSE(identity);
}

TEST(LraPathfinder, BadMetadataAndImagesNameTheFile) {
  TempDir dir;
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); },
               (dir.path() / data::lra::kPathfinderFolder).string() + " does not exist");
  write_pathfinder_pool(dir);
  const fs::path base = dir.path() / data::lra::kPathfinderFolder;
  const std::string meta = (base / "metadata" / "1.npy").string();
  write_bytes(meta, "imgs/1 sample_0.png 0 1\nimgs/1 sample_1.png 1\n");
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); },
               meta + ":2: expected at least four space-separated columns");
  write_bytes(meta, "imgs/1 sample_0.png 0 3\n");
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); }, meta + ":1: bad label '3'");
  fs::remove(meta);
  for (int i = 0; i < 10; ++i)
    if (i != 7)
      write_png((base / "imgs/0" / ("sample_" + std::to_string(i) + ".png")).string(),
                cv::Mat(31, 32, CV_8UC1, cv::Scalar(0)));
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); }, "is 32x31, expected 32x32");
  fs::remove(base / "imgs/0/sample_3.png");
  fs::remove(base / "imgs/0/sample_0.png");
  fs::remove(base / "imgs/0/sample_1.png");
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); }, "imgs/0/sample_");
  fs::remove_all(base / "metadata");
  expect_error([&] { load_sequence_set("pathfinder", dir.path().string(), "train", 0); },
               (base / "metadata").string() + " does not exist");
}

}  // namespace
}  // namespace vt::test
