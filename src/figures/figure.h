// A figure drawn once with cairo (anti-aliased vector drawing) and pango (text laid out in a real font, DejaVu
// Sans through fontconfig), then saved as PNG, SVG or PDF by the file's extension. Coordinates are pixels of the
// PNG, origin top-left.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

namespace vt::figures {

class RgbImage;

/// sRGB colour, components in [0, 1].
struct Colour {
  double r = 0, g = 0, b = 0, a = 1;
};
Colour rgb(uint8_t r, uint8_t g, uint8_t b, double alpha = 1);

/// The charts' palette (matplotlib's tab10): blue, orange, green, red, purple, brown, pink, grey.
Colour palette(size_t i);
inline const Colour kInk{0.1, 0.1, 0.1}, kGridColour{0.88, 0.88, 0.88}, kAxisColour{0.25, 0.25, 0.25};

enum class Align { left, centre, right };
enum class VAlign { top, middle, bottom };

struct Font {
  double size = 13;  // pixels
  bool bold = false;
};

class Figure {
 public:
  /// A `width` × `height` pixel figure on a white background.
  Figure(int width, int height);
  ~Figure();
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  int width() const { return w_; }
  int height() const { return h_; }

  void line(double x0, double y0, double x1, double y1, Colour c, double width = 1, bool dashed = false);
  /// A connected line through `points`; `dashed` for reference lines.
  void polyline(const std::vector<std::pair<double, double>>& points, Colour c, double width = 2, bool dashed = false);
  void fill_rect(double x, double y, double w, double h, Colour c);
  /// The rectangle's outline, `width` wide, drawn inside it.
  void frame_rect(double x, double y, double w, double h, Colour c, double width = 1);
  /// The rectangle filled with a linear gradient through evenly spaced `stops`: left to right, or bottom to top
  /// when `upward` (a colour bar).
  void gradient_rect(double x, double y, double w, double h, const std::vector<Colour>& stops, bool upward);
  /// A filled marker centred at (x, y): a circle of diameter `size`.
  void marker(double x, double y, Colour c, double size = 6);

  /// The (width, height) `text` (UTF-8; pango markup when `markup`, e.g. "10<sup>5</sup>") takes in `font`.
  std::pair<double, double> text_size(const std::string& text, Font font = {}, bool markup = false) const;
  /// `font` made smaller, if need be, so that `text` is at most `max_width` wide (titles that must fit).
  Font fit(const std::string& text, Font font, double max_width) const;
  /// Draws `text` anchored at (x, y) by `align` / `valign`, rotated by `angle` degrees (counter-clockwise, e.g.
  /// 90 for a y-axis title) around the anchor. Returns its (width, height).
  std::pair<double, double> text(double x, double y, const std::string& text, Font font = {}, Colour c = kInk,
                                 Align align = Align::left, VAlign valign = VAlign::top, double angle = 0,
                                 bool markup = false);

  /// `image` drawn with its pixels scaled by `scale` (nearest neighbour: pixels stay square), top-left at (x, y).
  void image(const RgbImage& image, double x, double y, double scale = 1);

  /// Writes the figure: `.png` (8-bit RGB), `.svg` or `.pdf` by the extension (anything else is an error naming
  /// the path). Creates the parent folder. May be called several times (one drawing, several formats).
  void save(const std::string& path) const;

  /// For the charts' own drawing: the cairo context (recording; coordinates as above).
  cairo_t* cr() const { return cr_; }

 private:
  int w_, h_;
  cairo_surface_t* recording_ = nullptr;
  cairo_t* cr_ = nullptr;
};

/// Saves `figure` at `path` and, when that is a PNG, as an SVG beside it (same name, .svg): the raster for
/// pages, the vector file for papers. Returns the paths written.
std::vector<std::string> save_figure(const Figure& figure, const std::string& path);

/// `path` with its extension replaced by `ext` (".svg").
std::string with_extension(const std::string& path, const std::string& ext);

}  // namespace vt::figures
