// Figures 3 and 4 from one image's routing (see viz_experts.h).
#include "analysis/viz_experts.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgproc.hpp>

#include "autograd/node.h"
#include "core/error.h"
#include "data/image_decode.h"
#include "data/sources.h"
#include "engine/device.h"
#include "engine/timm_weights.h"
#include "engine/weights_load.h"
#include "figures/chart.h"
#include "figures/figure.h"
#include "figures/selection_map.h"
#include "engine/trainer.h"
#include "io/safetensors.h"
#include "models/mita_attention.h"
#include "nn/autocast.h"

namespace vt::analysis {
namespace {

constexpr figures::Rgb8 kKey{255, 127, 14}, kQuery{31, 119, 180}, kCell{200, 200, 200};
constexpr int kPad = 10, kGap = 8, kStrip = 18, kTitle = 46, kLegendLine = 17, kMinWidth = 470, kMinWidthMean = 560;
// Fashion-MNIST's normalization, as the trainer's in-memory path uses for 1-channel models.
constexpr float kFashionMean = 0.2860f, kFashionStd = 0.3530f;

int panel_scale(int picture_size) { return std::max(1, (112 + picture_size - 1) / picture_size); }

int64_t grid_columns(int64_t m) {
  int64_t c = 1;
  while (c * c < m) ++c;
  return c;
}

figures::RgbImage picture_from(const cv::Mat& rgb) {
  figures::RgbImage p(rgb.cols, rgb.rows);
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x) {
      const cv::Vec3b v = rgb.at<cv::Vec3b>(y, x);
      p.set(x, y, {v[0], v[1], v[2]});
    }
  return p;
}

const int32_t* head_ptr(const Tensor& t, int64_t head) { return t.data<int32_t>() + head * (t.numel() / t.size(1)); }

void check_head(const ImageRouting& r, int64_t head) {
  VT_CHECK(head >= 0 && head < r.heads, "[viz] --head ", head, " is out of range: the model has ", r.heads, " heads");
}

}  // namespace

VizInput load_viz_input(const io::Config& cfg, const std::string& path) {
  const models::ViTConfig v = engine::vit_config(cfg);
  const int size = static_cast<int>(v.img_size);
  VizInput in;
  if (v.in_chans == 3) {
    data::ImageFileSource src({{path, 0}}, data::eval_transform(size, cfg.data.crop_pct));
    data::SampleRng rng(0, 0, 0);  // the eval transform draws nothing
    in.picture = picture_from(src.transformed(0, rng));
    in.image = Tensor::empty({1, 3, size, size});
    src.load(0, rng, in.image.data<float>());
    return in;
  }
  VT_CHECK(v.in_chans == 1, "[viz] model.in_chans = ", v.in_chans, ": images are read as RGB (3) or gray (1)");
  cv::Mat gray, small;
  cv::cvtColor(data::load_rgb(path), gray, cv::COLOR_RGB2GRAY);
  cv::resize(gray, small, cv::Size(size, size), 0, 0, cv::INTER_AREA);
  cv::Mat rgb;
  cv::cvtColor(small, rgb, cv::COLOR_GRAY2RGB);
  in.picture = picture_from(rgb);
  in.image = Tensor::empty({1, 1, size, size});
  data::Normalization norm;
  norm.mean[0] = kFashionMean;
  norm.std[0] = kFashionStd;
  data::to_normalized_chw(small, norm, in.image.data<float>());
  return in;
}

