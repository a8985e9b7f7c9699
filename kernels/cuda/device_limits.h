// What the current device allows a kernel launch, for launchers that size shared memory before they launch.
#pragma once

namespace vt::kernels::cuda {

/// Bytes of dynamic shared memory one block may opt in to on the current device
/// (cudaDevAttrMaxSharedMemoryPerBlockOptin).
int max_dynamic_shared_memory();

}  // namespace vt::kernels::cuda
