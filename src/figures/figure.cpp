// Figure: a cairo recording surface replayed onto an image (PNG), SVG or PDF surface (see the header).
#include "figures/figure.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <pango/pangocairo.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "figures/raster.h"

namespace vt::figures {
namespace {

void set_colour(cairo_t* cr, Colour c) { cairo_set_source_rgba(cr, c.r, c.g, c.b, c.a); }

// A layout whose metrics do not depend on the output surface (no hinting), so PNG and SVG match.
struct Layout {
  PangoLayout* layout;
  explicit Layout(cairo_t* cr, const std::string& text, Font font, bool markup) {
    layout = pango_cairo_create_layout(cr);
    cairo_font_options_t* opts = cairo_font_options_create();
    cairo_font_options_set_hint_metrics(opts, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(opts, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_antialias(opts, CAIRO_ANTIALIAS_GRAY);
    pango_cairo_context_set_font_options(pango_layout_get_context(layout), opts);
    cairo_font_options_destroy(opts);
    pango_layout_context_changed(layout);
    PangoFontDescription* desc = pango_font_description_from_string("DejaVu Sans");
    pango_font_description_set_absolute_size(desc, font.size * PANGO_SCALE);
    if (font.bold) pango_font_description_set_weight(desc, PANGO_WEIGHT_BOLD);
    pango_layout_set_font_description(layout, desc);
    pango_font_description_free(desc);
    if (markup) pango_layout_set_markup(layout, text.c_str(), -1);
    else pango_layout_set_text(layout, text.c_str(), -1);
    // Without a usable font pango draws every glyph as an empty box and says nothing; a figure of boxes is no figure.
    if (const int unknown = pango_layout_get_unknown_glyphs_count(layout); unknown > 0) {
      g_object_unref(layout);
      VT_FAIL("[figure] no installed font can draw ", unknown, " character(s) of \"", text,
              "\": fontconfig finds no DejaVu Sans (install fonts-dejavu-core, or point FONTCONFIG_FILE at a "
              "fonts.conf that lists a folder holding DejaVuSans.ttf)");
    }
  }
  ~Layout() { g_object_unref(layout); }
  std::pair<double, double> size() const {
    int w = 0, h = 0;
    pango_layout_get_size(layout, &w, &h);
    return {static_cast<double>(w) / PANGO_SCALE, static_cast<double>(h) / PANGO_SCALE};
  }
};

}  // namespace

Colour rgb(uint8_t r, uint8_t g, uint8_t b, double alpha) { return {r / 255.0, g / 255.0, b / 255.0, alpha}; }

Colour palette(size_t i) {
  static const std::array<Colour, 8> p = {rgb(31, 119, 180),  rgb(255, 127, 14),  rgb(44, 160, 44),
                                          rgb(214, 39, 40),   rgb(148, 103, 189), rgb(140, 86, 75),
                                          rgb(227, 119, 194), rgb(127, 127, 127)};
  return p[i % p.size()];
}

Figure::Figure(int width, int height) : w_(width), h_(height) {
  VT_CHECK(width > 0 && height > 0 && width <= 32767 && height <= 32767, "[figure] size ", width, "x", height,
           " is not drawable");
  cairo_rectangle_t extents{0, 0, static_cast<double>(width), static_cast<double>(height)};
  recording_ = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, &extents);
  cr_ = cairo_create(recording_);
  cairo_set_source_rgb(cr_, 1, 1, 1);
  cairo_paint(cr_);
  cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr_, CAIRO_LINE_CAP_BUTT);
}

Figure::~Figure() {
  cairo_destroy(cr_);
  cairo_surface_destroy(recording_);
}

void Figure::line(double x0, double y0, double x1, double y1, Colour c, double width, bool dashed) {
  polyline({{x0, y0}, {x1, y1}}, c, width, dashed);
}

void Figure::polyline(const std::vector<std::pair<double, double>>& points, Colour c, double width, bool dashed) {
  if (points.empty()) return;
  cairo_save(cr_);
  set_colour(cr_, c);
  cairo_set_line_width(cr_, width);
  if (dashed) {
    const double dash[] = {6, 4};
    cairo_set_dash(cr_, dash, 2, 0);
  }
  cairo_move_to(cr_, points[0].first, points[0].second);
  for (size_t i = 1; i < points.size(); ++i) cairo_line_to(cr_, points[i].first, points[i].second);
  cairo_stroke(cr_);
  cairo_restore(cr_);
}

void Figure::fill_rect(double x, double y, double w, double h, Colour c) {
  set_colour(cr_, c);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
}

void Figure::frame_rect(double x, double y, double w, double h, Colour c, double width) {
  set_colour(cr_, c);
  cairo_set_line_width(cr_, width);
  cairo_rectangle(cr_, x + width / 2, y + width / 2, w - width, h - width);
  cairo_stroke(cr_);
}

void Figure::gradient_rect(double x, double y, double w, double h, const std::vector<Colour>& stops, bool upward) {
  cairo_pattern_t* g =
      upward ? cairo_pattern_create_linear(x, y + h, x, y) : cairo_pattern_create_linear(x, y, x + w, y);
  for (size_t i = 0; i < stops.size(); ++i) {
    const double at = stops.size() > 1 ? static_cast<double>(i) / static_cast<double>(stops.size() - 1) : 0;
    cairo_pattern_add_color_stop_rgba(g, at, stops[i].r, stops[i].g, stops[i].b, stops[i].a);
  }
  cairo_set_source(cr_, g);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
  cairo_pattern_destroy(g);
}

void Figure::marker(double x, double y, Colour c, double size) {
  set_colour(cr_, c);
  cairo_arc(cr_, x, y, size / 2, 0, 2 * M_PI);
  cairo_fill(cr_);
}

std::pair<double, double> Figure::text_size(const std::string& text, Font font, bool markup) const {
  return Layout(cr_, text, font, markup).size();
}

Font Figure::fit(const std::string& text, Font font, double max_width) const {
  const double w = text_size(text, font).first;
  if (w > max_width && w > 0) font.size *= max_width / w;
  return font;
}

std::pair<double, double> Figure::text(double x, double y, const std::string& text, Font font, Colour c, Align align,
                                       VAlign valign, double angle, bool markup) {
  Layout l(cr_, text, font, markup);
  const auto [w, h] = l.size();
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, -angle * M_PI / 180);
  const double dx = align == Align::left ? 0 : align == Align::centre ? -w / 2 : -w;
  const double dy = valign == VAlign::top ? 0 : valign == VAlign::middle ? -h / 2 : -h;
  cairo_move_to(cr_, dx, dy);
  set_colour(cr_, c);
  pango_cairo_show_layout(cr_, l.layout);
  cairo_restore(cr_);
  return {w, h};
}