ImageRouting record_image_routing(const models::VisionTransformer& model, const Tensor& image,
                                  std::optional<DType> amp) {
  const models::ViTConfig& v = model.config();
  ImageRouting r;
  for (const auto& block : model.blocks) {
    auto mita = std::dynamic_pointer_cast<models::MitaAttention>(block->attn);
    VT_CHECK(mita,
             "[viz] expert pictures need MiTA attention (model.attention.type mita or mita_route); this model's "
             "attention is '",
             v.attention.type, "'");
    VT_CHECK(mita->options().s == 1,
             "[viz] expert pictures need top-1 routing; model.attention.s = ", mita->options().s);
    r.m = mita->options().m;
    r.k = mita->options().k;
    r.heads = mita->options().heads;
  }
  VT_CHECK(!model.blocks.empty(), "[viz] the model has no blocks");
  const Device device = model.named_parameters().front().second.device();
  {
    NoGradGuard no_grad;
    models::MitaRoutingTap tap(models::MitaRoutingTap::Mode::record);
    {
      nn::AutocastGuard autocast(amp);
      (void)model.forward(image.to(device));
    }
    for (const auto& t : tap.routings)
      r.layers.push_back({t.expert_keys.contiguous(), t.experts.contiguous(), t.order, t.offsets});
  }
  VT_CHECK(r.layers.size() == model.blocks.size(), "[viz] ", r.layers.size(), " of ", model.blocks.size(),
           " MiTA layers reported their routing: only the fused path does (model.attention.impl=fused; on CUDA "
           "f32/bf16 with head dim 16, 32, 64 or 128)");
  r.tokens = r.layers.front().experts.size(2);
  r.grid = models::square_grid(r.tokens);
  VT_CHECK(r.grid > 0, "[viz] ", r.tokens - 1, " patch tokens do not form a square grid");
  return r;
}

std::vector<std::vector<int64_t>> selection_counts(const ImageRouting& routing, int64_t head) {
  check_head(routing, head);
  std::vector<std::vector<int64_t>> counts;
  for (const auto& layer : routing.layers) {
    std::vector<int64_t> c(static_cast<size_t>(routing.tokens), 0);
    const int32_t* keys = head_ptr(layer.expert_keys, head);
    for (int64_t i = 0; i < routing.m * routing.k; ++i) ++c[static_cast<size_t>(keys[i])];
    counts.push_back(std::move(c));
  }
  return counts;
}

std::vector<int64_t> routed_experts(const ImageRouting& routing, int64_t layer, int64_t head) {
  check_head(routing, head);
  const int32_t* e = head_ptr(routing.layers.at(static_cast<size_t>(layer)).experts, head);
  return std::vector<int64_t>(e, e + routing.tokens);
}

std::vector<std::vector<double>> mean_selection_counts(const ImageRouting& routing) {
  std::vector<std::vector<double>> mean(routing.layers.size(),
                                        std::vector<double>(static_cast<size_t>(routing.tokens)));
  for (int64_t h = 0; h < routing.heads; ++h) {
    const auto counts = selection_counts(routing, h);
    for (size_t l = 0; l < counts.size(); ++l)
      for (size_t t = 0; t < counts[l].size(); ++t)
        mean[l][t] += static_cast<double>(counts[l][t]) / static_cast<double>(routing.heads);
  }
  return mean;
}

ExpertShares expert_shares(const ImageRouting& routing, int64_t layer, std::optional<int64_t> head, int64_t expert) {
  VT_CHECK(expert >= 0 && expert < routing.m, "[viz] expert ", expert, " is out of range: m = ", routing.m);
  std::vector<int64_t> heads;
  if (head) {
    check_head(routing, *head);
    heads.push_back(*head);
  } else {
    for (int64_t h = 0; h < routing.heads; ++h) heads.push_back(h);
  }
  const double w = 1.0 / static_cast<double>(heads.size());
  ExpertShares s{std::vector<double>(static_cast<size_t>(routing.tokens), 0.0),
                 std::vector<double>(static_cast<size_t>(routing.tokens), 0.0), 0.0};
  for (int64_t h : heads) {
    const int32_t* keys = head_ptr(routing.layers.at(static_cast<size_t>(layer)).expert_keys, h) + expert * routing.k;
    for (int64_t i = 0; i < routing.k; ++i) s.key[static_cast<size_t>(keys[i])] += w;
    const std::vector<int64_t> experts = routed_experts(routing, layer, h);
    for (int64_t n = 0; n < routing.tokens; ++n)
      if (experts[static_cast<size_t>(n)] == expert) s.query[static_cast<size_t>(n)] += w, s.queries += w;
  }
  return s;
}

