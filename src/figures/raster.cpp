// RgbImage and the viridis colour scale (see the header).
#include "figures/raster.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "figures/figure.h"

namespace vt::figures {

RgbImage::RgbImage(int width, int height, Rgb8 background) : w_(width), h_(height) {
  VT_CHECK(width > 0 && height > 0, "[figure] image size must be positive, got ", width, "x", height);
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
  auto mix = [alpha](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround((1.0 - alpha) * a + alpha * b)); };
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

void RgbImage::save(const std::string& path) const {
  Figure f(w_, h_);
  f.image(*this, 0, 0);
  f.save(path);
}

namespace {
// Viridis sampled at t = 0, 1/8, ..., 1 (matplotlib's table).
constexpr std::array<Rgb8, 9> kViridis = {Rgb8{68, 1, 84},    Rgb8{71, 44, 122},  Rgb8{59, 81, 139},
                                          Rgb8{44, 113, 142}, Rgb8{33, 144, 141}, Rgb8{39, 173, 129},
                                          Rgb8{92, 200, 99},  Rgb8{170, 220, 50}, Rgb8{253, 231, 37}};
}  // namespace

std::vector<Rgb8> colour_scale_stops() { return {kViridis.begin(), kViridis.end()}; }

Rgb8 colour_scale(double t) {
  const auto& stops = kViridis;
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  auto mix = [f](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround(a + (b - a) * f)); };
  return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g), mix(stops[i].b, stops[i + 1].b)};
}

}  // namespace vt::figures
