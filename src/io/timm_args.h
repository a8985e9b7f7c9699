// timm's train.py / validate.py / benchmark.py flags and the config key each one sets: the one table behind
// `vitrain train`'s timm flags, `-c args.yaml` (the flat file timm's train.py writes), the hints of an unknown
// --set key and the flag table of --help and the README.
#pragma once
#include <string>
#include <vector>

namespace vt::io {

/// How a flag takes its value on the command line: one value, one or more (argparse nargs='+'), or none
/// (store_true: the key is set to true).
enum class TimmArg { value, list, flag };

struct TimmFlag {
  const char* names;  ///< CLI11 names, e.g. "-b,--batch-size"
  const char* dest;   ///< timm's argparse dest, which is also its args.yaml key, e.g. "batch_size"
  const char* key;    ///< our dotted config key, e.g. "train.batch_size"
  TimmArg kind;
  const char* if_null;  ///< the YAML value that an args.yaml `null` stands for; nullptr: keep our default
  const char* also;     ///< a second override the flag implies ("train.global_batch_size=0"), or nullptr
  const char* help;
};

/// Every timm train.py flag that has a meaning here, in timm's order. `--output`/`--experiment` (train.output =
/// OUTPUT/EXPERIMENT) and the positional DATA_DIR are in it too.
const std::vector<TimmFlag>& timm_flags();

/// The table row whose dest or long flag is `name` ("lr", "drop_path", "drop-path", "--drop-path"), or nullptr.
const TimmFlag* find_timm_flag(const std::string& name);

/// "section.key=value" for a flag given with `values` (its words on the command line; none for a flag), plus its
/// `also` override.
std::vector<std::string> timm_flag_overrides(const TimmFlag& flag, const std::vector<std::string>& values);

/// train.output for timm's --output DIR and --experiment NAME: DIR/NAME, DIR alone, or timm's output/train/NAME.
std::string timm_output_dir(const std::string& output, const std::string& experiment);

/// True when `flag` ("--channels-last", "--no-aug=1") is a timm train.py flag that has no meaning here.
bool is_unsupported_timm_flag(const std::string& flag);

/// True when YAML text is timm's flat args file: a map with no sections (its values are scalars, lists or null,
/// at least one not null).
bool is_timm_args_yaml(const std::string& text);

/// The overrides ("optim.lr=0.001", applied in order over the defaults) that timm's args.yaml at `path` stands
/// for. A timm key with no meaning here is accepted when it has timm's default value (or cannot change the
/// result, like pin_mem); any other value, and a key timm does not write, is an error naming the file and key.
std::vector<std::string> timm_args_overrides(const std::string& text, const std::string& path);

/// The resolved config as timm's flat args.yaml (the keys of timm_flags() that we honour, timm's spelling).
struct Config;
std::string to_timm_args_yaml(const Config& cfg);

}  // namespace vt::io
