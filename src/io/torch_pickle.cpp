// The restricted unpickler: a pickle virtual machine with a stack, marks and a memo, that understands the
// opcodes of protocols 2-5 which torch.save's pickles (and the values in training checkpoints) use. Calls are
// evaluated here, only for the allow-listed callables, as plain values; nothing is imported or executed.
#include "io/torch_pickle.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/error.h"

namespace vt::io {

size_t torch_dtype_size(TorchDType t) {
  switch (t) {
    case TorchDType::f64:
    case TorchDType::i64: return 8;
    case TorchDType::f32:
    case TorchDType::i32: return 4;
    case TorchDType::f16:
    case TorchDType::bf16:
    case TorchDType::i16: return 2;
    case TorchDType::i8:
    case TorchDType::u8:
    case TorchDType::boolean: return 1;
  }
  return 1;
}

const char* torch_dtype_name(TorchDType t) {
  switch (t) {
    case TorchDType::f64: return "float64";
    case TorchDType::f32: return "float32";
    case TorchDType::f16: return "float16";
    case TorchDType::bf16: return "bfloat16";
    case TorchDType::i64: return "int64";
    case TorchDType::i32: return "int32";
    case TorchDType::i16: return "int16";
    case TorchDType::i8: return "int8";
    case TorchDType::u8: return "uint8";
    case TorchDType::boolean: return "bool";
  }
  return "?";
}

std::string PyValue::describe() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "a bool";
    case Kind::integer:
    case Kind::big_integer: return "an int";
    case Kind::floating: return "a float";
    case Kind::string: return "a string";
    case Kind::bytes: return "bytes";
    case Kind::list: return "a list";
    case Kind::tuple: return "a tuple";
    case Kind::dict: return "a dict";
    case Kind::set: return "a set";
    case Kind::global: return "the global " + global_name();
    case Kind::object: return "a " + global_name() + " object";
    case Kind::storage: return "a storage";
    case Kind::tensor: return "a tensor";
  }
  return "?";
}

namespace {

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
    if (n == 9 || n > s.size() - i - 1) return false;
    for (size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n + 1;
  }
  return true;
}

// Modules whose globals can run code or reach the system: refused wherever they appear, even unused.
bool dangerous_module(const std::string& m) {
  // clang-format off
  static const char* const kModules[] = {
      "os", "posix", "nt", "subprocess", "sys", "builtins", "__builtin__", "shutil", "socket", "importlib",
      "runpy", "pickle", "_pickle", "marshal", "code", "codeop", "pty", "ctypes", "multiprocessing", "signal",
      "types", "functools", "operator", "io", "_io", "webbrowser", "pdb", "timeit", "platform", "asyncio",
      "threading", "_thread", "commands", "popen2", "tempfile", "pathlib", "glob", "urllib", "http", "requests",
      "inspect", "gc", "weakref", "dill", "cloudpickle", "joblib", "torch.hub", "torch.jit", "numpy.lib", "zipimport",
      "site", "ssl", "ftplib", "smtplib", "telnetlib", "xmlrpc", "sqlite3", "select", "selectors", "mmap", "resource"};
  // clang-format on
  for (const char* d : kModules) {
    const size_t n = std::strlen(d);
    if (m.size() >= n && m.compare(0, n, d) == 0 && (m.size() == n || m[n] == '.')) return true;
  }
  return false;
}

}  // namespace

std::optional<TorchDType> torch_storage_dtype(const std::string& module, const std::string& name) {
  if (module != "torch") return std::nullopt;
  static const std::pair<const char*, TorchDType> kStorages[] = {
      {"DoubleStorage", TorchDType::f64},    {"FloatStorage", TorchDType::f32}, {"HalfStorage", TorchDType::f16},
      {"BFloat16Storage", TorchDType::bf16}, {"LongStorage", TorchDType::i64},  {"IntStorage", TorchDType::i32},
      {"ShortStorage", TorchDType::i16},     {"CharStorage", TorchDType::i8},   {"ByteStorage", TorchDType::u8},
      {"BoolStorage", TorchDType::boolean}};
  for (const auto& [n, t] : kStorages)
    if (name == n) return t;
  return std::nullopt;
}

