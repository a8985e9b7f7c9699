// The CUDA runtime pieces the op front-ends call around every launcher (device guard, current stream), for a build
// without the CUDA backend. There is no device to switch and no stream to queue on, so they do nothing; the
// launcher stubs that follow them refuse, naming the launcher.
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"

namespace vt::kernels::cuda {

DeviceGuard::DeviceGuard(int) {}
DeviceGuard::~DeviceGuard() = default;

KernelStream current_stream() { return nullptr; }
StreamGuard::StreamGuard(KernelStream) : previous_(nullptr) {}
StreamGuard::~StreamGuard() = default;
KernelStream allocation_stream() { return nullptr; }
void set_allocation_stream(KernelStream) {}
void fail_if_capturing(KernelStream, const std::string&) {}

}  // namespace vt::kernels::cuda
