// `vitrain plot RUN_DIR`: training curves from a run's metrics.jsonl drawn straight into PNG files (libpng and a
// small line rasterizer; no Python needed). Each chart has a frame, a light grid, its y range and x range
// written in a tiny digit font, and one colour per series: blue = the model / training, orange = test or EMA.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vt::engine {

/// One metrics.jsonl line: its numeric fields (null, i.e. NaN/Inf, and string fields are skipped).
using MetricRow = std::map<std::string, double>;

/// One metrics.jsonl line parsed, or nullopt when it is not a flat JSON object (e.g. a line cut by a crash).
std::optional<MetricRow> parse_metrics_line(const std::string& line);

/// Reads a JSON-lines metrics file written by io::MetricsLog. Throws vt::Error naming the file and line on a
/// line that is not a flat JSON object.
std::vector<MetricRow> read_metrics(const std::string& path);

/// Writes loss.png (train loss per step; test and EMA loss per evaluation), lr.png (lr per step) and top1.png
/// (test top-1 and EMA top-1 per epoch), for segmentation runs miou.png (mIoU, mAcc, aAcc per evaluation), into
/// `out_dir` from `rows`; charts without data are skipped. Returns the paths written.
std::vector<std::string> plot_metrics(const std::vector<MetricRow>& rows, const std::string& out_dir);

/// One named line of an XY chart: (x, y) points in drawing order.
struct XYSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

/// Writes a PNG chart of `series` with log10 x and y axes to `path`: the data range padded by 5%, grid lines at
/// whole decades labelled 1E<k>, square markers joined by lines (a point with x or y <= 0 or not finite is
/// skipped, leaving a gap), one colour per series, a legend (bottom left) of their names and the title in upper
/// case. Throws when nothing can be drawn.
void plot_xy_log(const std::vector<XYSeries>& series, const std::string& path, const std::string& title = "");

/// One row of a dot chart: a label, a value and the half-width of its error bar (0: none).
struct DotRow {
  std::string label;
  double value = 0, error = 0;
};

/// Writes a dot chart of `rows` to `path` (for results with error bars, e.g. mean ± std over seeds): one row per
/// entry, its label (upper case) at the left, a square at the value with a whisker of ±error, the value printed
/// beside it, vertical grid lines with labels along the bottom, and a dashed red line at `reference` unless it is
/// NaN. The x range is that of value ± error (and the reference) padded by 5%. Throws when `rows` is empty or
/// holds no finite value.
void plot_dots(const std::vector<DotRow>& rows, const std::string& path, const std::string& title = "",
               double reference = std::numeric_limits<double>::quiet_NaN());

/// Writes `rgb` (8-bit RGB, rows top to bottom, width·height·3 bytes) to `path` as a PNG; throws naming the path.
void write_png_rgb(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb);

/// Draws `text` in the charts' 3x5 font (digits, upper case, a few signs; others are blank) scaled by `scale`,
/// top-left at (x, y), calling `dot(px, py)` for each pixel set; returns the width (4·scale per character).
int draw_text(int x, int y, const std::string& text, int scale, const std::function<void(int, int)>& dot);

}  // namespace vt::engine
