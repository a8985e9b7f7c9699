// RgbImage, the colour scale and the annotated heat map (see heatmap.h).
#include "engine/heatmap.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "engine/plot.h"

namespace vt::engine {

RgbImage::RgbImage(int width, int height, Rgb8 background) : w_(width), h_(height) {
  VT_CHECK(width > 0 && height > 0, "[heatmap] image size must be positive, got ", width, "x", height);
  px_.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < px_.size(); i += 3) {
    px_[i] = background.r;
    px_[i + 1] = background.g;
    px_[i + 2] = background.b;
  }
}

Rgb8 RgbImage::get(int x, int y) const {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return {};
  const uint8_t* p = &px_[(static_cast<size_t>(y) * static_cast<size_t>(w_) + static_cast<size_t>(x)) * 3];
  return {p[0], p[1], p[2]};
}

void RgbImage::set(int x, int y, Rgb8 c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  uint8_t* p = &px_[(static_cast<size_t>(y) * static_cast<size_t>(w_) + static_cast<size_t>(x)) * 3];
  p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void RgbImage::blend(int x, int y, Rgb8 c, double alpha) {
  const Rgb8 o = get(x, y);
  auto mix = [alpha](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>(std::lround((1.0 - alpha) * a + alpha * b));
  };
  set(x, y, {mix(o.r, c.r), mix(o.g, c.g), mix(o.b, c.b)});
}

void RgbImage::fill(int x, int y, int w, int h, Rgb8 c) {
  for (int yy = y; yy < y + h; ++yy)
    for (int xx = x; xx < x + w; ++xx) set(xx, yy, c);
}

void RgbImage::frame(int x, int y, int w, int h, Rgb8 c, int thick) {
  fill(x, y, w, thick, c);
  fill(x, y + h - thick, w, thick, c);
  fill(x, y, thick, h, c);
  fill(x + w - thick, y, thick, h, c);
}

int RgbImage::text(int x, int y, const std::string& s, int scale, Rgb8 c) {
  return draw_text(x, y, s, scale, [&](int px, int py) { set(px, py, c); });
}

void RgbImage::save(const std::string& path) const { write_png_rgb(path, w_, h_, px_); }

int text_width(const std::string& s, int scale) { return static_cast<int>(s.size()) * 4 * scale - scale; }

Rgb8 colour_scale(double t) {
  // Matplotlib's viridis at 0, 1/8, ..., 1, interpolated linearly.
  static constexpr std::array<std::array<double, 3>, 9> kStops = {{{68, 1, 84},
                                                                   {71, 44, 122},
                                                                   {59, 81, 139},
                                                                   {44, 113, 142},
                                                                   {33, 144, 141},
                                                                   {39, 173, 129},
                                                                   {92, 200, 99},
                                                                   {170, 220, 50},
                                                                   {253, 231, 37}}};
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * 8.0;
  const int i = std::min(7, static_cast<int>(t));
  const double f = t - i;
  auto ch = [&](int c) { return static_cast<uint8_t>(std::lround(kStops[i][c] * (1 - f) + kStops[i + 1][c] * f)); };
  return {ch(0), ch(1), ch(2)};
}

namespace {

constexpr int kScale = 2, kPad = 10, kLine = 5 * kScale;
constexpr Rgb8 kInk{30, 30, 30}, kNan{200, 200, 200}, kOutline{214, 39, 40};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Layout {
  int left, top, grid_w, grid_h, width, height;
};

Layout layout(int rows, int cols, const HeatmapSpec& spec) {
  int label_w = 0;
  for (const auto& l : spec.row_labels) label_w = std::max(label_w, text_width(upper(l), kScale));
  Layout L{};
  L.left = kPad + (spec.row_axis.empty() ? 0 : text_width(upper(spec.row_axis), kScale) + 2 * kPad) + label_w + kPad;
  L.top = kPad + kLine + kPad + (spec.col_axis.empty() ? 0 : kLine + kPad) + kLine + 6;
  L.grid_w = cols * spec.cell;
  L.grid_h = rows * spec.cell;
  L.width = std::max(L.left + L.grid_w + kPad, 2 * kPad + text_width(upper(spec.title), kScale));
  L.height = L.top + L.grid_h + 14 + 12 + 4 + kLine + kPad;  // grid, gap, colour bar, its labels
  return L;
}

std::string format(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::pair<int, int> heatmap_size(int rows, int cols, const HeatmapSpec& spec) {
  const Layout L = layout(rows, cols, spec);
  return {L.width, L.height};
}

void write_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec, const std::string& path) {
  const int rows = static_cast<int>(values.size()), cols = rows ? static_cast<int>(values[0].size()) : 0;
  VT_CHECK(rows > 0 && cols > 0, "[heatmap] '", path, "': nothing to draw");
  for (const auto& r : values) VT_CHECK(static_cast<int>(r.size()) == cols, "[heatmap] '", path, "': ragged rows");
  VT_CHECK(static_cast<int>(spec.row_labels.size()) == rows && static_cast<int>(spec.col_labels.size()) == cols,
           "[heatmap] '", path, "': ", spec.row_labels.size(), " row and ", spec.col_labels.size(),
           " column labels for a ", rows, "x", cols, " matrix");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : values)
    for (double v : r)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const bool any = std::isfinite(lo);
  auto t_of = [&](double v) { return any && hi > lo ? (v - lo) / (hi - lo) : 0.5; };

  const Layout L = layout(rows, cols, spec);
  RgbImage img(L.width, L.height);
  img.text(kPad, kPad, upper(spec.title), kScale, kInk);
  const int col_label_y = L.top - 6 - kLine;
  if (!spec.col_axis.empty()) {
    const std::string a = upper(spec.col_axis);
    img.text(L.left + (L.grid_w - text_width(a, kScale)) / 2, col_label_y - kPad - kLine, a, kScale, kInk);
  }
  if (!spec.row_axis.empty()) img.text(kPad, L.top + (L.grid_h - kLine) / 2, upper(spec.row_axis), kScale, kInk);
  for (int c = 0; c < cols; ++c) {
    const std::string s = upper(spec.col_labels[static_cast<size_t>(c)]);
    img.text(L.left + c * spec.cell + (spec.cell - text_width(s, kScale)) / 2, col_label_y, s, kScale, kInk);
  }
  for (int r = 0; r < rows; ++r) {
    const std::string s = upper(spec.row_labels[static_cast<size_t>(r)]);
    img.text(L.left - kPad - text_width(s, kScale), L.top + r * spec.cell + (spec.cell - kLine) / 2, s, kScale, kInk);
    for (int c = 0; c < cols; ++c) {
      const double v = values[static_cast<size_t>(r)][static_cast<size_t>(c)];
      const Rgb8 bg = std::isfinite(v) ? colour_scale(t_of(v)) : kNan;
      const int x = L.left + c * spec.cell, y = L.top + r * spec.cell;
      img.fill(x, y, spec.cell, spec.cell, bg);
      img.frame(x, y, spec.cell, spec.cell, {255, 255, 255});
      if (!std::isfinite(v)) continue;
      const std::string s2 = format(v, spec.decimals);
      const double luma = 0.299 * bg.r + 0.587 * bg.g + 0.114 * bg.b;
      const Rgb8 ink = luma < 128 ? Rgb8{255, 255, 255} : kInk;
      img.text(x + (spec.cell - text_width(s2, kScale)) / 2, y + (spec.cell - kLine) / 2, s2, kScale, ink);
    }
  }
  for (const auto& [r, c] : spec.outlined)
    if (r >= 0 && r < rows && c >= 0 && c < cols)
      img.frame(L.left + c * spec.cell, L.top + r * spec.cell, spec.cell, spec.cell, kOutline, 3);
  // Colour bar under the grid with its end values.
  const int bar_y = L.top + L.grid_h + 14;
  for (int x = 0; x < L.grid_w; ++x)
    img.fill(L.left + x, bar_y, 1, 12, colour_scale(L.grid_w > 1 ? static_cast<double>(x) / (L.grid_w - 1) : 0.5));
  if (any) {
    const std::string a = format(lo, spec.decimals), b = format(hi, spec.decimals);
    img.text(L.left, bar_y + 16, a, kScale, kInk);
    img.text(L.left + L.grid_w - text_width(b, kScale), bar_y + 16, b, kScale, kInk);
  }
  img.save(path);
}

}  // namespace vt::engine
