// NcclCommunicator: ncclCommInitRank with the id from the rendezvous, a non-blocking communication stream, and
// event edges between it and the compute stream. Without NCCL in the build every entry point throws.
#include "dist/nccl_communicator.h"

#ifdef VT_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <vector>

#include "dist/rendezvous.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::dist {

#ifdef VT_WITH_NCCL

// An NCCL call that failed, named with the rank and NCCL's own last message.
#define VT_NCCL_RANK_CHECK(expr)                                                 \
  do {                                                                           \
    ncclResult_t vt_nccl_status_ = (expr);                                       \
    VT_CHECK(vt_nccl_status_ == ncclSuccess, "[nccl] rank ", rank_, ": ", #expr, \
             " failed: ", ncclGetErrorString(vt_nccl_status_), " (",             \
             ncclGetLastError(state_ ? state_->comm : nullptr), ")");            \
  } while (0)

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t compute_done = nullptr, comm_done = nullptr;
  int device = 0;
};

namespace {

ncclDataType_t nccl_dtype(const Tensor& t, const char* op) {
  switch (t.dtype()) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::bf16: return ncclBfloat16;
    default: VT_FAIL("[nccl] ", op, " supports f32, bf16 and f64, got ", t.describe());
  }
}

}  // namespace

bool NcclCommunicator::available() { return true; }

NcclCommunicator::NcclCommunicator(const LaunchEnv& env, Device device) : rank_(env.rank), world_(env.world) {
  VT_CHECK(device.is_cuda(), "[nccl] rank ", rank_, ": NCCL needs a CUDA device, got ", device.str());
  state_ = std::make_unique<State>();
  state_->device = device.index;
  kernels::cuda::DeviceGuard guard(device.index);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::vector<uint8_t> payload;
  if (rank_ == 0) {
    VT_NCCL_RANK_CHECK(ncclGetUniqueId(&id));
    payload.assign(reinterpret_cast<const uint8_t*>(&id), reinterpret_cast<const uint8_t*>(&id) + sizeof(id));
  }
  if (world_ > 1) payload = share_from_rank0(env, payload);
  VT_CHECK(payload.size() == sizeof(id), "[nccl] rank ", rank_, ": the rendezvous returned ", payload.size(),
           " bytes, an NCCL unique id has ", sizeof(id));
  std::memcpy(&id, payload.data(), sizeof(id));
  VT_NCCL_RANK_CHECK(ncclCommInitRank(&state_->comm, world_, id, rank_));
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&state_->compute_done, cudaEventDisableTiming));
  VT_CUDA_CHECK(cudaEventCreateWithFlags(&state_->comm_done, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
  if (!state_) return;
  cudaSetDevice(state_->device);
  // Unwinding an error, or a collective still pending (a peer may be gone): abort rather than wait for it forever.
  const bool idle = !state_->stream || cudaStreamQuery(state_->stream) == cudaSuccess;
  if (state_->comm) {
    if (idle && std::uncaught_exceptions() == 0) ncclCommDestroy(state_->comm);
    else ncclCommAbort(state_->comm);
  }
  if (state_->compute_done) cudaEventDestroy(state_->compute_done);
  if (state_->comm_done) cudaEventDestroy(state_->comm_done);
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

namespace {

// Checks a tensor for a collective and makes the communication stream wait for the compute stream.
void before_collective(const Tensor& t, const char* op, int rank, int device, cudaStream_t comm_stream,
                       cudaEvent_t compute_done) {
  VT_CHECK(t.device().is_cuda() && t.device().index == device && t.is_contiguous(), "[nccl] rank ", rank, ": ", op,
           " needs a contiguous tensor on cuda:", device, ", got ", t.describe(), " on ", t.device().str());
  VT_CUDA_CHECK(cudaEventRecord(compute_done, kernels::cuda::current_stream()));
  VT_CUDA_CHECK(cudaStreamWaitEvent(comm_stream, compute_done, 0));
}

}  // namespace

void NcclCommunicator::all_reduce_sum(const Tensor& t) {
  kernels::cuda::DeviceGuard guard(state_->device);
  before_collective(t, "all_reduce_sum", rank_, state_->device, state_->stream, state_->compute_done);
  if (t.numel() == 0) return;
  VT_NCCL_RANK_CHECK(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                   nccl_dtype(t, "all_reduce_sum"), ncclSum, state_->comm, state_->stream));
}

void NcclCommunicator::broadcast(const Tensor& t, int root) {
  VT_CHECK(root >= 0 && root < world_, "[nccl] rank ", rank_, ": broadcast root ", root, " outside [0, ", world_, ")");
  kernels::cuda::DeviceGuard guard(state_->device);
  before_collective(t, "broadcast", rank_, state_->device, state_->stream, state_->compute_done);
  if (t.numel() == 0) return;
  VT_NCCL_RANK_CHECK(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                   nccl_dtype(t, "broadcast"), root, state_->comm, state_->stream));
}

