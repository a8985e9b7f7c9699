#include "data/image_encode.h"

#include <png.h>

#include "core/error.h"

namespace vt::data {

void write_gray_png(const std::string& path, const uint8_t* pixels, int width, int height) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_GRAY;
  const int ok = png_image_write_to_file(&image, path.c_str(), 0, pixels, width, nullptr);
  VT_CHECK(ok, "[data] cannot write ", path, ": ", image.message);
}

}  // namespace vt::data
