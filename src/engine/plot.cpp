// Metrics → PNG: a flat-JSON line reader, a canvas with Bresenham lines and a 3x5 digit font, libpng output.
#include "engine/plot.h"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <optional>
#include <iterator>
#include <memory>

#include "core/error.h"
#include "engine/heatmap.h"

namespace vt::engine {

int draw_text(int x, int y, const std::string& s, int scale, const std::function<void(int, int)>& dot) {
  static const std::map<char, const char*> glyphs = {
      {'0', "111101101101111"}, {'1', "010110010010111"}, {'2', "111001111100111"}, {'3', "111001111001111"},
      {'4', "101101111001001"}, {'5', "111100111001111"}, {'6', "111100111101111"}, {'7', "111001010010010"},
      {'8', "111101111101111"}, {'9', "111101111001111"}, {'.', "000000000000010"}, {'-', "000000111000000"},
      {'+', "000010111010000"}, {'e', "000111101110111"}, {'%', "101001010100101"},
      // Upper-case letters and a few signs for chart titles and legends (plot_xy_log).
      {'A', "010101111101101"}, {'B', "110101110101110"}, {'C', "011100100100011"}, {'D', "110101101101110"},
      {'E', "111100110100111"}, {'F', "111100110100100"}, {'G', "011100101101011"}, {'H', "101101111101101"},
      {'I', "111010010010111"}, {'J', "001001001101010"}, {'K', "101101110101101"}, {'L', "100100100100111"},
      {'M', "101111111101101"}, {'N', "110101101101101"}, {'O', "010101101101010"}, {'P', "110101110100100"},
      {'Q', "010101101110011"}, {'R', "110101110101101"}, {'S', "011100010001110"}, {'T', "111010010010010"},
      {'U', "101101101101111"}, {'V', "101101101101010"}, {'W', "101101111111101"}, {'X', "101101010101101"},
      {'Y', "101101010010010"}, {'Z', "111001010100111"}, {'/', "001001010100100"}, {'(', "010100100100010"},
      {')', "010001001001010"}, {':', "000010000010000"}, {'_', "000000000000111"}, {'=', "000111000111000"},
      {'x', "000101010101000"}};
  int cx = x;
  for (char ch : s) {
    auto it = glyphs.find(ch);
    if (it != glyphs.end())
      for (int r = 0; r < 5; ++r)
        for (int col = 0; col < 3; ++col)
          if (it->second[r * 3 + col] == '1')
            for (int a = 0; a < scale; ++a)
              for (int b = 0; b < scale; ++b) dot(cx + col * scale + a, y + r * scale + b);
    cx += 4 * scale;
  }
  return cx - x;
}

void write_png_rgb(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb) {
  VT_CHECK(width > 0 && height > 0 && rgb.size() == static_cast<size_t>(width) * static_cast<size_t>(height) * 3,
           "[plot] '", path, "': ", rgb.size(), " bytes do not make a ", width, "x", height, " RGB image");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
  VT_CHECK(f, "[plot] cannot write '", path, "'");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  VT_CHECK(png && info, "[plot] libpng setup failed");
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    VT_FAIL("[plot] libpng failed writing '", path, "'");
  }
  png_init_io(png, f.get());
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) png_write_row(png, &rgb[static_cast<size_t>(y) * static_cast<size_t>(width) * 3]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

namespace {

// ---- reading ----

struct LineParser {
  const std::string& s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  bool string(std::string& out) {
    if (!eat('"')) return false;
    out.clear();
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;  // keys we plot have no escapes; keep the escaped byte
      out += s[i];
    }
    return eat('"');
  }
};

// ---- drawing ----

using Rgb = Rgb8;
constexpr Rgb kBlue{31, 119, 180}, kOrange{255, 127, 14}, kGreen{44, 160, 44}, kGrid{225, 225, 225},
    kFrame{60, 60, 60}, kText{30, 30, 30}, kRed{214, 39, 40}, kPurple{148, 103, 189}, kBrown{140, 86, 75};

// A chart: the RGB image of engine/heatmap plus lines and text in the charts' colour.
class Canvas : public RgbImage {
 public:
  Canvas(int w, int h) : RgbImage(w, h) {}
  // Bresenham, drawn `thick` pixels wide.
  void line(int x0, int y0, int x1, int y1, Rgb c, int thick = 1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      for (int a = 0; a < thick; ++a)
        for (int b = 0; b < thick; ++b) set(x0 + a, y0 + b, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // Digits, '.', '-', '+', 'e' and '%' in a 3x5 font scaled by `scale`; returns the width drawn.
  int text(int x, int y, const std::string& s, int scale = 2) { return RgbImage::text(x, y, s, scale, kText); }
};

struct Series {
  std::vector<std::pair<double, double>> points;
  Rgb color;
};

std::string short_number(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-2 || a >= 1e5)) std::snprintf(buf, sizeof buf, "%.2e", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// One chart: frame, grid, series scaled to the union of their ranges, and the four range labels.
void draw_chart(const std::vector<Series>& series, const std::string& path) {
  constexpr int W = 800, H = 420, L = 90, R = 20, T = 20, B = 40;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  Canvas c(W, H);
  auto px = [&](double x) { return L + static_cast<int>(std::lround((x - x0) / (x1 - x0) * (W - L - R - 1))); };
  auto py = [&](double y) { return H - B - static_cast<int>(std::lround((y - y0) / (y1 - y0) * (H - T - B - 1))); };
  for (int k = 1; k < 4; ++k) {
    const int gx = L + k * (W - L - R) / 4, gy = T + k * (H - T - B) / 4;
    c.line(gx, T, gx, H - B, kGrid);
    c.line(L, gy, W - R, gy, kGrid);
  }
  c.line(L, T, W - R, T, kFrame), c.line(L, H - B, W - R, H - B, kFrame);
  c.line(L, T, L, H - B, kFrame), c.line(W - R, T, W - R, H - B, kFrame);
  for (const auto& s : series)
    for (size_t i = 0; i < s.points.size(); ++i) {
      const int ax = px(s.points[i].first), ay = py(s.points[i].second);
      if (i == 0) c.line(ax, ay, ax, ay, s.color, 2);
      else c.line(px(s.points[i - 1].first), py(s.points[i - 1].second), ax, ay, s.color, 2);
    }
  c.text(6, T, short_number(y1));
  c.text(6, H - B - 10, short_number(y0));
  c.text(L, H - B + 10, short_number(x0));
  const std::string right = short_number(x1);
  c.text(W - R - 8 * static_cast<int>(right.size()), H - B + 10, right);
  c.save(path);
}

Series collect(const std::vector<MetricRow>& rows, const std::string& x, const std::string& y, Rgb color,
               const std::string& only_with = "") {
  Series s{{}, color};
  for (const auto& r : rows) {
    auto ix = r.find(x), iy = r.find(y);
    if (ix == r.end() || iy == r.end() || (!only_with.empty() && !r.count(only_with))) continue;
    if (std::isfinite(ix->second) && std::isfinite(iy->second)) s.points.emplace_back(ix->second, iy->second);
  }
  return s;
}

}  // namespace

std::optional<MetricRow> parse_metrics_line(const std::string& line) {
  LineParser p{line};
  MetricRow row;
  bool ok = p.eat('{');
  while (ok && !p.eat('}')) {
    std::string key;
    ok = p.string(key) && p.eat(':');
    if (!ok) break;
    p.ws();
    if (p.i < line.size() && line[p.i] == '"') {
      std::string ignored;
      ok = p.string(ignored);
    } else if (line.compare(p.i, 4, "null") == 0) {
      p.i += 4;
    } else {
      char* end = nullptr;
      const double v = std::strtod(line.c_str() + p.i, &end);
      ok = end != line.c_str() + p.i;
      p.i = static_cast<size_t>(end - line.c_str());
      row[key] = v;
    }
    if (ok && !p.eat(',')) ok = p.eat('}') && (p.ws(), p.i == line.size());
    if (ok && p.i == line.size() && line.rfind('}') < p.i) break;
  }
  if (!ok) return std::nullopt;
  return row;
}

std::vector<MetricRow> read_metrics(const std::string& path) {
  std::ifstream f(path);
  VT_CHECK(f, "[plot] cannot open '", path, "'");
  std::vector<MetricRow> rows;
  int line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::optional<MetricRow> row = parse_metrics_line(line);
    VT_CHECK(row, "[plot] ", path, ":", line_no, ": not a flat JSON object: ", line.substr(0, 80));
    rows.push_back(std::move(*row));
  }
  return rows;
}

std::vector<std::string> plot_metrics(const std::vector<MetricRow>& rows, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  std::vector<std::string> written;
  auto chart = [&](const std::string& name, std::vector<Series> series) {
    std::erase_if(series, [](const Series& s) { return s.points.empty(); });
    if (series.empty()) return;
    const std::string path = (std::filesystem::path(out_dir) / name).string();
    draw_chart(series, path);
    written.push_back(path);
  };
  chart("loss.png", {collect(rows, "step", "train_loss", kBlue), collect(rows, "step", "test_loss", kOrange),
                     collect(rows, "step", "ema_loss", kGreen)});
  chart("lr.png", {collect(rows, "step", "lr", kBlue, "train_loss")});
  chart("top1.png", {collect(rows, "epoch", "test_top1", kBlue), collect(rows, "epoch", "ema_top1", kOrange)});
  chart("miou.png", {collect(rows, "epoch", "miou", kBlue), collect(rows, "epoch", "macc", kOrange),
                     collect(rows, "epoch", "aacc", kGreen)});  // segmentation runs
  return written;
}

void plot_xy_log(const std::vector<XYSeries>& series, const std::string& path, const std::string& title) {
  constexpr int W = 900, H = 560, L = 70, R = 20, T = 40, B = 50;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series)
    for (auto [x, y] : s.points)
      if (x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y)) {
        x0 = std::min(x0, std::log10(x)), x1 = std::max(x1, std::log10(x));
        y0 = std::min(y0, std::log10(y)), y1 = std::max(y1, std::log10(y));
      }
  VT_CHECK(std::isfinite(x0), "[plot] '", path, "': no positive finite point to draw on log axes");
  // The data range padded by 5% of its span (a single value gets ±0.1 decade); grid lines at whole decades.
  auto pad = [](double& lo, double& hi) {
    const double p = hi > lo ? 0.05 * (hi - lo) : 0.1;
    lo -= p, hi += p;
  };
  pad(x0, x1), pad(y0, y1);
  Canvas c(W, H);
  auto px = [&](double x) {
    return L + static_cast<int>(std::lround((std::log10(x) - x0) / (x1 - x0) * (W - L - R - 1)));
  };
  auto py = [&](double y) {
    return H - B - static_cast<int>(std::lround((std::log10(y) - y0) / (y1 - y0) * (H - T - B - 1)));
  };
  auto decade = [](double e) { return "1E" + std::to_string(static_cast<int>(e)); };
  for (double e = std::ceil(x0); e <= x1; ++e) {
    const int gx = px(std::pow(10.0, e));
    c.line(gx, T, gx, H - B, kGrid);
    c.text(gx - 8, H - B + 10, decade(e));
  }
  for (double e = std::ceil(y0); e <= y1; ++e) {
    const int gy = py(std::pow(10.0, e));
    c.line(L, gy, W - R, gy, kGrid);
    c.text(8, gy - 5, decade(e));
  }
  if (std::ceil(x0) > x1) {  // no decade inside: label the ends
    c.text(L, H - B + 10, short_number(std::pow(10.0, x0)));
    c.text(W - R - 70, H - B + 10, short_number(std::pow(10.0, x1)));
  }
  if (std::ceil(y0) > y1) {
    c.text(4, H - B - 10, short_number(std::pow(10.0, y0)));
    c.text(4, T, short_number(std::pow(10.0, y1)));
  }
  c.line(L, T, W - R, T, kFrame), c.line(L, H - B, W - R, H - B, kFrame);
  c.line(L, T, L, H - B, kFrame), c.line(W - R, T, W - R, H - B, kFrame);
  static const Rgb palette[] = {kBlue, kOrange, kGreen, kRed, kPurple, kBrown};
  auto upper = [](std::string t) {
    for (char& ch : t) ch = ch == 'x' ? ch : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return t;
  };
  if (!title.empty()) c.text(L, 12, upper(title));
  for (size_t i = 0; i < series.size(); ++i) {
    const Rgb color = palette[i % std::size(palette)];
    bool have_prev = false;
    int prev_x = 0, prev_y = 0;
    for (auto [x, y] : series[i].points) {
      if (!(x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y))) {  // a gap: e.g. a run that failed
        have_prev = false;
        continue;
      }
      const int ax = px(x), ay = py(y);
      for (int d = -3; d <= 3; ++d) c.line(ax - 3, ay + d, ax + 3, ay + d, color);  // a square marker
      if (have_prev) c.line(prev_x, prev_y, ax, ay, color, 2);
      have_prev = true, prev_x = ax, prev_y = ay;
    }
    // Legend at the bottom left inside the frame: empty for falling curves such as throughput vs N.
    const int ly = H - B - 14 - 16 * static_cast<int>(series.size() - i);
    c.line(L + 10, ly + 4, L + 34, ly + 4, color, 3);
    c.text(L + 42, ly, upper(series[i].name));
  }
  c.save(path);
}

