#include "data/lra/release_folder.h"

#include <filesystem>

#include "core/error.h"

namespace fs = std::filesystem;

namespace vt::data::lra {

void create_release_folder(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    VT_CHECK(fs::is_empty(dir, ec) && !ec, "[data] ", dir,
             " already exists and is not empty: remove it first, or write to another data root");
  fs::create_directories(dir, ec);
  VT_CHECK(!ec && fs::is_directory(dir), "[data] cannot create ", dir, ": ",
           ec ? ec.message() : "a file of that name is in the way");
}

}  // namespace vt::data::lra
