// Writing 8-bit gray images as PNG files (libpng), for the data sets vitrain generates itself.
#pragma once
#include <cstdint>
#include <string>

namespace vt::data {

/// `pixels`: height rows of width bytes. Throws vt::Error naming `path` when it cannot be written.
void write_gray_png(const std::string& path, const uint8_t* pixels, int width, int height);

}  // namespace vt::data
