// The data loader's numbers for the trainer's metrics line (io::MetricsLog fields).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"

namespace vt::data {

/// Appends {"bad_files": distinct bad files skipped so far} to a metrics line the trainer is about to log.
void append_loader_metrics(const Loader& loader, std::vector<std::pair<std::string, double>>& fields);

}  // namespace vt::data
