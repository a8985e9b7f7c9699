// Line and dot charts with cairo/pango (see the header).
#include "figures/chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include <cairo.h>

#include "core/error.h"
#include "figures/ticks.h"

namespace vt::figures {
namespace {

constexpr Font kTitleFont{16, true}, kAxisFont{13, false}, kTickFont{12, false}, kLegendFont{12.5, false};

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double to_unit(double v) const {  // 0..1 across the axis
    const double t = log ? std::log10(v) : v;
    return (t - lo) / (hi - lo);
  }
  bool shows(double v) const { return std::isfinite(v) && (!log || v > 0); }
  // Ticks as (position in axis units, label).
  std::vector<std::pair<double, std::string>> ticks() const {
    std::vector<std::pair<double, std::string>> out;
    if (log) {
      for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; ++e) out.emplace_back(e, decade_label(static_cast<int>(e)));
      if (out.size() >= 2) return out;
      out.clear();  // less than two decades: 1-2-5 ticks of the values themselves
      std::vector<double> t = linear_ticks(std::pow(10.0, lo), std::pow(10.0, hi), 5);
      std::erase_if(t, [](double v) { return v <= 0; });
      const auto labels = tick_labels(t);
      for (size_t i = 0; i < t.size(); ++i) out.emplace_back(std::log10(t[i]), labels[i]);
      return out;
    }
    const auto t = linear_ticks(lo, hi, 6);
    const auto labels = tick_labels(t);
    for (size_t i = 0; i < t.size(); ++i) out.emplace_back(t[i], labels[i]);
    return out;
  }
};

// The data range of one axis, padded by 4% (a flat series gets a visible band).
Axis fit_axis(const std::vector<double>& values, bool log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    const double t = log ? std::log10(v) : v;
    lo = std::min(lo, t), hi = std::max(hi, t);
  }
  if (hi == lo) {
    const double pad = log ? 0.5 : (lo == 0 ? 1 : std::fabs(lo) * 0.1);
    lo -= pad, hi += pad;
  } else {
    const double pad = 0.04 * (hi - lo);
    lo -= pad, hi += pad;
  }
  return {lo, hi, log};
}

}  // namespace

