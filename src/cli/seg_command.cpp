// `vitrain seg-eval` and `vitrain viz seg` (see seg_command.h).
#include "cli/seg_command.h"

#include <cstdio>
#include <memory>
#include <opencv2/imgproc.hpp>

#include "cli/command_support.h"
#include "core/error.h"
#include "data/ade20k_meta.h"
#include "data/datasets.h"
#include "data/image_decode.h"
#include "engine/device.h"
#include "figures/raster.h"
#include "engine/seg_evaluate.h"
#include "io/atomic_file.h"

namespace vt::cli {

namespace {

// Class names for the table: ADE20K's for 150 classes, numbered otherwise.
std::vector<std::string> class_names(int64_t num_classes) {
  if (num_classes == data::kAde20kClasses) return data::ade20k_class_names();
  return {};
}

// One panel: an RGB image, or a class map drawn in the palette (ignore = black).
void draw_rgb(figures::RgbImage& out, int x0, const cv::Mat& rgb) {
  for (int y = 0; y < rgb.rows; ++y) {
    const uint8_t* p = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) out.set(x0 + x, y, {p[3 * x], p[3 * x + 1], p[3 * x + 2]});
  }
}

void draw_classes(figures::RgbImage& out, int x0, const cv::Mat& classes) {
  for (int y = 0; y < classes.rows; ++y) {
    const uint8_t* p = classes.ptr<uint8_t>(y);
    for (int x = 0; x < classes.cols; ++x) {
      const auto c = data::seg_class_colour(p[x]);
      out.set(x0 + x, y, {c[0], c[1], c[2]});
    }
  }
}

}  // namespace

int run_seg_eval(const io::Config& cfg, const std::string& weights, const engine::WeightsLoadOptions& load,
                 const std::string& json_path, bool print_json) {
  const engine::SegEvalResult r = engine::evaluate_segmentation_weights(cfg, weights, load);
  const std::vector<std::string> names = class_names(static_cast<int64_t>(r.scores.iou.size()));
  std::printf("%s", engine::seg_scores_table(r.scores, names).c_str());
  std::printf("%s  (%lld images, %.2f img/s, %s)\n", engine::seg_summary_line(r.scores).c_str(),
              static_cast<long long>(r.images), r.img_per_s, cfg.model.name.c_str());
  const std::string json =
      engine::seg_scores_json(r.scores, names, {{"images", static_cast<double>(r.images)}, {"img_per_s", r.img_per_s}});
  if (print_json) std::printf("%s\n", json.c_str());
  if (!json_path.empty()) {
    io::AtomicFile out(json_path);
    out.write(json + "\n");
    out.commit();
    std::printf("scores: %s\n", json_path.c_str());
  }
  return 0;
}

// seg-eval and viz seg: a segmentation config and its weights are required.
const RunOptionsSpec kSegRunOptions{
    .config_help = "YAML config file (with model.decoder)", .config_required = true, .weights = true};

void add_seg_eval_command(CLI::App& app) {
  struct Options {
    RunOptions run;
    std::string json;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "seg-eval",
      "evaluate segmentation weights on the validation split (sliding window; mIoU, mAcc, aAcc and a "
      "per-class table, mmseg semantics)");
  add_run_options(*cmd, opts->run, kSegRunOptions);
  cmd->add_option("--json", opts->json, "also write the scores (with per-class IoU/Acc) to this JSON file");
  cmd->callback([opts] {
    finish_command(
        [&] { return run_seg_eval(opts->run.load(), opts->run.weights, opts->run.weights_options(), opts->json); });
  });
}

void add_viz_seg_command(CLI::App& viz) {
  struct Options {
    RunOptions run;
    std::string image, label, out;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = viz.add_subcommand(
      "seg",
      "segment one image: the image, its ground truth (when --label is given) and the prediction side by "
      "side in the ADE20K palette (ignored pixels black), as PNG");
  add_run_options(*cmd, opts->run, kSegRunOptions);
  cmd->add_option("-i,--image", opts->image, "image file (JPEG or PNG)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-l,--label", opts->label, "annotation PNG (ADE20K values; reduce_zero_label applied)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", opts->out, "output PNG")->required();
  cmd->callback([opts] {
    finish_command([&] {
      const io::Config cfg = opts->run.load();
      const engine::SegEvalOptions eval = engine::seg_eval_options(cfg);
      const cv::Mat image = data::load_rgb(opts->image, eval.max_image_pixels);
      cv::Mat label;
      if (!opts->label.empty()) {
        label = data::load_label_png(opts->label, eval.max_image_pixels);
        VT_CHECK(label.size() == image.size(), "[viz seg] label ", opts->label, " is ", label.cols, "x", label.rows,
                 " but image ", opts->image, " is ", image.cols, "x", image.rows);
        if (eval.reduce_zero_label) data::reduce_zero_label(label);
      }
      const Device device = engine::resolve_device(cfg.train.device);
      const auto model = engine::load_segmenter_weights(cfg, opts->run.weights, device, opts->run.weights_options());
      const cv::Mat pred = engine::predict_segmentation(*model, image, eval, device);
      constexpr int kGap = 8;
      const int panels = label.empty() ? 2 : 3;
      figures::RgbImage out(panels * image.cols + (panels - 1) * kGap, image.rows);
      draw_rgb(out, 0, image);
      int x = image.cols + kGap;
      if (!label.empty()) {
        draw_classes(out, x, label);
        x += image.cols + kGap;
      }
      draw_classes(out, x, pred);
      out.save(opts->out);
      std::printf("%s\n", opts->out.c_str());
      return 0;
    });
  });
}

}  // namespace vt::cli
