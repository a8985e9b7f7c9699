#include "data/device_prefetcher.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tensor/tensor.h"

#ifdef VT_WITH_CUDA
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_guard.h"
#include "kernels/cuda/event.h"
#include "kernels/cuda/pinned_memory.h"
#include "kernels/cuda/stream.h"
#endif

namespace vt::data {

#ifdef VT_WITH_CUDA
namespace cu = kernels::cuda;

struct DevicePrefetcher::Impl {
  struct InFlight {
    Batch batch;                            // on the device
    std::vector<cu::PinnedBuffer> staging;  // reuse deferred by record_stream until the copy is done
    cu::CudaEvent copied{false};
  };

  Loader& loader;
  Device device;
  size_t depth;
  kernels::KernelStream stream = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<InFlight> queue;
  std::thread producer;
  bool stop = false, done = false;
  std::exception_ptr error;

  Impl(Loader& l, Device d, int depth_) : loader(l), device(d), depth(static_cast<size_t>(depth_)) {
    cu::DeviceGuard guard(device.index);
    // Non-blocking: the legacy default stream (compute) and this one must not serialize each other.
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }

  ~Impl() {
    halt();
    cu::DeviceGuard guard(device.index);
    cudaStreamSynchronize(stream);
    queue.clear();
    cudaStreamDestroy(stream);
  }

  void halt() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (producer.joinable()) producer.join();
  }

  void start() {
    halt();
    {
      // Copies still in flight write into blocks that clearing hands back to the allocator.
      cu::DeviceGuard guard(device.index);
      VT_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    queue.clear();
    stop = done = false;
    error = nullptr;
    producer = std::thread([this] { produce(); });
  }

  void copy_to_device(const Tensor& host, const Tensor& dev, InFlight& f) {
    const size_t nbytes = static_cast<size_t>(host.numel()) * dtype_size(host.dtype());
    cu::PinnedBuffer buf(nbytes);
    std::memcpy(buf.data(), host.contiguous().raw_data(), nbytes);
    VT_CUDA_CHECK(cudaMemcpyAsync(dev.raw_data(), buf.data(), nbytes, cudaMemcpyHostToDevice, stream));
    buf.record_stream(stream);
    f.staging.push_back(std::move(buf));
  }

  InFlight upload(const Batch& host) {
    cu::DeviceGuard guard(device.index);
    InFlight f;
    f.batch.images = Tensor::empty(host.images.shape(), host.images.dtype(), device);
    f.batch.labels = Tensor::empty(host.labels.shape(), host.labels.dtype(), device);
    if (host.erasing.defined()) f.batch.erasing = Tensor::empty(host.erasing.shape(), host.erasing.dtype(), device);
    // The caching allocator hands out blocks in the order of the legacy default stream: a block may still be
    // read by queued compute, so the copies wait for the work queued there so far. Every block of the batch must
    // be taken before this event (one taken after it raced with compute: NaN losses at batch 256).
    cu::CudaEvent allocated(false);
    allocated.record(nullptr);
    allocated.block(stream);
    copy_to_device(host.images, f.batch.images, f);
    copy_to_device(host.labels, f.batch.labels, f);
    if (host.erasing.defined()) copy_to_device(host.erasing, f.batch.erasing, f);
    f.copied.record(stream);
    return f;
  }

  void produce() {
    try {
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return stop || queue.size() < depth; });
          if (stop) return;
        }
        Batch host;
        if (!loader.next(host)) break;
        InFlight f = upload(host);
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(std::move(f));
        cv.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }

  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mu);
    VT_CHECK(producer.joinable(), "[data] DevicePrefetcher: call start_epoch first");
    cv.wait(lock, [&] { return !queue.empty() || done; });
    if (queue.empty()) {
      if (error) std::rethrow_exception(error);
      return false;
    }
    InFlight f = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    cv.notify_all();
    cu::DeviceGuard guard(device.index);
    f.copied.block(cu::current_stream());
    out = std::move(f.batch);
    return true;
  }
};
#else
struct DevicePrefetcher::Impl {};
#endif

DevicePrefetcher::DevicePrefetcher(Loader& loader, Device device, int depth) : loader_(loader), device_(device) {
  VT_CHECK(depth >= 1, "[data] DevicePrefetcher: depth must be >= 1, got ", depth);
  if (device.is_cpu()) return;
#ifdef VT_WITH_CUDA
  impl_ = std::make_unique<Impl>(loader, device, depth);
#else
  fail_without_cuda("DevicePrefetcher", device);
#endif
}

DevicePrefetcher::~DevicePrefetcher() = default;

void DevicePrefetcher::start_epoch(int64_t epoch) {
#ifdef VT_WITH_CUDA
  if (impl_) impl_->halt();
#endif
  loader_.start_epoch(epoch);
#ifdef VT_WITH_CUDA
  if (impl_) impl_->start();
#endif
}

bool DevicePrefetcher::next(Batch& out) {
#ifdef VT_WITH_CUDA
  if (impl_) return impl_->next(out);
#endif
  return loader_.next(out);
}

}  // namespace vt::data