std::unique_ptr<Figure> draw_chart(const std::vector<Series>& series, const ChartSpec& spec, const std::string& what) {
  Axis probe_x{0, 1, spec.log_x}, probe_y{0, 1, spec.log_y};
  std::vector<double> xs, ys;
  for (const Series& s : series)
    for (auto [x, y] : s.points)
      if (probe_x.shows(x) && probe_y.shows(y)) xs.push_back(x), ys.push_back(y);
  VT_CHECK(!xs.empty(), "[plot] ", what, ": no point to draw", spec.log_x || spec.log_y ? " on log axes" : "");
  const Axis ax = fit_axis(xs, spec.log_x), ay = fit_axis(ys, spec.log_y);

  auto fig = std::make_unique<Figure>(spec.width, spec.height);
  Figure& f = *fig;
  // Margins: the y tick labels' width decides the left one.
  double tick_w = 0;
  for (const auto& [v, label] : ay.ticks()) tick_w = std::max(tick_w, f.text_size(label, kTickFont).first);
  const double L = 20 + f.text_size("Ag", kAxisFont).second + 8 + tick_w + 8, R = 24;
  const double T = spec.title.empty() ? 16 : 46, B = 34 + f.text_size("Ag", kAxisFont).second + 8;
  const double pw = spec.width - L - R, ph = spec.height - T - B;
  auto px = [&](double x) { return L + ax.to_unit(x) * pw; };
  auto py = [&](double y) { return T + (1 - ay.to_unit(y)) * ph; };

  // Grid and ticks.
  for (const auto& [v, label] : ax.ticks()) {
    const double x = L + (v - ax.lo) / (ax.hi - ax.lo) * pw;
    f.line(x, T, x, T + ph, kGridColour);
    f.line(x, T + ph, x, T + ph + 5, kAxisColour);
    f.text(x, T + ph + 8, label, kTickFont, kInk, Align::centre, VAlign::top);
  }
  for (const auto& [v, label] : ay.ticks()) {
    const double y = T + (1 - (v - ay.lo) / (ay.hi - ay.lo)) * ph;
    f.line(L, y, L + pw, y, kGridColour);
    f.line(L - 5, y, L, y, kAxisColour);
    f.text(L - 8, y, label, kTickFont, kInk, Align::right, VAlign::middle);
  }
  f.frame_rect(L, T, pw, ph, kAxisColour, 1);
  if (!spec.title.empty())
    f.text(spec.width / 2.0, 14, spec.title, f.fit(spec.title, kTitleFont, spec.width - 24), kInk, Align::centre,
           VAlign::top);
  if (!spec.x_title.empty())
    f.text(L + pw / 2, spec.height - 10, spec.x_title, kAxisFont, kInk, Align::centre, VAlign::bottom);
  if (!spec.y_title.empty()) f.text(14, T + ph / 2, spec.y_title, kAxisFont, kInk, Align::centre, VAlign::top, 90);

  // Series, clipped to the plot area.
  cairo_save(f.cr());
  cairo_rectangle(f.cr(), L, T, pw, ph);
  cairo_clip(f.cr());
  for (size_t i = 0; i < series.size(); ++i) {
    const Colour c = palette(i);
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      f.polyline(run, c, 2, series[i].dashed);
      run.clear();
    };
    for (auto [x, y] : series[i].points) {
      if (!(ax.shows(x) && ay.shows(y))) {
        flush();
        continue;
      }
      run.emplace_back(px(x), py(y));
      if (series[i].markers) f.marker(px(x), py(y), c, 7);
    }
    flush();
  }
  cairo_restore(f.cr());

  // Legend in the plot corner holding the fewest points.
  std::vector<size_t> named;
  double lw = 0;
  for (size_t i = 0; i < series.size(); ++i)
    if (!series[i].name.empty() && !series[i].points.empty()) {
      named.push_back(i);
      lw = std::max(lw, f.text_size(series[i].name, kLegendFont).first);
    }
  if (!named.empty()) {
    const double row = 20, box_w = lw + 48, box_h = row * static_cast<double>(named.size()) + 10;
    int best = 0;
    size_t fewest = std::numeric_limits<size_t>::max();
    for (int corner = 0; corner < 4; ++corner) {  // top-right, top-left, bottom-right, bottom-left
      const double x0 = corner % 2 == 0 ? L + pw - box_w - 8 : L + 8, y0 = corner < 2 ? T + 8 : T + ph - box_h - 8;
      size_t inside = 0;
      for (const Series& s : series)
        for (auto [x, y] : s.points)
          if (ax.shows(x) && ay.shows(y) && px(x) >= x0 - 4 && px(x) <= x0 + box_w + 4 && py(y) >= y0 - 4 &&
              py(y) <= y0 + box_h + 4)
            ++inside;
      if (inside < fewest) fewest = inside, best = corner;
    }
    const double x0 = best % 2 == 0 ? L + pw - box_w - 8 : L + 8, y0 = best < 2 ? T + 8 : T + ph - box_h - 8;
    f.fill_rect(x0, y0, box_w, box_h, Colour{1, 1, 1, 0.9});
    f.frame_rect(x0, y0, box_w, box_h, kGridColour);
    for (size_t r = 0; r < named.size(); ++r) {
      const Series& s = series[named[r]];
      const double y = y0 + 5 + row * (static_cast<double>(r) + 0.5);
      f.line(x0 + 8, y, x0 + 34, y, palette(named[r]), 2.5, s.dashed);
      if (s.markers) f.marker(x0 + 21, y, palette(named[r]), 7);
      f.text(x0 + 40, y, s.name, kLegendFont, kInk, Align::left, VAlign::middle);
    }
  }
  return fig;
}

