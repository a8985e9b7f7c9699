// The folder of a new run, as timm's train.py picks it (`--output DIR --experiment NAME`, utils.get_outdir with
// inc=True): DIR/NAME, or DIR/NAME-1, DIR/NAME-2, ... when that is already taken, so a second run never
// overwrites the first one's files.
#pragma once
#include <filesystem>
#include <string>

namespace vt::engine {

/// DIR/NAME when it does not exist, is an empty folder, or `resuming` (a resumed run continues in its folder);
/// otherwise the first DIR/NAME-<n> (n = 1, 2, ...) that is free. The folder is created. An empty `experiment`
/// means DIR itself (suffixed the same way). Throws vt::Error naming the path when it cannot be created.
std::filesystem::path pick_run_dir(const std::string& output, const std::string& experiment, bool resuming);

}  // namespace vt::engine
