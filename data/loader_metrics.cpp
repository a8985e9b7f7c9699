#include "data/loader_metrics.h"

namespace vt::data {

void append_loader_metrics(const Loader& loader, std::vector<std::pair<std::string, double>>& fields) {
  fields.emplace_back("bad_files", static_cast<double>(loader.bad_files().size()));
}

}  // namespace vt::data