namespace {

// The globals of torch and builtins that a checkpoint may name (the rest of those modules is refused).
bool allowed_global(const std::string& module, const std::string& name) {
  if (torch_storage_dtype(module, name)) return true;
  if (module == "torch._utils")
    return name == "_rebuild_tensor_v2" || name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state";
  if (module == "torch") {
    // clang-format off
    static const char* const kNames[] = {"Size", "device", "float64", "float32", "float16", "bfloat16", "int64",
                                         "int32", "int16", "int8", "uint8", "bool", "double", "float", "half",
                                         "long", "int", "short", "complex64", "complex128", "contiguous_format",
                                         "channels_last", "preserve_format", "strided"};
    // clang-format on
    for (const char* n : kNames)
      if (name == n) return true;
    return false;
  }
  if (module == "builtins" || module == "__builtin__") return name == "set" || name == "frozenset";
  return !dangerous_module(module);
}

class Machine {
 public:
  Machine(std::string_view bytes, size_t offset, const std::string& where, const PersistentLoad& load, Unpickled& out)
      : b_(bytes), pos_(offset), where_(where), load_(load), out_(out) {}

  void run() {
    VT_CHECK(pos_ < b_.size(), "[torch] ", where_, ": no pickle at byte ", pos_, " (truncated?)");
    for (;;) {
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') {
        VT_CHECK(stack_.size() == 1 && marks_.empty(), "[torch] ", where_, ": pickle ends (STOP at byte ", op_at_,
                 ") with ", stack_.size(), " values and ", marks_.size(), " marks on its stack, not one value");
        out_.root = stack_.back();
        out_.end = pos_;
        return;
      }
      step(op);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    VT_FAIL("[torch] ", where_, ": ", what, " (pickle opcode at byte ", op_at_, ")");
  }

  std::string_view take(uint64_t n) {
    if (n > b_.size() - pos_)
      fail("the pickle ends early: " + std::to_string(n) + " bytes needed, " + std::to_string(b_.size() - pos_) +
           " left (truncated?)");
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t take_le(int n) {
    const std::string_view s = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::string take_line() {
    const size_t nl = b_.find('\n', pos_);
    if (nl == std::string_view::npos || nl - pos_ > 256) fail("GLOBAL without a newline-terminated name");
    std::string s(b_.substr(pos_, nl - pos_));
    pos_ = nl + 1;
    return s;
  }

  PyValue* make(PyValue::Kind k) {
    out_.arena.emplace_back();
    out_.arena.back().kind = k;
    return &out_.arena.back();
  }
  void push(PyValue* v) { stack_.push_back(v); }
  PyValue* pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("pop from an empty pickle stack");
    PyValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PyValue* top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("the pickle stack is empty");
    return stack_.back();
  }
  std::vector<PyValue*> pop_to_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<PyValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }

  PyValue* make_string(std::string_view s, PyValue::Kind k) {
    if (k == PyValue::Kind::string && !valid_utf8(s)) fail("a string that is not valid UTF-8");
    PyValue* v = make(k);
    v->s = s;
    return v;
  }
  PyValue* make_int(std::string_view le_bytes) {
    if (le_bytes.size() > 8) {
      PyValue* v = make(PyValue::Kind::big_integer);
      v->s = le_bytes;
      return v;
    }
    uint64_t u = 0;
    for (size_t i = le_bytes.size(); i-- > 0;) u = (u << 8) | static_cast<unsigned char>(le_bytes[i]);
    const size_t bits = 8 * le_bytes.size();
    if (bits > 0 && bits < 64 && (u >> (bits - 1)) & 1) u |= ~uint64_t{0} << bits;  // sign-extend
    PyValue* v = make(PyValue::Kind::integer);
    v->i = static_cast<int64_t>(u);
    return v;
  }
  PyValue* make_int(int64_t i) {
    PyValue* v = make(PyValue::Kind::integer);
    v->i = i;
    return v;
  }
  PyValue* make_seq(PyValue::Kind k, std::vector<PyValue*> items) {
    PyValue* v = make(k);
    v->items = std::move(items);
    return v;
  }

