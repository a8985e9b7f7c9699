// Device copies for CUDA tensors: strided copy with dtype conversion (the kernel behind contiguous(), copy_() and
// to(dtype) on the GPU), fill, zeroing, and host<->device / device<->device transfers. Host-callable, no CUDA
// headers, so src/ can include it. Every call first makes `device` current (restored afterwards).
//
// Streams: for now all work is queued on the legacy default stream (stream 0), which orders it with every other
// blocking stream on the device; this is also the stream device tensors are allocated on, so the caching
// allocator can reuse a freed block immediately. Host->device copies go through a pinned staging block and do
// not wait for queued device work; the host source may be freed when they return. Device->host copies wait.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace vt::kernels::cuda {

/// Number of usable CUDA devices (0 without a driver or GPU; never throws).
int device_count();
/// Throws "[op] cuda:N is not available: <reason>" unless device N can be used.
void check_device(int device, const char* op);

/// dst (dst_strides) <- src (src_strides), both on `device`, converting src_dtype to dst_dtype like the CPU kernel
/// (bf16 via f32 with round-to-nearest-even). At most 8 dims after merging contiguous dims.
void copy_strided(int device, void* dst, DType dst_dtype, const std::vector<int64_t>& dst_strides, const void* src,
                  DType src_dtype, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& shape);

/// n contiguous elements set to `value` converted to dtype (bit-identical to the CPU fill).
void fill(int device, void* dst, DType dtype, int64_t n, double value);
/// dst[i] = i for i < n, converted to dtype as the CPU converts a double (bf16: round to nearest even).
void iota(int device, void* dst, DType dtype, int64_t n);
void memset_zero(int device, void* dst, size_t nbytes);

void copy_host_to_device(int device, void* dst, const void* src, size_t nbytes);
void copy_device_to_host(int device, void* dst, const void* src, size_t nbytes);
/// Same or different devices (peer copy); ordered on the default streams.
void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, size_t nbytes);

/// Blocks the host until all work queued on `device` (every stream) has finished: benchmarks time with it.
void synchronize(int device);

}  // namespace vt::kernels::cuda
