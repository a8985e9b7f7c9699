// A training image's random choices as data (data/sources.h TrainImageDraw, data/rand_augment.h AugDraw): drawing
// them from a sample's stream takes exactly the draws the image path takes, and applying them (full decode, crop,
// flip, the pixel ops) gives the image path's pixels; so an implementation of the ops elsewhere (the device) gets the
// same sample from the same stream, with RandomErasing drawn after at the same position.
#include <gtest/gtest.h>

#include "data/image_decode.h"
#include "data/rand_augment.h"
#include "data/sources.h"
#include "data/transforms.h"
#include "image_writers.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

void expect_draws_reproduce_the_image_path(data::ClassificationTransform t, const char* what) {
  t.crop_decode = false, t.dct_downscale = false;  // full decodes, so that the test can redo the crop itself
  TempDir dir;
  std::vector<data::LabeledFile> files;
  std::vector<cv::Mat> decoded;
  for (int i = 0; i < 6; ++i) {
    const std::string p = dir.file("img" + std::to_string(i) + ".JPEG");
    write_jpeg_rgb(p, pattern_rgb(70 + 9 * i, 50 + 7 * i, i));
    files.push_back({p, 0});
  }
  const data::ImageFileSource source(files, t);
  const data::RandAugmentConfig ra =
      t.auto_augment.empty() ? data::RandAugmentConfig{} : data::parse_rand_augment(t.auto_augment);
  int ops = 0, flips = 0;
  for (int64_t position = 0; position < 24; ++position) {
    const int64_t index = position % 6;
    data::SampleRng image_rng(7, 1, position), draw_rng(7, 1, position);
    const cv::Mat image = source.transformed(index, image_rng);
    const std::vector<uint8_t> bytes = data::read_file_bytes(files[static_cast<size_t>(index)].path);
    const cv::Mat full = data::decode_rgb(bytes, "img", 0, 0, 0);
    const data::TrainImageDraw d = source.draw_train(full.cols, full.rows, draw_rng);
    EXPECT_EQ(image_rng.bits(), draw_rng.bits()) << what << " position " << position << ": stream positions differ";
    // The order the stream is read in (timm's: the crop box, the flip, then the pixel ops).
    data::SampleRng spec_rng(7, 1, position);
    const data::CropBox box = data::random_resized_crop_box(full.cols, full.rows, spec_rng, t.crop);
    const bool flip = spec_rng.bernoulli(t.hflip);
    const data::AugDraw spec_ops =
        t.auto_augment.empty() ? data::draw_color_jitter(t.color_jitter, t.color_jitter, t.color_jitter, spec_rng)
                               : data::draw_rand_augment(ra, spec_rng);
    EXPECT_TRUE(box.x == d.box.x && box.y == d.box.y && box.width == d.box.width && box.height == d.box.height)
        << what << " position " << position;
    EXPECT_EQ(flip, d.flip) << what << " position " << position;
    ASSERT_EQ(spec_ops.steps.size(), d.augment.steps.size()) << what << " position " << position;
    for (size_t s = 0; s < spec_ops.steps.size(); ++s)
      EXPECT_TRUE(spec_ops.steps[s].op == d.augment.steps[s].op &&
                  spec_ops.steps[s].argument == d.augment.steps[s].argument)
          << what << " position " << position << " op " << s;
    cv::Mat redone = data::crop_and_fast_resize(full, d.box, t.size, t.filter);
    if (d.flip) redone = data::hflip(redone);
    redone = data::apply_aug_draw(redone, d.augment, ra);
    EXPECT_EQ(max_abs_diff_u8(image, redone), 0) << what << " position " << position;
    ops += static_cast<int>(d.augment.steps.size());
    flips += d.flip;
  }
  EXPECT_GT(ops, 10) << what << ": the draws should include pixel ops";
  EXPECT_GT(flips, 3) << what;
}

TEST(TrainDraws, RandAugmentDrawsReproduceTheImagePath) {
  expect_draws_reproduce_the_image_path(data::deit_train_transform(32), "RandAugment");
}

TEST(TrainDraws, ColorJitterDrawsReproduceTheImagePath) {
  data::ClassificationTransform t = data::train_transform(32);
  t.auto_augment.clear();
  t.color_jitter = 0.4;
  expect_draws_reproduce_the_image_path(t, "ColorJitter");
}

}  // namespace
}  // namespace vt::test