// In place. Equal slices go to ncclReduceScatter / ncclAllGather (recvbuff = sendbuff + rank · count); otherwise
// (the last slices shorter) one ncclReduce / ncclBroadcast per slice in one group.
void NcclCommunicator::reduce_scatter_sum(const Tensor& buffer) {
  VT_CHECK(buffer.dim() == 1, "[nccl] rank ", rank_, ": reduce_scatter_sum needs a 1-D buffer, got ",
           buffer.describe());
  kernels::cuda::DeviceGuard guard(state_->device);
  before_collective(buffer, "reduce_scatter_sum", rank_, state_->device, state_->stream, state_->compute_done);
  const int64_t numel = buffer.numel();
  if (numel == 0) return;
  const ncclDataType_t type = nccl_dtype(buffer, "reduce_scatter_sum");
  char* base = static_cast<char*>(buffer.raw_data());
  const size_t elem = dtype_size(buffer.dtype());
  const auto [begin, end] = shard_range(numel, world_, rank_);
  if (shard_range(numel, world_, 0).second * world_ == numel) {
    VT_NCCL_RANK_CHECK(ncclReduceScatter(base, base + static_cast<size_t>(begin) * elem,
                                         static_cast<size_t>(end - begin), type, ncclSum, state_->comm,
                                         state_->stream));
    return;
  }
  VT_NCCL_RANK_CHECK(ncclGroupStart());
  for (int r = 0; r < world_; ++r) {
    const auto [b, e] = shard_range(numel, world_, r);
    if (e == b) continue;
    void* p = base + static_cast<size_t>(b) * elem;
    VT_NCCL_RANK_CHECK(ncclReduce(p, p, static_cast<size_t>(e - b), type, ncclSum, r, state_->comm, state_->stream));
  }
  VT_NCCL_RANK_CHECK(ncclGroupEnd());
}

void NcclCommunicator::all_gather(const Tensor& buffer) {
  VT_CHECK(buffer.dim() == 1, "[nccl] rank ", rank_, ": all_gather needs a 1-D buffer, got ", buffer.describe());
  kernels::cuda::DeviceGuard guard(state_->device);
  before_collective(buffer, "all_gather", rank_, state_->device, state_->stream, state_->compute_done);
  const int64_t numel = buffer.numel();
  if (numel == 0) return;
  const ncclDataType_t type = nccl_dtype(buffer, "all_gather");
  char* base = static_cast<char*>(buffer.raw_data());
  const size_t elem = dtype_size(buffer.dtype());
  const auto [begin, end] = shard_range(numel, world_, rank_);
  if (shard_range(numel, world_, 0).second * world_ == numel) {
    VT_NCCL_RANK_CHECK(ncclAllGather(base + static_cast<size_t>(begin) * elem, base, static_cast<size_t>(end - begin),
                                     type, state_->comm, state_->stream));
    return;
  }
  VT_NCCL_RANK_CHECK(ncclGroupStart());
  for (int r = 0; r < world_; ++r) {
    const auto [b, e] = shard_range(numel, world_, r);
    if (e == b) continue;
    void* p = base + static_cast<size_t>(b) * elem;
    VT_NCCL_RANK_CHECK(ncclBroadcast(p, p, static_cast<size_t>(e - b), type, r, state_->comm, state_->stream));
  }
  VT_NCCL_RANK_CHECK(ncclGroupEnd());
}

void NcclCommunicator::wait() {
  kernels::cuda::DeviceGuard guard(state_->device);
  VT_CUDA_CHECK(cudaEventRecord(state_->comm_done, state_->stream));
  VT_CUDA_CHECK(cudaStreamWaitEvent(kernels::cuda::current_stream(), state_->comm_done, 0));
}

void NcclCommunicator::barrier() {
  // A one-element all-reduce, then the host waits for it: every rank has reached this point.
  Tensor token = Tensor::zeros({1}, DType::f32, Device{DeviceType::kCUDA, state_->device});
  all_reduce_sum(token);
  kernels::cuda::DeviceGuard guard(state_->device);
  VT_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
}

#else  // no NCCL in this build

struct NcclCommunicator::State {};

bool NcclCommunicator::available() { return false; }

NcclCommunicator::NcclCommunicator(const LaunchEnv& env, Device) : rank_(env.rank), world_(env.world) {
  VT_FAIL("[nccl] rank ", rank_, ": this build has no NCCL (configure with CUDA and libnccl)");
}
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::all_reduce_sum(const Tensor&) { VT_FAIL("[nccl] no NCCL in this build"); }
void NcclCommunicator::broadcast(const Tensor&, int) { VT_FAIL("[nccl] no NCCL in this build"); }
void NcclCommunicator::reduce_scatter_sum(const Tensor&) { VT_FAIL("[nccl] no NCCL in this build"); }
void NcclCommunicator::all_gather(const Tensor&) { VT_FAIL("[nccl] no NCCL in this build"); }
void NcclCommunicator::barrier() { VT_FAIL("[nccl] no NCCL in this build"); }
void NcclCommunicator::wait() { VT_FAIL("[nccl] no NCCL in this build"); }

#endif

}  // namespace vt::dist
