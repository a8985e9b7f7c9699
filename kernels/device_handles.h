// The handles of device work as the kernel headers declare them. The CUDA runtime's handle types are pointers to
// these incomplete structs (cudaStream_t is CUstream_st*, ...), so the aliases below are those very types, named
// without <cuda_runtime.h>: a header that declares launchers compiles in any translation unit, and a build without
// CUDA links the stubs of kernels/no_cuda/ behind the same declarations.
#pragma once

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;

namespace vt::kernels {

/// The stream a launcher queues its work on (nullptr: the legacy default stream).
using KernelStream = CUstream_st*;
using DeviceEvent = CUevent_st*;
using DeviceGraph = CUgraph_st*;
using DeviceGraphExec = CUgraphExec_st*;

}  // namespace vt::kernels
