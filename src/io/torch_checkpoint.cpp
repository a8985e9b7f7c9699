// PyTorch checkpoint reader and writer (work in progress: the API is final, the implementation follows).
#include "io/torch_checkpoint.h"

#include "core/error.h"

namespace vt::io {

bool is_torch_checkpoint(const std::string&) { return false; }

TorchCheckpoint read_torch_checkpoint(const std::string& path, TorchPick) {
  VT_FAIL("[torch] ", path, ": reading PyTorch checkpoints is not implemented yet");
}

TorchCheckpoint read_torch_checkpoint_bytes(std::string_view, const std::string& label, TorchPick) {
  VT_FAIL("[torch] ", label, ": reading PyTorch checkpoints is not implemented yet");
}

void save_torch_state_dict(const std::string& path, const NamedTensors&) {
  VT_FAIL("[torch] ", path, ": writing PyTorch checkpoints is not implemented yet");
}

}  // namespace vt::io
