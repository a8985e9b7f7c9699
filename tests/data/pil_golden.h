// Pillow's golden bytes (tests/data/fixtures/pil_golden.txt, written by fixtures/make_pil_golden.py) and the
// synthetic image they were made from, for the tests that compare our resizes with Pillow.
#pragma once
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <sstream>
#include <string>

namespace vt::test {

inline cv::Mat golden_input() {
  const int W = 61, H = 47;
  cv::Mat m(H, W, CV_8UC3);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < 3; ++c)
        m.at<cv::Vec3b>(y, x)[c] = static_cast<uint8_t>((x * 7 + y * 13 + c * 50 + ((x * y) % 17) * 5) % 256);
  return m;
}

inline std::map<std::string, cv::Mat> read_golden() {
  std::ifstream in(std::string(VT_SOURCE_DIR) + "/tests/data/fixtures/pil_golden.txt");
  std::map<std::string, cv::Mat> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream head(line);
    std::string name;
    int w = 0, h = 0;
    head >> name >> w >> h;
    std::string hex;
    std::getline(in, hex);
    cv::Mat m(h, w, CV_8UC3);
    for (int i = 0; i < w * h * 3; ++i) m.data[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    out[name] = m;
  }
  return out;
}

}  // namespace vt::test
