#include "data/lra/pathfinder_generator.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/image_encode.h"
#include "data/lra/release_folder.h"
#include "data/sample_rng.h"

namespace fs = std::filesystem;

namespace vt::data::lra {
namespace {

constexpr int kSize = 32;
constexpr int kClearance = 2;               // other contours' ink stays more than this (Chebyshev) away
constexpr double kMinMarkerDistance = 7.0;  // between the two markers' centres, whatever the label
constexpr int kMarkerValue = 255;

struct Pixel {
  int x, y;
};

class Canvas {
 public:
  Canvas() : ink_(kSize * kSize, 0), blocked_(kSize * kSize, 0) {}
  bool free(Pixel p) const { return inside(p, 0) && !blocked_[p.y * kSize + p.x]; }
  void draw(const std::vector<Pixel>& pixels, uint8_t value) {
    for (Pixel p : pixels) ink_[p.y * kSize + p.x] = value;
  }
  // Once a contour (and its markers) is complete, nothing else may come within kClearance of it.
  void block_around(const std::vector<Pixel>& pixels) {
    for (Pixel p : pixels)
      for (int dy = -kClearance; dy <= kClearance; ++dy)
        for (int dx = -kClearance; dx <= kClearance; ++dx)
          if (inside({p.x + dx, p.y + dy}, 0)) blocked_[(p.y + dy) * kSize + p.x + dx] = 1;
  }
  static bool inside(Pixel p, int margin) {
    return p.x >= margin && p.y >= margin && p.x < kSize - margin && p.y < kSize - margin;
  }
  std::vector<uint8_t> take() { return std::move(ink_); }

 private:
  std::vector<uint8_t> ink_, blocked_;
};

std::vector<Pixel> marker(Pixel c) {
  std::vector<Pixel> out;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) out.push_back({c.x + dx, c.y + dy});
  return out;
}

// A dashed walk of `paddles` paddles whose every inked pixel lies inside the 1-pixel border and is free on the
// canvas: the first paddle inks its start and one step on; each later one turns, steps over a blank pixel and inks
// the next two. A paddle that does not fit is redrawn with another turn a few times; empty when the walk is stuck.
std::vector<Pixel> draw_contour(SampleRng& rng, const Canvas& canvas, int paddles, double max_turn) {
  constexpr int kTurnTries = 8;
  auto at = [](double x, double y) {
    return Pixel{static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y))};
  };
  auto usable = [&](Pixel p) { return Canvas::inside(p, 1) && canvas.free(p); };
  double x = rng.uniform(1.0, kSize - 2.0), y = rng.uniform(1.0, kSize - 2.0);
  double heading = rng.uniform(0.0, 6.283185307179586);
  const Pixel first = at(x, y), second = at(x + std::cos(heading), y + std::sin(heading));
  if (!usable(first) || !usable(second)) return {};
  std::vector<Pixel> ink = {first, second};
  x += std::cos(heading);
  y += std::sin(heading);
  for (int j = 1; j < paddles; ++j) {
    bool placed = false;
    for (int t = 0; t < kTurnTries && !placed; ++t) {
      const double h = heading + rng.uniform(-max_turn, max_turn), dx = std::cos(h), dy = std::sin(h);
      const Pixel p1 = at(x + 2 * dx, y + 2 * dy), p2 = at(x + 3 * dx, y + 3 * dy);
      if (!usable(p1) || !usable(p2)) continue;
      ink.push_back(p1);
      ink.push_back(p2);
      x += 3 * dx;
      y += 3 * dy;
      heading = h;
      placed = true;
    }
    if (!placed) return {};
  }
  return ink;
}

bool all_free(const Canvas& canvas, const std::vector<Pixel>& pixels) {
  for (Pixel p : pixels)
    if (!canvas.free(p)) return false;
  return true;
}

double distance(Pixel a, Pixel b) { return std::hypot(a.x - b.x, a.y - b.y); }

