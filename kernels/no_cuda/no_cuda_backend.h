// What every stand-in of kernels/no_cuda does: refuse, naming the launcher.
#pragma once
#include "core/error.h"

namespace vt::kernels::cuda {

[[noreturn]] inline void no_cuda_backend(const char* launcher) {
  VT_FAIL("[", launcher,
          "] needs the CUDA backend; this build has none (configure with -DVT_CUDA=ON where nvcc "
          "is installed)");
}

}  // namespace vt::kernels::cuda
