// PyTorch checkpoints: the records of torch_state_dict become Tensors; the writer pickles an OrderedDict of
// _rebuild_tensor_v2 calls the way torch.save does, one storage per tensor.
#include "io/torch_checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/zip_archive.h"

namespace vt::io {

static_assert(std::endian::native == std::endian::little, "torch checkpoint I/O assumes a little-endian host");

namespace {

// The file mapped read-only: tensors are copied out of it, so it is never held twice in memory.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    VT_CHECK(fd_ >= 0, "[torch] cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    VT_CHECK(::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode), "[torch] '", path, "' is not a regular file");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      VT_CHECK(p != MAP_FAILED, "[torch] cannot map '", path, "': ", std::strerror(errno));
      data_ = static_cast<const char*>(p);
    }
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {data_ ? data_ : "", size_}; }

 private:
  int fd_ = -1;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

const char* storage_class(DType t) {
  switch (t) {
    case DType::f64: return "DoubleStorage";
    case DType::f32: return "FloatStorage";
    case DType::bf16: return "BFloat16Storage";
    case DType::i32: return "IntStorage";
    case DType::i64: return "LongStorage";
    case DType::u8: return "ByteStorage";
  }
  return "?";
}

}  // namespace

bool is_torch_checkpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[16];
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n > 0 && has_torch_magic(std::string_view(head, static_cast<size_t>(n)));
}

TorchCheckpoint read_torch_checkpoint_bytes(std::string_view bytes, const std::string& label, TorchPick pick) {
  TorchStateDictRecords records = parse_torch_checkpoint(bytes, label, pick);
  TorchCheckpoint out;
  out.source_key = std::move(records.source_key);
  out.other_keys = std::move(records.other_keys);
  std::set<std::string> names;
  for (const TorchTensorRecord& r : records.tensors) {
    std::string name = r.name.rfind("module.", 0) == 0 ? r.name.substr(7) : r.name;  // DistributedDataParallel
    VT_CHECK(!name.empty(), "[torch] ", label, ": a tensor with an empty name");
    VT_CHECK(names.insert(name).second, "[torch] ", label, ": tensor '", name, "' appears twice (once with ",
             "the 'module.' prefix of DistributedDataParallel, once without?)");
    Tensor t = Tensor::empty(r.shape, torch_read_dtype(r.dtype));
    copy_torch_elements(r, t.raw_data());
    out.tensors.emplace_back(std::move(name), std::move(t));
  }
  return out;
}

TorchCheckpoint read_torch_checkpoint(const std::string& path, TorchPick pick) {
  const MappedFile file(path);
  return read_torch_checkpoint_bytes(file.bytes(), path, pick);
}

void save_torch_state_dict(const std::string& path, const NamedTensors& tensors) {
  std::set<std::string> names;
  std::vector<Tensor> data;
  data.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    VT_CHECK(!name.empty(), "[torch] ", path, ": empty tensor name");
    VT_CHECK(names.insert(name).second, "[torch] ", path, ": duplicate tensor name '", name, "'");
    VT_CHECK(t.defined(), "[torch] ", path, ": tensor '", name, "' is undefined");
    VT_CHECK(t.device().is_cpu(), "[torch] ", path, ": tensor '", name, "' is on ", t.device().str(),
             "; copy it to the CPU first");
    data.push_back(t.detach().contiguous());
  }

  // torch.save's pickle: OrderedDict() then SETITEMS of name -> _rebuild_tensor_v2(
  //   persistent_id(('storage', torch.<T>Storage, key, 'cpu', numel)), 0, size, stride, False, OrderedDict()).
  PickleWriter p;
  p.global("collections", "OrderedDict");
  p.empty_tuple();
  p.reduce();
  p.mark();
  for (size_t i = 0; i < data.size(); ++i) {
    const Tensor& t = data[i];
    try {
      p.string(tensors[i].first);
    } catch (const Error&) {
      VT_FAIL("[torch] ", path, ": tensor name '", tensors[i].first, "' is not valid UTF-8");
    }
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.mark();
    p.mark();
    p.string("storage");
    p.global("torch", storage_class(t.dtype()));
    p.string(std::to_string(i));
    p.string("cpu");
    p.integer(t.numel());
    p.tuple_from_mark();
    p.persistent_id();
    p.integer(0);
    p.mark();
    for (int64_t d : t.shape()) p.integer(d);
    p.tuple_from_mark();
    p.mark();
    for (int64_t s : contiguous_strides(t.shape())) p.integer(s);
    p.tuple_from_mark();
    p.boolean(false);
    p.global("collections", "OrderedDict");
    p.empty_tuple();
    p.reduce();
    p.tuple_from_mark();
    p.reduce();
  }
  p.setitems_from_mark();
  const std::string pickle = p.finish();

  AtomicFile out(path);
  StoredZipWriter zip(out);
  zip.add("archive/data.pkl", pickle);
  zip.add("archive/byteorder", "little");
  for (size_t i = 0; i < data.size(); ++i)
    zip.add("archive/data/" + std::to_string(i),
            {{data[i].raw_data(), static_cast<size_t>(data[i].numel()) * dtype_size(data[i].dtype())}});
  zip.add("archive/version", "3\n");
  zip.finish();
  out.commit();
}

}  // namespace vt::io