std::unique_ptr<Figure> draw_dots(const std::vector<DotRow>& rows, const std::string& title, const std::string& x_title,
                                  double reference, const std::string& what) {
  VT_CHECK(!rows.empty(), "[plot] ", what, ": no rows to draw");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const DotRow& r : rows)
    if (std::isfinite(r.value)) {
      const double e = std::isfinite(r.error) ? std::fabs(r.error) : 0;
      lo = std::min(lo, r.value - e), hi = std::max(hi, r.value + e);
    }
  VT_CHECK(std::isfinite(lo), "[plot] ", what, ": no finite value to draw");
  if (std::isfinite(reference)) lo = std::min(lo, reference), hi = std::max(hi, reference);
  const double pad = hi > lo ? 0.08 * (hi - lo) : 0.5;
  lo -= pad, hi += pad;

  constexpr int W = 820, kRow = 26;
  Figure probe(1, 1);
  double label_w = 0;
  for (const DotRow& r : rows) label_w = std::max(label_w, probe.text_size(r.label, kAxisFont).first);
  const double L = 16 + label_w + 12, R = 24, T = title.empty() ? 14 : 44;
  const double B = 34 + (x_title.empty() ? 0 : probe.text_size("Ag", kAxisFont).second + 8);
  const int H = static_cast<int>(T + B + kRow * static_cast<double>(rows.size()));
  auto fig = std::make_unique<Figure>(W, H);
  Figure& f = *fig;
  const double pw = W - L - R, ph = H - T - B;
  auto px = [&](double v) { return L + (v - lo) / (hi - lo) * pw; };
  const auto ticks = linear_ticks(lo, hi, 7);
  const auto labels = tick_labels(ticks);
  for (size_t i = 0; i < ticks.size(); ++i) {
    const double t = ticks[i];
    f.line(px(t), T, px(t), T + ph, kGridColour);
    f.line(px(t), T + ph, px(t), T + ph + 5, kAxisColour);
    f.text(px(t), T + ph + 8, labels[i], kTickFont, kInk, Align::centre, VAlign::top);
  }
  if (std::isfinite(reference)) f.line(px(reference), T, px(reference), T + ph, palette(3), 1.5, true);
  const Colour dot = palette(0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const DotRow& r = rows[i];
    const double y = T + kRow * (static_cast<double>(i) + 0.5);
    f.text(L - 12, y, r.label, kAxisFont, kInk, Align::right, VAlign::middle);
    if (!std::isfinite(r.value)) continue;
    const double e = std::isfinite(r.error) ? std::fabs(r.error) : 0;
    if (e > 0) {
      f.line(px(r.value - e), y, px(r.value + e), y, dot, 2);
      f.line(px(r.value - e), y - 5, px(r.value - e), y + 5, dot, 2);
      f.line(px(r.value + e), y - 5, px(r.value + e), y + 5, dot, 2);
    }
    f.marker(px(r.value), y, dot, 9);
    const std::string v = value_label(r.value, 2);
    const double vw = f.text_size(v, kTickFont).first;
    if (px(r.value + e) + 8 + vw < L + pw)
      f.text(px(r.value + e) + 8, y, v, kTickFont, kInk, Align::left, VAlign::middle);
    else f.text(px(r.value - e) - 8, y, v, kTickFont, kInk, Align::right, VAlign::middle);
  }
  f.frame_rect(L, T, pw, ph, kAxisColour);
  if (!title.empty()) f.text(W / 2.0, 12, title, f.fit(title, kTitleFont, W - 24), kInk, Align::centre, VAlign::top);
  if (!x_title.empty()) f.text(L + pw / 2, H - 8, x_title, kAxisFont, kInk, Align::centre, VAlign::bottom);
  return fig;
}

}  // namespace vt::figures