std::vector<double> expert_key_query_iou(const ImageRouting& routing) {
  std::vector<double> per_layer;
  for (const auto& layer : routing.layers) {
    double sum = 0;
    for (int64_t h = 0; h < routing.heads; ++h) {
      const int32_t* keys = head_ptr(layer.expert_keys, h);
      const int32_t* expert = head_ptr(layer.experts, h);
      for (int64_t j = 0; j < routing.m; ++j) {
        std::vector<char> is_key(static_cast<size_t>(routing.tokens), 0);
        for (int64_t i = 0; i < routing.k; ++i) is_key[static_cast<size_t>(keys[j * routing.k + i])] = 1;
        int64_t both = 0, queries = 0;
        for (int64_t t = 0; t < routing.tokens; ++t)
          if (expert[t] == j) ++queries, both += is_key[static_cast<size_t>(t)];
        sum += static_cast<double>(both) / static_cast<double>(routing.k + queries - both);
      }
    }
    per_layer.push_back(sum / static_cast<double>(routing.heads * routing.m));
  }
  return per_layer;
}

std::pair<int, int> expert_grid_size(int64_t m, int picture_size, bool mean_over_heads) {
  const int panel = picture_size * panel_scale(picture_size);
  const int cols = static_cast<int>(grid_columns(m)), rows = static_cast<int>((m + cols - 1) / cols);
  const int w = 2 * kPad + cols * panel + (cols - 1) * kGap;
  const int title = kTitle + (mean_over_heads ? kLegendLine : 0);
  return {std::max(w, mean_over_heads ? kMinWidthMean : kMinWidth),
          title + rows * (kStrip + panel) + (rows - 1) * kGap + kPad};
}