  void set_item(PyValue* container, PyValue* key, PyValue* value) {
    if (container->kind != PyValue::Kind::dict && container->kind != PyValue::Kind::object)
      fail("SETITEM on " + container->describe() + ", not a dict");
    if (key->kind == PyValue::Kind::string) {
      auto [it, fresh] = container->string_keys.emplace(key->s, container->entries.size());
      if (!fresh) {
        container->entries[it->second].second = value;  // Python's dict: the last value wins, the place stays
        return;
      }
    }
    container->entries.emplace_back(key, value);
  }

  PyValue* global(std::string module, std::string name) {
    const std::string full = module + "." + name;
    if (!allowed_global(module, name))
      fail("the pickle names the global '" + full +
           "', which a state dict never needs; refusing to load it (vitrain never runs pickled code)");
    PyValue* v = make(PyValue::Kind::global);
    v->s = std::move(module);
    v->name = std::move(name);
    return v;
  }

  static bool is_int(const PyValue* v) { return v->kind == PyValue::Kind::integer; }
  std::vector<int64_t> int_tuple(const PyValue* v, const char* what) {
    if (v->kind != PyValue::Kind::tuple && v->kind != PyValue::Kind::list)
      fail(std::string("_rebuild_tensor_v2: the ") + what + " is " + v->describe() + ", not a tuple of ints");
    std::vector<int64_t> out;
    for (const PyValue* e : v->items) {
      if (!is_int(e)) fail(std::string("_rebuild_tensor_v2: the ") + what + " holds " + e->describe());
      out.push_back(e->i);
    }
    return out;
  }

