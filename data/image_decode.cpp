#include "data/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <opencv2/imgproc.hpp>

#include "core/error.h"

namespace vt::data {
namespace {

// tjhandle is not thread-safe: one per thread, created on first use.
struct DecompressorHandle {
  tjhandle h = tjInitDecompress();
  ~DecompressorHandle() {
    if (h) tjDestroy(h);
  }
};

DecompressorHandle& thread_handle() {
  thread_local DecompressorHandle handle;
  return handle;
}

tjhandle thread_decompressor() {
  DecompressorHandle& handle = thread_handle();
  VT_CHECK(handle.h != nullptr, "[data] tjInitDecompress failed: ", tjGetErrorStr2(nullptr));
  return handle.h;
}

// A handle that failed on a corrupt stream can keep state that breaks the thread's next, valid JPEG ("Bogus
// Huffman table definition"), so a failure replaces it.
void reset_thread_decompressor() {
  DecompressorHandle& handle = thread_handle();
  if (handle.h) tjDestroy(handle.h);
  handle.h = tjInitDecompress();
}

void check_pixel_limit(int width, int height, int64_t max_pixels, const std::string& path) {
  const int64_t pixels = static_cast<int64_t>(width) * height;
  VT_CHECK(max_pixels <= 0 || pixels <= max_pixels, "[data] ", path, ": ", width, "x", height, " = ", pixels,
           " pixels, more than data.max_image_pixels = ", max_pixels, " (a decompression bomb?)");
}

ImageFormat sniff(const std::vector<uint8_t>& b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::jpeg;
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 8 && std::memcmp(b.data(), png_sig, 8) == 0) return ImageFormat::png;
  return ImageFormat::unknown;
}

struct JpegHeader {
  int width, height, subsamp, colorspace;
};

JpegHeader jpeg_header(tjhandle tj, const std::vector<uint8_t>& bytes, const std::string& path) {
  JpegHeader h{};
  if (tjDecompressHeader3(tj, bytes.data(), bytes.size(), &h.width, &h.height, &h.subsamp, &h.colorspace) != 0) {
    const std::string msg = tjGetErrorStr2(tj);
    reset_thread_decompressor();
    VT_FAIL("[data] ", path, ": bad JPEG header: ", msg);
  }
  return h;
}

// The smallest scale 1/2, 1/4 or 1/8 that keeps both sides at least the requested minimum (none: full size).
// The other m/8 scales are not offered: libjpeg-turbo has SIMD inverse DCTs only for 8x8, 4x4, 2x2 and 1x1 blocks,
// and its plain-C 7x7/6x6/5x5/3x3 ones make a 7/8 decode slower than a full-size one.
tjscalingfactor pick_scale(int width, int height, int min_width, int min_height) {
  tjscalingfactor best{1, 1};
  if (min_width <= 0 && min_height <= 0) return best;
  for (const int denom : {2, 4, 8}) {
    const tjscalingfactor f{1, denom};
    if (TJSCALED(width, f) < min_width || TJSCALED(height, f) < min_height) break;
    best = f;
  }
  return best;
}

void check_decompress(int rc, tjhandle tj, const std::string& path) {
  if (rc == 0) return;
  const std::string msg = tjGetErrorStr2(tj);
  // A warning means libjpeg finished the image. Pillow fails only on truncation, so we do too.
  if (tjGetErrorCode(tj) == TJERR_WARNING && msg.find("Premature end") == std::string::npos) return;
  reset_thread_decompressor();
  VT_FAIL("[data] ", path, ": corrupt JPEG: ", msg);
}

cv::Mat decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& path, int min_width, int min_height,
                    int64_t max_pixels) {
  tjhandle tj = thread_decompressor();
  const JpegHeader h = jpeg_header(tj, bytes, path);
  check_pixel_limit(h.width, h.height, max_pixels, path);
  const tjscalingfactor f = pick_scale(h.width, h.height, min_width, min_height);
  const int w = TJSCALED(h.width, f), ht = TJSCALED(h.height, f);
  if (h.colorspace == TJCS_CMYK || h.colorspace == TJCS_YCCK) {
    // libjpeg cannot convert CMYK to RGB. TurboJPEG returns Adobe-inverted CMYK (255 = no ink), so Pillow's
    // (255-c)(255-k)/255 on un-inverted values becomes C*K/255 here.
    cv::Mat cmyk(ht, w, CV_8UC4);
    check_decompress(tjDecompress2(tj, bytes.data(), bytes.size(), cmyk.data, w, 0, ht, TJPF_CMYK, 0), tj, path);
    cv::Mat rgb(ht, w, CV_8UC3);
    for (int y = 0; y < ht; ++y) {
      const uint8_t* s = cmyk.ptr<uint8_t>(y);
      uint8_t* d = rgb.ptr<uint8_t>(y);
      for (int x = 0; x < w; ++x, s += 4, d += 3) {
        const int k = s[3];
        for (int c = 0; c < 3; ++c) d[c] = static_cast<uint8_t>((s[c] * k + 127) / 255);
      }
    }
    return rgb;
  }
  cv::Mat rgb(ht, w, CV_8UC3);
  check_decompress(tjDecompress2(tj, bytes.data(), bytes.size(), rgb.data, w, 0, ht, TJPF_RGB, 0), tj, path);
  return rgb;
}

