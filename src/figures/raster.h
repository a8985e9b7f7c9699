// An 8-bit RGB raster for the pictures built pixel by pixel (an input image with its patches tinted, a
// segmentation beside its labels), and the colour scale of the heat maps. Text and charts go through figure.h;
// a raster is placed into a figure with Figure::image or saved alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::figures {

struct Rgb8 {
  uint8_t r = 0, g = 0, b = 0;
};

/// An 8-bit RGB image, rows top to bottom; drawing outside it is clipped.
class RgbImage {
 public:
  RgbImage(int width, int height, Rgb8 background = {255, 255, 255});
  int width() const { return w_; }
  int height() const { return h_; }
  Rgb8 get(int x, int y) const;
  void set(int x, int y, Rgb8 c);
  /// Mixes `c` into the pixel: (1 - alpha)·old + alpha·c.
  void blend(int x, int y, Rgb8 c, double alpha);
  void fill(int x, int y, int w, int h, Rgb8 c);
  /// A `thick`-pixel border just inside the rectangle.
  void frame(int x, int y, int w, int h, Rgb8 c, int thick = 1);
  /// Writes the image as a PNG (any other extension: Figure::save's formats) at its own size.
  void save(const std::string& path) const;

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

/// Viridis for t in [0, 1] (dark purple → blue → green → yellow); t is clamped.
Rgb8 colour_scale(double t);

/// colour_scale's stops, evenly spaced from t = 0 to 1 (it interpolates linearly between them): a colour bar
/// drawn as a gradient through them shows the same colours.
std::vector<Rgb8> colour_scale_stops();

}  // namespace vt::figures
