#include "image_writers.h"

#include <png.h>
#include <turbojpeg.h>

#include <fstream>
#include <stdexcept>

namespace vt::test {
namespace {

void write_jpeg(const std::string& path, const cv::Mat& img, int pixel_format, int subsamp, int quality) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, img.data, img.cols, static_cast<int>(img.step[0]), img.rows, pixel_format, &buf, &size,
                             subsamp, quality, 0);
  if (rc != 0) {
    const std::string msg = tjGetErrorStr2(tj);
    tjDestroy(tj);
    throw std::runtime_error("tjCompress2: " + msg);
  }
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(buf), static_cast<std::streamsize>(size));
  tjFree(buf);
  tjDestroy(tj);
}

}  // namespace

cv::Mat pattern_rgb(int width, int height, int seed) {
  cv::Mat m(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      auto* p = m.ptr<uint8_t>(y) + 3 * x;
      p[0] = static_cast<uint8_t>((x * 255) / std::max(1, width - 1));
      p[1] = static_cast<uint8_t>((y * 255) / std::max(1, height - 1));
      p[2] = static_cast<uint8_t>((x + y + 40 * seed) % 256 / 2 + 64);
    }
  return m;
}

void write_jpeg_rgb(const std::string& path, const cv::Mat& rgb, int quality) {
  write_jpeg(path, rgb, TJPF_RGB, TJSAMP_444, quality);
}

void write_jpeg_gray(const std::string& path, const cv::Mat& gray, int quality) {
  write_jpeg(path, gray, TJPF_GRAY, TJSAMP_GRAY, quality);
}

void write_jpeg_cmyk(const std::string& path, const cv::Mat& cmyk, int quality) {
  write_jpeg(path, cmyk, TJPF_CMYK, TJSAMP_444, quality);
}

void write_png(const std::string& path, const cv::Mat& img) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(img.cols);
  image.height = static_cast<png_uint_32>(img.rows);
  image.format = img.channels() == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&image, path.c_str(), 0, img.data, static_cast<png_int_32>(img.step[0]), nullptr))
    throw std::runtime_error(std::string("png write: ") + image.message);
}

void truncate_copy(const std::string& src, const std::string& dst, size_t keep) {
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream out(dst, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(std::min(keep, bytes.size())));
}

int max_abs_diff_u8(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return 1 << 20;
  int worst = 0;
  for (int y = 0; y < a.rows; ++y) {
    const uint8_t* pa = a.ptr<uint8_t>(y);
    const uint8_t* pb = b.ptr<uint8_t>(y);
    for (int x = 0; x < a.cols * a.channels(); ++x) worst = std::max(worst, std::abs(int(pa[x]) - int(pb[x])));
  }
  return worst;
}

}  // namespace vt::test
