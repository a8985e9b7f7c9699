// Pathfinder's generator: the label against a connectivity check on the drawn pixels alone (the two markers found
// by their value, a flood fill that bridges the one-pixel gaps of the dashes), class balance, determinism, and
// the release layout read back by the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <set>

#include "data/lra/pathfinder_generator.h"
#include "data/lra/pathfinder_reader.h"
#include "data/lra/sequence_set.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

constexpr int kSize = 32;

// Pixels reachable from `seeds` over pixels where keep(x, y), each step at most `reach` in x and in y.
template <class Keep>
std::vector<char> flood(const std::vector<int>& seeds, int reach, Keep keep) {
  std::vector<char> seen(kSize * kSize, 0);
  std::deque<int> queue(seeds.begin(), seeds.end());
  for (int s : seeds) seen[s] = 1;
  while (!queue.empty()) {
    const int at = queue.front();
    queue.pop_front();
    for (int dy = -reach; dy <= reach; ++dy)
      for (int dx = -reach; dx <= reach; ++dx) {
        const int x = at % kSize + dx, y = at / kSize + dy;
        if (x < 0 || y < 0 || x >= kSize || y >= kSize || seen[y * kSize + x] || !keep(x, y)) continue;
        seen[y * kSize + x] = 1;
        queue.push_back(y * kSize + x);
      }
  }
  return seen;
}

// The groups of touching pixels at 255: the markers.
std::vector<std::vector<int>> bright_blobs(const std::vector<uint8_t>& px) {
  std::vector<std::vector<int>> blobs;
  std::vector<char> taken(px.size(), 0);
  for (int i = 0; i < kSize * kSize; ++i) {
    if (px[i] != 255 || taken[i]) continue;
    const std::vector<char> blob = flood({i}, 1, [&](int x, int y) { return px[y * kSize + x] == 255; });
    blobs.emplace_back();
    for (int j = 0; j < kSize * kSize; ++j)
      if (blob[j]) {
        taken[j] = 1;
        blobs.back().push_back(j);
      }
  }
  return blobs;
}

TEST(LraPathfinder, LabelIsWhetherTheDrawnMarkersAreConnected) {
  const int n = 300;
  int positives = 0, distractors = 0;
  for (int i = 0; i < n; ++i) {
    const data::lra::PathfinderImage img = data::lra::generate_pathfinder_example(1, i);
    ASSERT_EQ(img.pixels.size(), static_cast<size_t>(kSize * kSize));
    const std::vector<std::vector<int>> blobs = bright_blobs(img.pixels);
    ASSERT_EQ(blobs.size(), 2u) << "image " << i;
    EXPECT_EQ(blobs[0].size(), 9u);
    EXPECT_EQ(blobs[1].size(), 9u);
    const std::vector<char> reached = flood(blobs[0], 2, [&](int x, int y) { return img.pixels[y * kSize + x] > 0; });
    const bool connected = reached[blobs[1][0]] != 0;
    ASSERT_EQ(img.label, connected ? 1 : 0) << "image " << i;
    // Without bridging the gaps the dashes do not join: the contours are dashed.
    const std::vector<char> solid = flood(blobs[0], 1, [&](int x, int y) { return img.pixels[y * kSize + x] > 0; });
    int inked = 0, solid_count = 0, reached_count = 0;
    for (int p = 0; p < kSize * kSize; ++p) {
      inked += img.pixels[p] > 0;
      solid_count += solid[p];
      reached_count += reached[p];
    }
    EXPECT_LT(solid_count, reached_count) << "image " << i;
    EXPECT_GT(inked, reached_count) << "image " << i << ": no other contour drawn";
    positives += img.label;
    distractors += img.distractors;
  }
  EXPECT_GT(positives, n * 4 / 10);
  EXPECT_LT(positives, n * 6 / 10);
  EXPECT_GT(distractors, n * 3);  // LRA's 5 distractors of 4 paddles, most of them fitting
}

TEST(LraPathfinder, TheSeedDecidesEveryImage) {
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(data::lra::generate_pathfinder_example(9, i).pixels, data::lra::generate_pathfinder_example(9, i).pixels);
    EXPECT_NE(data::lra::generate_pathfinder_example(9, i).pixels,
              data::lra::generate_pathfinder_example(10, i).pixels);
  }
}

TEST(LraPathfinder, WrittenReleaseReadsBackThroughTheReader) {
  TempDir dir;
  int64_t last = -1;
  data::lra::write_pathfinder_release(dir.path().string(), 4, 1030, {}, [&](int64_t done, int64_t) { last = done; });
  EXPECT_EQ(last, 1030);
  const auto base = dir.path() / data::lra::kPathfinderFolder;
  EXPECT_TRUE(std::filesystem::exists(base / "imgs/1/sample_29.png"));
  EXPECT_TRUE(std::filesystem::exists(base / "metadata/1.npy"));
  std::multiset<std::vector<int32_t>> generated, read;
  for (int i = 0; i < 1030; ++i) {
    const data::lra::PathfinderImage img = data::lra::generate_pathfinder_example(4, i);
    std::vector<int32_t> tokens(img.pixels.begin(), img.pixels.end());
    for (int32_t& t : tokens) t += 1;
    tokens.push_back(img.label);
    generated.insert(tokens);
  }
  const size_t sizes[3] = {824, 103, 103};
  const char* splits[3] = {"train", "val", "test"};
  for (int s = 0; s < 3; ++s) {
    const data::lra::SequenceSet set = data::lra::load_sequence_set("pathfinder", dir.path().string(), splits[s], 0);
    EXPECT_EQ(set.examples.size(), sizes[s]) << splits[s];
    for (const auto& ex : set.examples) {
      std::vector<int32_t> tokens = ex.tokens;
      tokens.push_back(ex.label);
      read.insert(tokens);
    }
  }
  EXPECT_TRUE(read == generated);
}

}  // namespace
}  // namespace vt::test
