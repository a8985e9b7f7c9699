// The folder a generator writes a set into.
#pragma once
#include <string>

namespace vt::data::lra {

/// Creates `dir` (and its parents). Throws naming it when it cannot be created, or when it already holds files:
/// a new set is never mixed with the leftovers of an older one (a larger Pathfinder pool's extra metadata files
/// would otherwise join the new pool).
void create_release_folder(const std::string& dir);

}  // namespace vt::data::lra
