// `vitrain convert --in A --out B [--model NAME] [--img-size S] [--num-classes K]`: timm-named safetensors in,
// timm-loadable safetensors out (pos_embed resampled, head dropped or replaced, f32), no .pth involved.
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