// One attempt at a whole image; false when a main contour or a marker did not fit.
bool try_layout(SampleRng& rng, const PathfinderOptions& o, int32_t label, PathfinderImage& out) {
  Canvas canvas;
  const auto contour_value = static_cast<uint8_t>(rng.randint(96, 224));
  constexpr int kTries = 40;
  std::vector<Pixel> a, b;
  for (int t = 0; t < kTries && a.empty(); ++t) a = draw_contour(rng, canvas, o.contour_paddles, o.max_turn);
  if (a.empty()) return false;
  // Positive: both ends of contour a; negative: one end of a and one of b.
  std::vector<Pixel> markers_a = marker(a.front());
  if (label == 1) {
    if (distance(a.front(), a.back()) < kMinMarkerDistance) return false;
    const std::vector<Pixel> second = marker(a.back());
    markers_a.insert(markers_a.end(), second.begin(), second.end());
  }
  canvas.draw(a, contour_value);
  canvas.block_around(a);
  canvas.block_around(markers_a);
  std::vector<Pixel> markers_b;
  for (int t = 0; t < kTries && b.empty(); ++t) {
    b = draw_contour(rng, canvas, o.contour_paddles, o.max_turn);
    if (b.empty() || label == 1) continue;
    const Pixel end = rng.bernoulli(0.5) ? b.front() : b.back();
    markers_b = marker(end);
    if (distance(a.front(), end) < kMinMarkerDistance || !all_free(canvas, markers_b)) b.clear();
  }
  if (b.empty()) return false;
  canvas.draw(b, contour_value);
  canvas.block_around(b);
  canvas.block_around(markers_b);
  // LRA's distractors: 20 / (contour_length / 3) contours of contour_length / 3 paddles.
  const int distractor_paddles = std::max(1, o.contour_paddles / 3);
  out.distractors = 0;
  for (int d = 0; d < 20 / distractor_paddles; ++d) {
    std::vector<Pixel> c;
    for (int t = 0; t < kTries && c.empty(); ++t) c = draw_contour(rng, canvas, distractor_paddles, o.max_turn);
    if (c.empty()) continue;
    canvas.draw(c, contour_value);
    canvas.block_around(c);
    ++out.distractors;
  }
  canvas.draw(markers_a, kMarkerValue);
  canvas.draw(markers_b, kMarkerValue);
  out.pixels = canvas.take();
  out.label = label;
  return true;
}

}  // namespace

PathfinderImage generate_pathfinder_example(uint64_t seed, int64_t index, const PathfinderOptions& options) {
  VT_CHECK(options.contour_paddles >= 2 && options.contour_paddles <= 20, "[data] Pathfinder: contour_paddles ",
           options.contour_paddles, " is outside 2..20");
  SampleRng rng(seed, 0, index, /*stream=*/0x5046);
  const int32_t label = rng.bernoulli(0.5) ? 1 : 0;
  PathfinderImage image;
  for (int attempt = 0; attempt < 10000; ++attempt)
    if (try_layout(rng, options, label, image)) return image;
  VT_CHECK(false, "[data] Pathfinder: image ", index, " found no layout in 10000 attempts");
  return image;
}

std::string pathfinder_folder(int contour_paddles) {
  return contour_paddles == 6 ? "pathfinder32/curv_baseline"
                              : "pathfinder32/curv_contour_length_" + std::to_string(contour_paddles);
}

void write_pathfinder_release(const std::string& out_dir, uint64_t seed, int64_t count,
                              const PathfinderOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  constexpr int64_t kPerFolder = 1000;
  const fs::path base = fs::path(out_dir) / pathfinder_folder(options.contour_paddles);
  create_release_folder(base.string());
  std::error_code ec;
  fs::create_directories(base / "metadata", ec);
  VT_CHECK(!ec, "[data] cannot create ", (base / "metadata").string(), ": ", ec.message());
  for (int64_t folder = 0; folder * kPerFolder < count; ++folder) {
    const std::string sub = "imgs/" + std::to_string(folder);
    fs::create_directories(base / sub, ec);
    VT_CHECK(!ec, "[data] cannot create ", (base / sub).string(), ": ", ec.message());
    const fs::path meta_path = base / "metadata" / (std::to_string(folder) + ".npy");
    std::ofstream meta(meta_path, std::ios::binary);
    VT_CHECK(meta.good(), "[data] cannot write ", meta_path.string());
    for (int64_t i = 0; i < kPerFolder && folder * kPerFolder + i < count; ++i) {
      const int64_t index = folder * kPerFolder + i;
      const PathfinderImage image = generate_pathfinder_example(seed, index, options);
      const std::string name = "sample_" + std::to_string(i) + ".png";
      write_gray_png((base / sub / name).string(), image.pixels.data(), kSize, kSize);
      meta << sub << ' ' << name << ' ' << i << ' ' << image.label << '\n';
      if (progress && ((index + 1) % 1000 == 0 || index + 1 == count)) progress(index + 1, count);
    }
    meta.close();
    VT_CHECK(meta.good(), "[data] writing ", meta_path.string(), " failed");
  }
}

}  // namespace vt::data::lra