  // The allow-listed calls, evaluated as values.
  PyValue* call(PyValue* callable, PyValue* args) {
    if (callable->kind != PyValue::Kind::global) fail("REDUCE calls " + callable->describe() + ", not a global");
    if (args->kind != PyValue::Kind::tuple) fail("REDUCE with " + args->describe() + " as arguments, not a tuple");
    const std::string& m = callable->s;
    const std::string& n = callable->name;
    const auto& a = args->items;
    if (m == "collections" && n == "OrderedDict") {
      PyValue* d = make(PyValue::Kind::dict);
      if (a.empty()) return d;
      if (a.size() == 1 && a[0]->kind == PyValue::Kind::list) {
        for (PyValue* pair : a[0]->items) {
          if ((pair->kind != PyValue::Kind::tuple && pair->kind != PyValue::Kind::list) || pair->items.size() != 2)
            fail("OrderedDict built from " + pair->describe() + ", not (key, value) pairs");
          set_item(d, pair->items[0], pair->items[1]);
        }
        return d;
      }
      fail("OrderedDict called with unexpected arguments");
    }
    if (m == "torch._utils" && n == "_rebuild_tensor_v2") {
      if (a.size() < 6 || a.size() > 7) fail("_rebuild_tensor_v2 with " + std::to_string(a.size()) + " arguments");
      if (a[0]->kind != PyValue::Kind::storage) fail("_rebuild_tensor_v2 of " + a[0]->describe() + ", not a storage");
      if (!is_int(a[1])) fail("_rebuild_tensor_v2: the storage offset is " + a[1]->describe());
      PyValue* t = make(PyValue::Kind::tensor);
      t->items = {a[0]};
      t->i = a[1]->i;
      t->shape = int_tuple(a[2], "size");
      t->strides = int_tuple(a[3], "stride");
      if (t->shape.size() != t->strides.size())
        fail("_rebuild_tensor_v2: size has " + std::to_string(t->shape.size()) + " dims, stride " +
             std::to_string(t->strides.size()));
      return t;
    }
    if (m == "torch._utils" && (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state")) {
      if (a.size() < 3 || a[0]->kind != PyValue::Kind::tensor) fail(n + " without a tensor as its first argument");
      return a[0];
    }
    if (m == "torch" && n == "Size") {
      if (a.size() != 1 || a[0]->kind != PyValue::Kind::tuple) fail("torch.Size called without one tuple");
      return a[0];
    }
    if (m == "_codecs" && n == "encode") {  // how protocol 2 pickles bytes: encode(str, 'latin1')
      if (a.size() != 2 || a[0]->kind != PyValue::Kind::string || a[1]->kind != PyValue::Kind::string ||
          (a[1]->s != "latin1" && a[1]->s != "latin-1"))
        fail("_codecs.encode called with arguments other than (str, 'latin1')");
      std::string raw;
      const std::string& s = a[0]->s;
      for (size_t i = 0; i < s.size(); ++i) {  // UTF-8 (validated) to code points < 256
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
          raw.push_back(static_cast<char>(c));
        } else if ((c >> 5) == 6 && c <= 0xc3) {
          raw.push_back(static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f)));
        } else {
          fail("_codecs.encode of a string with characters above U+00FF");
        }
      }
      return make_string(raw, PyValue::Kind::bytes);
    }
    if ((m == "builtins" || m == "__builtin__") && (n == "set" || n == "frozenset")) {
      if (a.empty()) return make(PyValue::Kind::set);
      if (a.size() == 1 && (a[0]->kind == PyValue::Kind::list || a[0]->kind == PyValue::Kind::tuple))
        return make_seq(PyValue::Kind::set, a[0]->items);
      fail(n + " called with unexpected arguments");
    }
    if ((m == "torch" && n == "device") || (m == "copyreg" && n == "_reconstructor")) {
      PyValue* cls = callable;
      if (n == "_reconstructor") {
        if (a.empty() || a[0]->kind != PyValue::Kind::global) fail("copyreg._reconstructor without a class");
        cls = a[0];
      }
      PyValue* o = make(PyValue::Kind::object);
      o->s = cls->s;
      o->name = cls->name;
      return o;
    }
    fail("the pickle calls '" + callable->global_name() +
         "', which is not on the allow-list of what a state dict needs; refusing to load it (vitrain never runs "
         "pickled code)");
  }

  void step(unsigned char op) {
    using K = PyValue::Kind;
    switch (op) {
      case 0x80: {  // PROTO
        const auto v = static_cast<unsigned char>(take(1)[0]);
        if (v < 2 || v > 5) fail("pickle protocol " + std::to_string(v) + " (torch.save writes 2)");
        return;
      }
      case 0x95: take(8); return;  // FRAME: a length hint only
      case '(': marks_.push_back(stack_.size()); return;
      case '0': pop(); return;
      case '1': pop_to_mark(); return;
      case 'N': push(make(K::none)); return;
      case 0x88:
      case 0x89: {
        PyValue* v = make(K::boolean);
        v->i = op == 0x88;
        push(v);
        return;
      }
      case 'J': push(make_int(take(4))); return;
      case 'K': push(make_int(static_cast<int64_t>(take_le(1)))); return;
      case 'M': push(make_int(static_cast<int64_t>(take_le(2)))); return;
      case 0x8a: push(make_int(take(take_le(1)))); return;
      case 0x8b: {
        const uint64_t n = take_le(4);
        if (n & 0x80000000u) fail("LONG4 with a negative length");
        push(make_int(take(n)));
        return;
      }
      case 'G': {
        const std::string_view be = take(8);  // big-endian in the pickle
        uint64_t bits = 0;
        for (char c : be) bits = (bits << 8) | static_cast<unsigned char>(c);
        PyValue* v = make(K::floating);
        v->f = std::bit_cast<double>(bits);
        push(v);
        return;
      }
      case 'X': push(make_string(take(take_le(4)), K::string)); return;
      case 0x8c: push(make_string(take(take_le(1)), K::string)); return;
      case 0x8d: push(make_string(take(take_le(8)), K::string)); return;
      case 'U': push(make_string(take(take_le(1)), K::string)); return;
      case 'T': {
        const uint64_t n = take_le(4);
        if (n & 0x80000000u) fail("BINSTRING with a negative length");
        push(make_string(take(n), K::string));
        return;
      }
      case 'C': push(make_string(take(take_le(1)), K::bytes)); return;
      case 'B': push(make_string(take(take_le(4)), K::bytes)); return;
      case 0x8e: push(make_string(take(take_le(8)), K::bytes)); return;
      case ')': push(make(K::tuple)); return;
      case 't': push(make_seq(K::tuple, pop_to_mark())); return;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<PyValue*> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(make_seq(K::tuple, std::move(items)));
        return;
      }
      case ']': push(make(K::list)); return;
      case 'l': push(make_seq(K::list, pop_to_mark())); return;
      case 'a':
      case 'e': {
        std::vector<PyValue*> items = op == 'a' ? std::vector<PyValue*>{pop()} : pop_to_mark();
        PyValue* list = top();
        if (list->kind != K::list && list->kind != K::object) fail("APPEND to " + list->describe() + ", not a list");
        list->items.insert(list->items.end(), items.begin(), items.end());
        return;
      }
      case 0x8f: push(make(K::set)); return;
      case 0x90: {
        std::vector<PyValue*> items = pop_to_mark();
        PyValue* set = top();
        if (set->kind != K::set) fail("ADDITEMS to " + set->describe() + ", not a set");
        set->items.insert(set->items.end(), items.begin(), items.end());
        return;
      }
      case 0x91: push(make_seq(K::set, pop_to_mark())); return;
      case '}': push(make(K::dict)); return;
      case 'd':
      case 's':
      case 'u': {
        std::vector<PyValue*> items;
        if (op == 's') {
          PyValue* v = pop();
          items = {pop(), v};
        } else {
          items = pop_to_mark();
        }
        if (items.size() % 2) fail("SETITEMS with an odd number of values");
        PyValue* dict = op == 'd' ? make(K::dict) : top();
        for (size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1]);
        if (op == 'd') push(dict);
        return;
      }
      case 'q': memo_[take_le(1)] = top(); return;
      case 'r': memo_[take_le(4)] = top(); return;
      case 0x94: memo_[memo_.size()] = top(); return;
      case 'h':
      case 'j': {
        const uint64_t k = take_le(op == 'h' ? 1 : 4);
        const auto it = memo_.find(k);
        if (it == memo_.end()) fail("memo entry " + std::to_string(k) + " read before it was written");
        push(it->second);
        return;
      }
      case 'c': {
        std::string module = take_line();
        std::string name = take_line();
        push(global(std::move(module), std::move(name)));
        return;
      }
      case 0x93: {
        PyValue* name = pop();
        PyValue* module = pop();
        if (name->kind != K::string || module->kind != K::string) fail("STACK_GLOBAL without two strings");
        push(global(module->s, name->s));
        return;
      }
      case 'R': {
        PyValue* args = pop();
        push(call(pop(), args));
        return;
      }
      case 0x81:
      case 0x92: {              // NEWOBJ, NEWOBJ_EX: cls.__new__(cls, ...) makes an opaque object, runs nothing
        if (op == 0x92) pop();  // kwargs
        pop();                  // args
        PyValue* cls = pop();
        if (cls->kind != K::global) fail("NEWOBJ of " + cls->describe() + ", not a class");
        if (cls->s == "collections" && cls->name == "OrderedDict") {
          push(make(K::dict));
          return;
        }
        PyValue* o = make(K::object);
        o->s = cls->s;
        o->name = cls->name;
        push(o);
        return;
      }
      case 'b': {  // BUILD: an object's state is kept as a value; a dict's attributes (_metadata) are dropped
        PyValue* state = pop();
        PyValue* target = top();
        if (target->kind == K::object) {
          target->items.push_back(state);
        } else if (target->kind != K::dict && target->kind != K::tensor) {
          fail("BUILD on " + target->describe());
        }
        return;
      }
      case 'Q': {
        PyValue* pid = pop();
        if (!load_) fail("a persistent id where none is expected");
        push(load_(*pid, out_));
        return;
      }
      default: break;
    }
    static const std::pair<unsigned char, const char*> kKnown[] = {{'i', "INST"},
                                                                   {'o', "OBJ"},
                                                                   {'P', "PERSID"},
                                                                   {'g', "GET"},
                                                                   {'p', "PUT"},
                                                                   {'I', "INT"},
                                                                   {'L', "LONG"},
                                                                   {'F', "FLOAT"},
                                                                   {'S', "STRING"},
                                                                   {'V', "UNICODE"},
                                                                   {'2', "DUP"},
                                                                   {0x82, "EXT1"},
                                                                   {0x83, "EXT2"},
                                                                   {0x84, "EXT4"},
                                                                   {0x96, "BYTEARRAY8"},
                                                                   {0x97, "NEXT_BUFFER"},
                                                                   {0x98, "READONLY_BUFFER"}};
    std::string name = "unknown";
    for (const auto& [c, n] : kKnown)
      if (c == op) name = n;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail(std::string("pickle opcode ") + hex + " (" + name +
         ") is not supported: torch.save writes pickle protocol 2; re-save the checkpoint with torch.save");
  }

  std::string_view b_;
  size_t pos_;
  size_t op_at_ = 0;
  const std::string& where_;
  const PersistentLoad& load_;
  Unpickled& out_;
  std::vector<PyValue*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyValue*> memo_;
};

}  // namespace