std::optional<int64_t> parse_head(const std::string& text) {
  if (text == "mean") return std::nullopt;
  size_t used = 0;
  int64_t head = -1;
  try {
    head = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  VT_CHECK(used == text.size() && !text.empty() && head >= 0, "[viz] --head '", text,
           "': a head number (0, 1, ...) or 'mean' (averaged over the heads)");
  return head;
}

void draw_expert_grid(const ImageRouting& routing, int64_t layer, std::optional<int64_t> head,
                      const figures::RgbImage& picture, const std::string& path) {
  using figures::Align, figures::Font, figures::VAlign;
  if (head) check_head(routing, *head);
  VT_CHECK(picture.width() == picture.height() && picture.width() % routing.grid == 0, "[viz] a ", picture.width(), "x",
           picture.height(), " picture does not split into the ", routing.grid, "x", routing.grid, " patch grid");
  const int f = panel_scale(picture.width()), panel = picture.width() * f;
  const int cell = panel / static_cast<int>(routing.grid);
  const int cols = static_cast<int>(grid_columns(routing.m));
  const auto [w, h] = expert_grid_size(routing.m, picture.width(), !head);
  const std::string heads = std::to_string(routing.heads), k = std::to_string(routing.k);
  figures::Figure fig(w, h);
  std::string title_text = "Layer " + std::to_string(layer + 1);
  title_text += head ? ", head " + std::to_string(*head) : ", mean over " + heads + " heads";
  title_text += ": what each of the " + std::to_string(routing.m) + " experts collects";
  fig.text(w / 2.0, 6, title_text, Font{14, true}, figures::kInk, Align::centre, VAlign::top);
  if (head) {
    fig.text(w / 2.0, 26, "orange: its k = " + k + " keys;  blue: the queries routed to it (q);  square: CLS",
             Font{11.5}, figures::kInk, Align::centre, VAlign::top);
  } else {
    fig.text(w / 2.0, 26,
             "shade: share of the " + heads + " heads;  orange: among its k = " + k + " keys (framed: in half or more)",
             Font{11.5}, figures::kInk, Align::centre, VAlign::top);
    fig.text(w / 2.0, 26 + kLegendLine, "blue: queries routed to it;  q: routed queries per head;  square: CLS",
             Font{11.5}, figures::kInk, Align::centre, VAlign::top);
  }
  const int title = kTitle + (head ? 0 : kLegendLine);
  const figures::Colour key = figures::rgb(kKey.r, kKey.g, kKey.b);
  for (int64_t j = 0; j < routing.m; ++j) {
    const int x0 = kPad + static_cast<int>(j % cols) * (panel + kGap);
    const int y0 = title + static_cast<int>(j / cols) * (kStrip + panel + kGap);
    const ExpertShares s = expert_shares(routing, layer, head, j);
    // Label strip: the expert's number, its queries (per head), and the CLS marker at the right.
    char label[48];
    std::snprintf(label, sizeof label, head ? "E%lld  q %.0f" : "E%lld  q %.1f", static_cast<long long>(j), s.queries);
    fig.text(x0, y0 + kStrip / 2.0, label, Font{11.5}, figures::kInk, Align::left, VAlign::middle);
    const int cls_x = x0 + panel - 12, cls_y = y0 + 2;
    if (s.query[0] > 0) fig.fill_rect(cls_x, cls_y, 11, 11, figures::rgb(kQuery.r, kQuery.g, kQuery.b, s.query[0]));
    if (s.key[0] > 0) fig.frame_rect(cls_x, cls_y, 11, 11, figures::rgb(kKey.r, kKey.g, kKey.b, s.key[0]), 2.5);
    else fig.frame_rect(cls_x, cls_y, 11, 11, figures::rgb(kCell.r, kCell.g, kCell.b), 1);
    // A token neither collected nor routed here is dimmed to 30%; the tints grow with the shares (for one head
    // the shares are 0 or 1, and a routed query's blue covers its orange).
    figures::RgbImage tinted(picture.width(), picture.height());
    for (int y = 0; y < picture.height(); ++y)
      for (int x = 0; x < picture.width(); ++x) {
        const figures::Rgb8 p = picture.get(x, y);
        const auto t = static_cast<size_t>(1 + (y * f / cell) * static_cast<int>(routing.grid) + x * f / cell);
        const double kf = s.key[t], qf = s.query[t], lit = 0.3 + 0.7 * std::max(kf, qf);
        tinted.set(x, y,
                   {static_cast<uint8_t>(p.r * lit), static_cast<uint8_t>(p.g * lit), static_cast<uint8_t>(p.b * lit)});
        if (kf * (1 - qf) > 0) tinted.blend(x, y, kKey, 0.55 * kf * (1 - qf));
        if (qf > 0) tinted.blend(x, y, kQuery, 0.55 * qf);
      }
    const int py = y0 + kStrip;
    fig.image(tinted, x0, py, f);
    for (int64_t t = 1; t < routing.tokens; ++t)
      if (s.key[static_cast<size_t>(t)] >= 0.5)
        fig.frame_rect(x0 + static_cast<int>((t - 1) % routing.grid) * cell,
                       py + static_cast<int>((t - 1) / routing.grid) * cell, cell, cell, key,
                       std::max(1.0, cell / 8.0));
  }
  figures::save_figure(fig, path);
}

std::vector<std::string> viz_experts(const io::Config& cfg, const VizExpertsOptions& options) {
  const std::string& type = cfg.model.attention.type;
  VT_CHECK(type == "mita" || type == "mita_route",
           "[viz] expert pictures need MiTA attention (model.attention.type "
           "mita or mita_route); this model's attention is '",
           type, "'");
  io::Config c = cfg;
  c.model.attention.impl = "fused";  // the routing tap sees the fused path only; both paths route alike
  const Device device = engine::resolve_device(c.train.device);
  models::VisionTransformer model(engine::vit_config(c));
  engine::load_timm_weights(model, engine::read_model_weights(options.weights));
  model.to(device);
  model.eval();
  const VizInput in = load_viz_input(c, options.image);
  const ImageRouting routing =
      record_image_routing(model, in.image, device.is_cuda() ? engine::amp_dtype(c) : std::nullopt);
  if (options.head) check_head(routing, *options.head);

  namespace fs = std::filesystem;
  fs::create_directories(options.out_dir);
  std::vector<std::string> written;
  for (size_t l = 0; l < routing.layers.size(); ++l) {
    const std::string name = std::string("layer") + std::to_string(l + 1) + "_experts.png";
    const std::string p = (fs::path(options.out_dir) / name).string();
    draw_expert_grid(routing, static_cast<int64_t>(l), options.head, in.picture, p);
    written.push_back(p);
  }
  // The counts of the drawn head, or of every head (their mean drawn).
  std::vector<int64_t> heads;
  if (options.head) heads.push_back(*options.head);
  else
    for (int64_t h = 0; h < routing.heads; ++h) heads.push_back(h);
  std::vector<std::vector<double>> drawn;
  if (options.head) {
    for (const auto& layer : selection_counts(routing, *options.head)) drawn.emplace_back(layer.begin(), layer.end());
  } else {
    drawn = mean_selection_counts(routing);
  }
  const std::string map = (fs::path(options.out_dir) / "selection_map.png").string();
  figures::draw_selection_map(drawn, routing.grid,
                              figures::selection_heads_label(options.head.value_or(-1), routing.heads), routing.m, map);
  written.push_back(map);
  const std::string csv = (fs::path(options.out_dir) / "selection_counts.csv").string();
  std::ofstream out(csv);
  VT_CHECK(out, "[viz] cannot write '", csv, "'");
  out << "layer,head,token,row,col,count\n";
  for (int64_t head : heads) {
    const auto counts = selection_counts(routing, head);
    for (size_t l = 0; l < counts.size(); ++l)
      for (int64_t t = 0; t < routing.tokens; ++t) {
        const int64_t row = t == 0 ? -1 : (t - 1) / routing.grid, col = t == 0 ? -1 : (t - 1) % routing.grid;
        out << l + 1 << ',' << head << ',' << t << ',' << row << ',' << col << ',' << counts[l][static_cast<size_t>(t)]
            << '\n';
      }
  }
  VT_CHECK(out.flush(), "[viz] failed writing '", csv, "'");
  written.push_back(csv);

  const std::vector<double> iou = expert_key_query_iou(routing);
  const std::string iou_csv = (fs::path(options.out_dir) / "expert_iou.csv").string();
  std::ofstream iou_out(iou_csv);
  VT_CHECK(iou_out, "[viz] cannot write '", iou_csv, "'");
  iou_out << "layer,miou\n";
  figures::Series series{
      "mean over " + std::to_string(routing.heads) + " heads × " + std::to_string(routing.m) + " experts", {}, true};
  for (size_t l = 0; l < iou.size(); ++l) {
    iou_out << l + 1 << ',' << iou[l] << '\n';
    series.points.emplace_back(static_cast<double>(l + 1), 100.0 * iou[l]);
  }
  VT_CHECK(iou_out.flush(), "[viz] failed writing '", iou_csv, "'");
  written.push_back(iou_csv);
  const std::string chart = (fs::path(options.out_dir) / "expert_iou.png").string();
  figures::ChartSpec spec;
  spec.title = "Expert keys vs routed queries (Figure 8)";
  spec.x_title = "layer";
  spec.y_title = "mIoU of keys and queries (%)";
  for (const std::string& f : figures::save_figure(*figures::draw_chart({series}, spec, chart), chart))
    written.push_back(f);
  return written;
}

}  // namespace vt::analysis
