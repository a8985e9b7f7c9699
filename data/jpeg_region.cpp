#include "data/jpeg_region.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <csetjmp>

#include "core/error.h"

namespace vt::data {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool truncated = false;
  char message[JMSG_LENGTH_MAX] = {};
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are tolerated as in decode_rgb, except a premature end of data (Pillow fails on it).
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<ErrorManager*>(cinfo->err)->truncated = true;
}

bool has_end_marker(const std::vector<uint8_t>& b) {
  const size_t from = b.size() > 64 ? b.size() - 64 : 0;
  for (size_t i = b.size(); i-- > from + 1;)
    if (b[i - 1] == 0xFF && b[i] == 0xD9) return true;
  return false;
}

int pick_denominator(int width, int height, const CropBox& box, int min_side) {
  if (min_side <= 0) return 1;
  int denom = 1;
  for (const int d : {2, 4, 8}) {
    // The crop shrinks with the image: it must keep min_side pixels on each side (as decode_rgb's caller asks).
    if (std::ceil(static_cast<double>(width) / d) < std::ceil(static_cast<double>(width) * min_side / box.width) ||
        std::ceil(static_cast<double>(height) / d) < std::ceil(static_cast<double>(height) * min_side / box.height))
      break;
    denom = d;
  }
  return denom;
}

}  // namespace

JpegRegion decode_jpeg_region(const std::vector<uint8_t>& bytes, const std::string& path, int width, int height,
                              const CropBox& box, int min_side) {
  JpegRegion out;
  if (!has_end_marker(bytes)) return out;
  // Everything the error path touches lives before setjmp, so the longjmp skips no destructor.
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  jpeg_create_decompress(&cinfo);
  cv::Mat pixels;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    VT_FAIL("[data] ", path, ": corrupt JPEG: ", err.message);
  }
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return out;
  }
  cinfo.out_color_space = JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(pick_denominator(width, height, box, min_side));
  jpeg_start_decompress(&cinfo);
  const double sx = static_cast<double>(cinfo.output_width) / width,
               sy = static_cast<double>(cinfo.output_height) / height;
  const int ow = static_cast<int>(cinfo.output_width), oh = static_cast<int>(cinfo.output_height);
  const int x0 = std::min(ow - 1, static_cast<int>(std::lround(box.x * sx)));
  const int y0 = std::min(oh - 1, static_cast<int>(std::lround(box.y * sy)));
  const int x1 = std::max(x0 + 1, std::min(ow, static_cast<int>(std::lround((box.x + box.width) * sx))));
  const int y1 = std::max(y0 + 1, std::min(oh, static_cast<int>(std::lround((box.y + box.height) * sy))));
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), cols = static_cast<JDIMENSION>(x1 - x0);
  jpeg_crop_scanline(&cinfo, &xoff, &cols);  // widens to whole iMCUs
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  pixels.create(y1 - y0, static_cast<int>(cols), CV_8UC3);
  bool stalled = false;
  for (int r = 0; r < pixels.rows && !stalled;) {
    JSAMPROW row = pixels.ptr<uint8_t>(r);
    const int got = static_cast<int>(jpeg_read_scanlines(&cinfo, &row, 1));
    stalled = got == 0;
    r += got;
  }
  const bool truncated = err.truncated;
  jpeg_abort_decompress(&cinfo);  // the rows below the crop are never decoded
  jpeg_destroy_decompress(&cinfo);
  if (truncated || stalled) VT_FAIL("[data] ", path, ": corrupt JPEG: premature end of data");
  out.pixels = pixels;
  out.crop = {x0 - static_cast<int>(xoff), 0, x1 - x0, y1 - y0};
  return out;
}

}  // namespace vt::data
