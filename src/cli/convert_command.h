// `vitrain convert --in A --out B [--ema] [--layout official|vitrain] [--non-strict] [--model NAME]
// [--img-size S] [--num-classes K]`: any weights file in (safetensors, our training checkpoint, torch .pth), the
// model's weights out as safetensors or a torch state dict (by --out's extension) that timm's or the official
// MiTA modules' load_state_dict(strict=True) accepts (pos_embed resampled, head dropped or replaced, f32).
// Registered on the main CLI11 app by one call from main().
#pragma once

namespace CLI {
class App;
}

namespace vt::cli {

/// Adds the `convert` subcommand. It runs inside app parsing and ends the parse with CLI::Success (exit 0) or
/// CLI::RuntimeError(1) after printing "error: ..." (bad input file, unknown preset, incompatible shapes).
void add_convert_command(CLI::App& app);

}  // namespace vt::cli