void unpickle(std::string_view bytes, size_t offset, const std::string& where, const PersistentLoad& persistent_load,
              Unpickled& out) {
  Machine(bytes, offset, where, persistent_load, out).run();
}

// ---- writing ----

PickleWriter::PickleWriter() { out_ = "\x80\x02"; }

void PickleWriter::global(const std::string& module, const std::string& name) {
  out_ += 'c';
  out_ += module;
  out_ += '\n';
  out_ += name;
  out_ += '\n';
}

void PickleWriter::string(std::string_view utf8) {
  VT_CHECK(valid_utf8(utf8), "[torch] the name '", std::string(utf8), "' is not valid UTF-8");
  VT_CHECK(utf8.size() < 0x80000000u, "[torch] a ", utf8.size(), "-byte string is too long to pickle");
  out_ += 'X';
  for (int i = 0; i < 4; ++i) out_ += static_cast<char>((utf8.size() >> (8 * i)) & 0xff);
  out_ += utf8;
}

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_ += 'K';
    out_ += static_cast<char>(v);
  } else if (v >= 0 && v < 65536) {
    out_ += 'M';
    out_ += static_cast<char>(v & 0xff);
    out_ += static_cast<char>(v >> 8);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += 'J';
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  } else {  // LONG1: the shortest little-endian two's complement
    std::string le;
    for (int i = 0; i < 8; ++i) le += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    while (le.size() > 1) {
      const auto last = static_cast<unsigned char>(le.back()), prev = static_cast<unsigned char>(le[le.size() - 2]);
      if ((last == 0 && !(prev & 0x80)) || (last == 0xff && (prev & 0x80))) le.pop_back();
      else break;
    }
    out_ += '\x8a';
    out_ += static_cast<char>(le.size());
    out_ += le;
  }
}

void PickleWriter::boolean(bool v) { out_ += v ? '\x88' : '\x89'; }

std::string PickleWriter::finish() {
  out_ += '.';
  return std::move(out_);
}

}  // namespace vt::io
