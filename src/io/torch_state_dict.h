// The structure of a PyTorch checkpoint, found without making any Tensor: the container (torch's zip format or
// the legacy pickle stream), the restricted unpickle of its pickle, the state dict that TorchPick chooses, and
// for each tensor its dtype, size, stride and offset checked against the bytes of its storage. Kept apart from
// torch_checkpoint.cpp so the fuzzer (scripts/fuzz.sh) can build it alone, with every byte it touches instrumented.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "io/torch_pickle.h"

namespace vt::io {

/// Which state dict of a training checkpoint to take.
enum class TorchPick { weights, ema };

/// One tensor of the chosen state dict, validated: every element it addresses lies inside `storage`.
struct TorchTensorRecord {
  std::string name;  // "module." stripped
  TorchDType dtype = TorchDType::f32;
  Shape shape, strides;      // strides in elements
  int64_t offset = 0;        // in elements, into `storage`
  std::string_view storage;  // the storage's bytes, inside the file's bytes
  int64_t numel = 0;
};

struct TorchStateDictRecords {
  std::vector<TorchTensorRecord> tensors;  // in file (dict insertion) order
  std::string source_key;                  // "" for a bare state dict
  std::vector<std::string> other_keys;     // top-level entries not taken
};

/// Finds and validates the state dict of the checkpoint in `bytes`. `verify_crc` checks the zip entries'
/// CRC-32 (off only for the fuzzer, so mutations reach the unpickler). Errors: "[torch] <label>: ...".
TorchStateDictRecords parse_torch_checkpoint(std::string_view bytes, const std::string& label, TorchPick pick,
                                             bool verify_crc = true);

/// True when `head` (a file's first bytes) starts like torch.save's output: zip or legacy pickle magic.
bool has_torch_magic(std::string_view head);

/// The vitrain dtype a torch dtype is read as: f16 -> f32, bool -> u8, i8 and i16 -> i32, the rest unchanged.
DType torch_read_dtype(TorchDType t);

/// Writes the record's `numel` elements, converted to torch_read_dtype, contiguously (row-major) to `out`.
void copy_torch_elements(const TorchTensorRecord& r, void* out);

}  // namespace vt::io
