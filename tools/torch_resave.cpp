// Re-saves a checkpoint's tensors with vitrain's PyTorch writer (save_torch_state_dict), for checking that
// torch.load reads what vitrain writes (scripts/check_torch_writer.py).
//   torch_resave IN.{safetensors,pth} OUT.pth [--ema]
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::strcmp(argv[3], "--ema") != 0)) {
    std::fprintf(stderr, "usage: %s IN.{safetensors,pth} OUT.pth [--ema]\n", argv[0]);
    return 2;
  }
  try {
    const std::string in = argv[1];
    const vt::io::NamedTensors tensors =
        vt::io::is_torch_checkpoint(in)
            ? vt::io::read_torch_checkpoint(in, argc == 4 ? vt::io::TorchPick::ema : vt::io::TorchPick::weights).tensors
            : vt::io::load_safetensors(in);
    vt::io::save_torch_state_dict(argv[2], tensors);
    std::printf("%s: %zu tensors\n", argv[2], tensors.size());
  } catch (const vt::Error& e) {
    std::fprintf(stderr, "torch_resave: %s\n", e.what());
    return 1;
  }
  return 0;
}
