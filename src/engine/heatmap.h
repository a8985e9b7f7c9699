// A small RGB raster for the analysis pictures (expert grids, token-selection maps, evaluation heat maps) and
// an annotated heat-map chart like the paper's Figures 9 and 10. PNG output and the 3x5 font come from plot.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt::engine {

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
  /// plot.h's font scaled by `scale`; returns the width drawn.
  int text(int x, int y, const std::string& s, int scale, Rgb8 c);
  void save(const std::string& path) const;

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

/// Width in pixels of `s` in the font at `scale`.
int text_width(const std::string& s, int scale);

/// Viridis-like colour for t in [0, 1] (dark blue → green → yellow); t is clamped.
Rgb8 colour_scale(double t);

/// How write_heatmap draws a values[rows][cols] matrix.
struct HeatmapSpec {
  std::string title;                               // upper-cased
  std::string row_axis, col_axis;                  // e.g. "M", "K"; "TRAINED", "EVALUATED"
  std::vector<std::string> row_labels, col_labels; // one per row / column
  int cell = 56;                                   // cell side in pixels
  int decimals = 1;                                // the value written in each cell (NaN cells stay grey)
  std::vector<std::pair<int, int>> outlined;       // (row, col) cells framed in red, e.g. the training budget
};

/// Draws the matrix (rows top to bottom) coloured by value (min → max of the finite values) with each value
/// written in its cell, the labels, the title and a colour bar, and writes the PNG. Throws on ragged rows or
/// label counts that do not match.
void write_heatmap(const std::vector<std::vector<double>>& values, const HeatmapSpec& spec, const std::string& path);

/// The pixel size (width, height) that write_heatmap gives a rows × cols matrix with `spec`.
std::pair<int, int> heatmap_size(int rows, int cols, const HeatmapSpec& spec);

}  // namespace vt::engine