void Figure::image(const RgbImage& img, double x, double y, double scale) {
  const int w = img.width(), h = img.height();
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
  cairo_surface_flush(s);
  unsigned char* data = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  for (int yy = 0; yy < h; ++yy)
    for (int xx = 0; xx < w; ++xx) {
      const Rgb8 p = img.get(xx, yy);
      reinterpret_cast<uint32_t*>(data + static_cast<size_t>(yy) * stride)[xx] =
          (static_cast<uint32_t>(p.r) << 16) | (static_cast<uint32_t>(p.g) << 8) | p.b;
    }
  cairo_surface_mark_dirty(s);
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_scale(cr_, scale, scale);
  cairo_set_source_surface(cr_, s, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr_), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr_, 0, 0, w, h);
  cairo_fill(cr_);
  cairo_restore(cr_);
  cairo_surface_destroy(s);
}

void Figure::save(const std::string& path) const {
  const std::string ext = std::filesystem::path(path).extension().string();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  cairo_surface_t* out = nullptr;
  if (ext == ".png") out = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w_, h_);
  else if (ext == ".svg") out = cairo_svg_surface_create(path.c_str(), w_, h_);
  else if (ext == ".pdf") out = cairo_pdf_surface_create(path.c_str(), w_, h_);
  else VT_FAIL("[figure] '", path, "': unknown figure format '", ext, "' (use .png, .svg or .pdf)");
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> guard(out, cairo_surface_destroy);
  VT_CHECK(cairo_surface_status(out) == CAIRO_STATUS_SUCCESS, "[figure] cannot write '", path,
           "': ", cairo_status_to_string(cairo_surface_status(out)));
  cairo_t* cr = cairo_create(out);
  cairo_set_source_surface(cr, recording_, 0, 0);
  cairo_paint(cr);
  const cairo_status_t drawn = cairo_status(cr);
  cairo_destroy(cr);
  VT_CHECK(drawn == CAIRO_STATUS_SUCCESS, "[figure] drawing '", path, "' failed: ", cairo_status_to_string(drawn));
  if (ext == ".png") {
    const cairo_status_t st = cairo_surface_write_to_png(out, path.c_str());
    VT_CHECK(st == CAIRO_STATUS_SUCCESS, "[figure] cannot write '", path, "': ", cairo_status_to_string(st));
  } else {
    cairo_surface_finish(out);
    VT_CHECK(cairo_surface_status(out) == CAIRO_STATUS_SUCCESS, "[figure] cannot write '", path,
             "': ", cairo_status_to_string(cairo_surface_status(out)));
  }
}

std::string with_extension(const std::string& path, const std::string& ext) {
  return std::filesystem::path(path).replace_extension(ext).string();
}

std::vector<std::string> save_figure(const Figure& figure, const std::string& path) {
  figure.save(path);
  if (std::filesystem::path(path).extension() != ".png") return {path};
  const std::string svg = with_extension(path, ".svg");
  figure.save(svg);
  return {path, svg};
}

}  // namespace vt::figures
