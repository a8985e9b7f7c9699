// A restricted unpickler for torch.save's pickles. It builds values and never executes anything: the only
// callables it "calls" are the few a state dict needs (collections.OrderedDict, torch._utils._rebuild_tensor_v2
// and _rebuild_parameter, torch.Size, _codecs.encode for bytes, builtins.set/frozenset), each turned into a plain
// value here. Any other class is accepted only as an opaque object (argparse.Namespace in DeiT's 'args'); any
// other call, and every global of a module that can run code (os, posix, subprocess, builtins, ...), is refused
// with an error naming the global and the file. Values live in an arena owned by the Unpickled result, so cyclic
// or deeply nested hostile pickles cannot leak or overflow the stack.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vt::io {

/// The element types of torch's storage classes (torch.FloatStorage, ...).
enum class TorchDType { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };
size_t torch_dtype_size(TorchDType t);
const char* torch_dtype_name(TorchDType t);  // torch's: "float32", "bfloat16", ...
/// The element type of a storage class (module "torch", name "FloatStorage", ...); nullopt for other globals.
std::optional<TorchDType> torch_storage_dtype(const std::string& module, const std::string& name);

struct PyValue {
  enum class Kind {
    none,
    boolean,
    integer,
    big_integer,
    floating,
    string,
    bytes,
    list,
    tuple,
    dict,
    set,
    global,
    object,
    storage,
    tensor
  };
  Kind kind = Kind::none;
  int64_t i = 0;     // boolean, integer; storage: numel; tensor: storage offset
  double f = 0;      // floating
  std::string s;     // string, bytes (raw), big_integer (little-endian two's complement); global/object: module;
                     // storage: key
  std::string name;  // global/object: name; storage: location
  std::vector<PyValue*> items;                          // list, tuple, set; tensor: {storage}
  std::vector<std::pair<PyValue*, PyValue*>> entries;   // dict, in insertion order
  std::unordered_map<std::string, size_t> string_keys;  // dict: where each string key is in `entries`
  TorchDType dtype = TorchDType::f32;                   // storage
  std::vector<int64_t> shape, strides;                  // tensor
  PyValue* view_of = nullptr;                           // storage (legacy format): the root storage of a view
  int64_t view_offset = 0;                              // storage (legacy format): element offset into the root

  std::string global_name() const { return s + "." + name; }
  /// For messages: "a dict", "the class argparse.Namespace", ...
  std::string describe() const;
};

/// One pickle's result: the value and the arena that owns every value it references.
struct Unpickled {
  std::deque<PyValue> arena;
  PyValue* root = nullptr;
  size_t end = 0;  // offset just past the STOP opcode
};

/// Called on BINPERSID with the persistent id (a tuple); returns the value to push (torch: a storage).
using PersistentLoad = std::function<PyValue*(PyValue& pid, Unpickled& arena)>;

/// Unpickles `bytes` from `offset` up to and including its STOP. `where` names the pickle in errors, e.g.
/// "model.pth: data.pkl". Throws vt::Error "[torch] <where>: ...".
void unpickle(std::string_view bytes, size_t offset, const std::string& where, const PersistentLoad& persistent_load,
              Unpickled& out);

/// Pickle (protocol 2) writing, for save_torch_state_dict.
class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 2
  void global(const std::string& module, const std::string& name);
  void string(std::string_view utf8);  // throws vt::Error on invalid UTF-8 (torch could not read it)
  void integer(int64_t v);
  void boolean(bool v);
  void empty_tuple() { out_ += ')'; }
  void mark() { out_ += '('; }
  void tuple_from_mark() { out_ += 't'; }
  void reduce() { out_ += 'R'; }
  void persistent_id() { out_ += 'Q'; }
  void setitems_from_mark() { out_ += 'u'; }
  std::string finish();  // writes STOP, returns the pickle

 private:
  std::string out_;
};

}  // namespace vt::io