void plot_dots(const std::vector<DotRow>& rows, const std::string& path, const std::string& title, double reference) {
  VT_CHECK(!rows.empty(), "[plot] '", path, "': no rows to draw");
  constexpr int W = 900, L = 250, R = 30, T = 40, B = 40, kRow = 26;
  const int H = T + B + kRow * static_cast<int>(rows.size());
  double lo = INFINITY, hi = -INFINITY;
  for (const DotRow& r : rows)
    if (std::isfinite(r.value)) {
      const double e = std::isfinite(r.error) ? std::fabs(r.error) : 0;
      lo = std::min(lo, r.value - e), hi = std::max(hi, r.value + e);
    }
  VT_CHECK(std::isfinite(lo), "[plot] '", path, "': no finite value to draw");
  if (std::isfinite(reference)) lo = std::min(lo, reference), hi = std::max(hi, reference);
  const double pad = hi > lo ? 0.05 * (hi - lo) : 0.5;
  lo -= pad, hi += pad;
  Canvas c(W, H);
  auto px = [&](double v) { return L + static_cast<int>(std::lround((v - lo) / (hi - lo) * (W - L - R - 1))); };
  // Grid at a 1-2-5 step giving 4 to 10 lines.
  const double raw = (hi - lo) / 6, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double g = std::ceil(lo / step) * step; g <= hi; g += step) {
    const int gx = px(g);
    c.line(gx, T, gx, H - B, kGrid);
    const std::string label = short_number(std::fabs(g) < step * 1e-9 ? 0.0 : g);
    c.text(gx - 4 * static_cast<int>(label.size()), H - B + 10, label);
  }
  if (std::isfinite(reference))
    for (int y = T; y < H - B; y += 8) c.line(px(reference), y, px(reference), std::min(y + 4, H - B), kRed);
  auto upper = [](std::string t) {
    for (char& ch : t) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return t;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const DotRow& r = rows[i];
    const int y = T + kRow * static_cast<int>(i) + kRow / 2;
    const std::string label = upper(r.label);
    c.text(L - 10 - text_width(label, 2), y - 5, label);
    if (i > 0) c.line(L, y - kRow / 2, W - R, y - kRow / 2, kGrid);
    if (!std::isfinite(r.value)) continue;
    const double e = std::isfinite(r.error) ? std::fabs(r.error) : 0;
    const int x = px(r.value), x0 = px(r.value - e), x1 = px(r.value + e);
    if (e > 0) {
      c.line(x0, y, x1, y, kBlue, 2);
      c.line(x0, y - 5, x0, y + 5, kBlue, 2), c.line(x1, y - 5, x1, y + 5, kBlue, 2);
    }
    for (int d = -4; d <= 4; ++d) c.line(x - 4, y + d, x + 4, y + d, kBlue);
    const std::string value = short_number(r.value);
    const int tx = x1 + 8 + text_width(value, 2) < W - R ? x1 + 8 : x0 - 8 - text_width(value, 2);
    c.text(tx, y - 12, value);
  }
  c.line(L, T, W - R, T, kFrame), c.line(L, H - B, W - R, H - B, kFrame);
  c.line(L, T, L, H - B, kFrame), c.line(W - R, T, W - R, H - B, kFrame);
  if (!title.empty()) c.text(L, 12, upper(title));
  c.save(path);
}

}  // namespace vt::engine
