// The ImageFolder pipeline honours data.mean / data.std and data.train_limit / data.test_limit (they used to be
// ignored silently for ImageFolder): limits keep an evenly spaced share of every class, the normalisation is the
// configured one in both splits.
#include <gtest/gtest.h>

#include "test_util.h"
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/image_writers.h"
#include "engine/imagenet_data.h"
#include "io/config.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

struct Tree {
  fs::path root = fs::temp_directory_path() / ("vt_imagenet_data_" + std::to_string(::getpid()));
  // 3 classes x (6 train + 4 val) 24x24 JPEGs.
  Tree() {
    for (int c = 0; c < 3; ++c)
      for (const auto& [split, count] : {std::pair<std::string, int>{"train", 6}, {"val", 4}}) {
        const fs::path dir = root / split / ("class" + std::to_string(c));
        fs::create_directories(dir);
        for (int i = 0; i < count; ++i)
          write_jpeg_rgb((dir / (std::to_string(i) + ".jpg")).string(), pattern_rgb(24, 24, 7 * c + i));
      }
  }
  ~Tree() { fs::remove_all(root); }
};

io::Config folder_config(const Tree& t, std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"data.dataset=imagefolder", "data.data_dir=" + t.root.string(), "data.workers=1",
                             "train.batch_size=2", "eval.batch_size=64", "train.epochs=1"});
  io::Config cfg = io::load_config(fmnist_base_path());
  for (const auto& s : sets) io::apply_override(cfg, s);
  cfg.validate();
  return cfg;
}

struct EvalPass {
  int64_t images = 0;
  std::set<int64_t> labels;
  double min = 1e9, max = -1e9;
};

EvalPass eval_pass(engine::ImageNetData& data) {
  EvalPass p;
  data.for_each_eval_batch([&](const data::Batch& b) {
    p.images += b.images.size(0);
    for (double l : b.labels.to_vector()) p.labels.insert(static_cast<int64_t>(l));
    const std::vector<double> v = b.images.to_vector();
    p.min = std::min(p.min, *std::min_element(v.begin(), v.end()));
    p.max = std::max(p.max, *std::max_element(v.begin(), v.end()));
  });
  return p;
}

TEST(ImageNetData, LimitsKeepAnEvenShareOfEveryClass) {
  Tree t;
  engine::ImageNetData all(folder_config(t, {}), 16, cpu(), true);
  EXPECT_EQ(all.eval_size(), 12);
  EXPECT_EQ(all.train_batches_per_epoch(), 9);  // 18 / 2

  engine::ImageNetData some(folder_config(t, {"data.train_limit=6", "data.test_limit=6"}), 16, cpu(), true);
  EXPECT_EQ(some.eval_size(), 6);
  EXPECT_EQ(some.train_batches_per_epoch(), 3);
  const EvalPass p = eval_pass(some);
  EXPECT_EQ(p.images, 6);
  EXPECT_EQ(p.labels, (std::set<int64_t>{0, 1, 2}));  // not just the first class's four
  EXPECT_EQ(some.num_classes(), 3);
}

TEST(ImageNetData, MeanAndStdNormaliseTheImages) {
  Tree t;
  // mean 0, std 1: the pixels on the 0-1 scale; mean 1: all of them at or below 0; ImageNet's: both signs.
  engine::ImageNetData plain(folder_config(t, {"data.mean=[0,0,0]", "data.std=[1,1,1]"}), 16, cpu(), false);
  const EvalPass a = eval_pass(plain);
  EXPECT_GE(a.min, 0.0);
  EXPECT_LE(a.max, 1.0);
  engine::ImageNetData shifted(folder_config(t, {"data.mean=[1,1,1]", "data.std=[0.5,0.5,0.5]"}), 16, cpu(), false);
  const EvalPass b = eval_pass(shifted);
  EXPECT_GE(b.min, -2.0);
  EXPECT_LE(b.max, 0.0);
  engine::ImageNetData imagenet(folder_config(t, {}), 16, cpu(), false);
  const EvalPass c = eval_pass(imagenet);
  EXPECT_LT(c.min, 0.0);
  EXPECT_GT(c.max, 1.0);
}

}  // namespace
}  // namespace vt::test
