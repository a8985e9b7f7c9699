#include "engine/device.h"

#include <cstdio>

#include "core/error.h"

#ifdef VT_WITH_CUDA
#include "kernels/cuda/copy.h"
#include "kernels/cuda/device_memory.h"
#endif

namespace vt::engine {

Device resolve_device(const std::string& spec) {
  if (spec == "cpu") return cpu();
  if (spec == "auto") {
#ifdef VT_WITH_CUDA
    if (kernels::cuda::device_count() > 0) return {DeviceType::kCUDA, 0};
#endif
    return cpu();
  }
  int index = 0;
  if (spec != "cuda") {
    VT_CHECK(spec.rfind("cuda:", 0) == 0 && spec.size() > 5 && spec.size() < 9 &&
                 spec.find_first_not_of("0123456789", 5) == std::string::npos,
             "[device] unknown device '", spec, "' (expected auto, cpu, cuda or cuda:N)");
    index = std::stoi(spec.substr(5));
  }
#ifdef VT_WITH_CUDA
  kernels::cuda::check_device(index, "device");
  return {DeviceType::kCUDA, index};
#else
  VT_FAIL("[device] ", spec, " asked for, but this build has no CUDA backend (configure with -DVT_CUDA=ON)");
#endif
}

void synchronize(Device device) {
  if (!device.is_cuda()) return;
#ifdef VT_WITH_CUDA
  kernels::cuda::synchronize(device.index);
#endif
}

std::optional<PeakMemory> peak_memory(Device device) {
  if (!device.is_cuda()) return std::nullopt;
#ifdef VT_WITH_CUDA
  const auto s = kernels::cuda::cuda_allocator(device.index).stats();
  return PeakMemory{s.peak_allocated_bytes, s.peak_reserved_bytes};
#else
  return std::nullopt;
#endif
}

void reset_peak_memory(Device device) {
  if (!device.is_cuda()) return;
#ifdef VT_WITH_CUDA
  kernels::cuda::cuda_allocator(device.index).reset_peak_stats();
#endif
}

void release_cached_memory(Device device) {
  if (!device.is_cuda()) return;
#ifdef VT_WITH_CUDA
  kernels::cuda::synchronize(device.index);
  kernels::cuda::cuda_allocator(device.index).empty_cache();
#endif
}

std::string describe_peak_memory(const std::optional<PeakMemory>& m) {
  if (!m) return "n/a";
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f GiB (reserved %.2f GiB)", static_cast<double>(m->allocated) / kGiB,
                static_cast<double>(m->reserved) / kGiB);
  return buf;
}

}  // namespace vt::engine
