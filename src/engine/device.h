// The device a run uses and the few device-wide services the loops need: picking it from a config string,
// waiting for queued work (timing), and the device allocator's peak memory.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "core/device.h"

namespace vt::engine {

/// "cpu" → cpu; "cuda" → cuda:0; "cuda:N" → cuda:N (throws "[device] cuda:N is not available: ..." when it
/// cannot be used, or when the build has no CUDA); "auto" → cuda:0 when a GPU is usable, else cpu.
Device resolve_device(const std::string& spec);

/// Waits until all work queued on `device` has finished (no-op on the CPU).
void synchronize(Device device);

/// Peak bytes of the device caching allocator since the last reset_peak_memory.
struct PeakMemory {
  size_t allocated = 0;  // tensors alive at once (torch.cuda.max_memory_allocated)
  size_t reserved = 0;   // segments held from the driver (torch.cuda.max_memory_reserved)
};

/// The peak memory of `device`, or std::nullopt where it is not tracked (the CPU).
std::optional<PeakMemory> peak_memory(Device device);
/// Starts a new peak-memory window on `device` (no-op on the CPU).
void reset_peak_memory(Device device);
/// Returns the allocator's unused cached blocks to the driver, so the next window's reserved peak starts clean.
void release_cached_memory(Device device);

/// "12.3 GiB (reserved 13.0 GiB)" or "n/a".
std::string describe_peak_memory(const std::optional<PeakMemory>& m);

}  // namespace vt::engine
