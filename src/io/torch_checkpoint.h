// PyTorch checkpoints (.pth / .pt / .bin written by torch.save): read the state dict of a bare state dict or of
// a training checkpoint (DeiT's {'model', 'model_ema', 'optimizer', 'epoch', 'args'}, timm's {'state_dict',
// 'state_dict_ema', ...}), and write a bare state dict that torch.load reads. The reader never executes the
// pickle: a restricted unpickler of our own builds values and refuses every global that is not on its allow-list
// (os.system, builtins.eval, ...), naming the global and the file. Both torch's zip format (torch >= 1.6) and the
// legacy pickle-stream format are read; errors are vt::Error naming the file.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "io/torch_state_dict.h"

namespace vt::io {

// TorchPick (weights | ema: which state dict of a training checkpoint to take) is in io/torch_state_dict.h.

struct TorchCheckpoint {
  NamedTensors tensors;    // the chosen state dict: dotted names in file order, CPU tensors, "module." stripped
  std::string source_key;  // "" for a bare state dict, else "model" / "state_dict" / "model_ema" / "state_dict_ema"
  std::vector<std::string> other_keys;  // the top-level entries left out (optimizer, epoch, args, ...)
};

/// True when the file starts like a torch.save output: a zip ("PK\3\4") or a legacy pickle (0x80 protocol 2 and
/// torch's magic number). False for anything else, also for a file that cannot be opened.
bool is_torch_checkpoint(const std::string& path);

/// Reads the state dict that `pick` chooses. Tensors come back contiguous on the CPU; f16 becomes f32, bool u8,
/// i8/i16 i32 (vitrain has none of those dtypes). Throws vt::Error naming the file (and the tensor or global).
TorchCheckpoint read_torch_checkpoint(const std::string& path, TorchPick pick = TorchPick::weights);

/// read_torch_checkpoint for a file already in memory (`label` names it in errors), with the same checks.
TorchCheckpoint read_torch_checkpoint_bytes(std::string_view bytes, const std::string& label,
                                            TorchPick pick = TorchPick::weights);

/// Writes a bare state dict that torch.load (also weights_only=True) reads: torch's zip format (pickle protocol 2,
/// an OrderedDict of _rebuild_tensor_v2 calls, one storage per tensor, byteorder "little"), atomically (tmp,
/// fsync, rename). Tensors: CPU, dtypes f64 f32 bf16 i32 i64 u8. Throws vt::Error on empty or duplicate names.
void save_torch_state_dict(const std::string& path, const NamedTensors& tensors);

}  // namespace vt::io
