#include "core/rng.h"

namespace vt {

Generator& default_generator() {
  static Generator g(0);
  return g;
}

}  // namespace vt