struct PngImage {
  png_image image;
  PngImage() {
    std::memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image); }
};

void png_begin(PngImage& p, const std::vector<uint8_t>& bytes, const std::string& path) {
  if (!png_image_begin_read_from_memory(&p.image, bytes.data(), bytes.size()))
    VT_FAIL("[data] ", path, ": bad PNG header: ", p.image.message);
}

cv::Mat decode_png(const std::vector<uint8_t>& bytes, const std::string& path, uint32_t format, int cv_type,
                   int64_t max_pixels) {
  PngImage p;
  png_begin(p, bytes, path);
  check_pixel_limit(static_cast<int>(p.image.width), static_cast<int>(p.image.height), max_pixels, path);
  p.image.format = format;
  cv::Mat out(static_cast<int>(p.image.height), static_cast<int>(p.image.width), cv_type);
  // Alpha is dropped the way Pillow's convert("RGB") does it only for opaque images; a translucent PNG is
  // composited onto black by libpng (ImageNet and ADE20K have none).
  if (!png_image_finish_read(&p.image, nullptr, out.data, static_cast<png_int_32>(out.step[0]), nullptr))
    VT_FAIL("[data] ", path, ": corrupt PNG: ", p.image.message);
  return out;
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  VT_CHECK(in.good(), "[data] cannot open ", path);
  const std::streamsize size = in.tellg();
  VT_CHECK(size >= 0, "[data] cannot read ", path);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  VT_CHECK(in.read(reinterpret_cast<char*>(bytes.data()), size).good() || size == 0, "[data] cannot read ", path);
  return bytes;
}

ImageInfo peek_image(const std::vector<uint8_t>& bytes, const std::string& path, int64_t max_pixels) {
  ImageInfo info;
  info.format = sniff(bytes);
  if (info.format == ImageFormat::jpeg) {
    const JpegHeader h = jpeg_header(thread_decompressor(), bytes, path);
    info.width = h.width;
    info.height = h.height;
  } else if (info.format == ImageFormat::png) {
    PngImage p;
    png_begin(p, bytes, path);
    info.width = static_cast<int>(p.image.width);
    info.height = static_cast<int>(p.image.height);
  } else {
    VT_FAIL("[data] ", path, ": not a JPEG or PNG file (", bytes.size(), " bytes)");
  }
  check_pixel_limit(info.width, info.height, max_pixels, path);
  return info;
}

cv::Mat decode_rgb(const std::vector<uint8_t>& bytes, const std::string& path, int min_width, int min_height,
                   int64_t max_pixels) {
  switch (sniff(bytes)) {
    case ImageFormat::jpeg: return decode_jpeg(bytes, path, min_width, min_height, max_pixels);
    case ImageFormat::png: return decode_png(bytes, path, PNG_FORMAT_RGB, CV_8UC3, max_pixels);
    default: VT_FAIL("[data] ", path, ": not a JPEG or PNG file (", bytes.size(), " bytes)");
  }
}

cv::Mat load_rgb(const std::string& path, int64_t max_pixels) {
  return decode_rgb(read_file_bytes(path), path, 0, 0, max_pixels);
}

cv::Mat load_label_png(const std::string& path, int64_t max_pixels) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  VT_CHECK(sniff(bytes) == ImageFormat::png, "[data] ", path, ": a label map must be a PNG");
  PngImage p;
  png_begin(p, bytes, path);
  // The simplified API would map palette entries to colours; labels need the raw indices.
  const bool palette = (p.image.format & PNG_FORMAT_FLAG_COLORMAP) != 0;
  const bool gray = (p.image.format & PNG_FORMAT_FLAG_COLOR) == 0;
  VT_CHECK(!palette && gray, "[data] ", path, ": a label map must be a single-channel gray PNG");
  return decode_png(bytes, path, PNG_FORMAT_GRAY, CV_8UC1, max_pixels);
}

std::string decode_failure_message(const std::string& path) {
  std::string what;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    what = "out of memory while decoding (std::bad_alloc)";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception while decoding";
  }
  if (what.find(path) != std::string::npos) return what;
  return "[data] " + path + ": " + what;
}

}  // namespace vt::data
