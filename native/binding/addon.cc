// The N-API surface: argument checks and conversions around native/core calls, and the
// handle class JS holds. No policy lives here, and no function throws (C++ exceptions are
// off): each returns its value or a failure record.
#include <napi.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../core/acl_bytes.h"
#include "../core/names.h"
#include "../core/platform.h"

namespace gjc::binding {
namespace {

// The kinds of handle, as bits so an argument can accept several.
enum HandleKind : unsigned { kDirectory = 1, kFile = 2, kLock = 4 };

// A JS object owning one open descriptor. JS never sees the number itself, so it cannot
// close it twice or pass a foreign one.
class Handle : public Napi::ObjectWrap<Handle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    Napi::Function ctor = DefineClass(env, "NativeHandle", {InstanceMethod<&Handle::IsOpen>("isOpen")});
    env.SetInstanceData<Napi::FunctionReference>(new Napi::FunctionReference(Napi::Persistent(ctor)));
    return ctor;
  }
  explicit Handle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Handle>(info) {}

  static Napi::Value Wrap(Napi::Env env, OwnedHandle owned, HandleKind kind) {
    Napi::Object object = env.GetInstanceData<Napi::FunctionReference>()->New({});
    if (object.IsEmpty()) return env.Undefined();
    Handle* handle = Unwrap(object);
    handle->owned_ = std::move(owned);
    handle->kind_ = kind;
    return object;
  }

  // Any Handle in `value` (open or closed), else nullptr.
  static Handle* Any(const Napi::Value& value) {
    const auto* constructor = value.Env().GetInstanceData<Napi::FunctionReference>();
    bool ours = false;
    if (!value.IsObject() || napi_instanceof(value.Env(), value, constructor->Value(), &ours) != napi_ok || !ours) {
      return nullptr;
    }
    return Unwrap(value.As<Napi::Object>());
  }

  NativeHandle native() const { return owned_.get(); }
  // False once closed, and as soon as a close was asked for while work was in flight.
  bool open() const { return owned_.valid() && !close_pending_; }
  HandleKind kind() const { return kind_; }

  // Work on a thread-pool thread uses the descriptor: while pinned, Close() only marks the
  // handle closed, and the descriptor is released when the last work unpins it, so its
  // number can never be reused under running work.
  void Pin() { ++pins_; }
  void Unpin() {
    if (--pins_ == 0 && close_pending_) Release();
  }
  void Close() {
    if (pins_ > 0) {
      close_pending_ = true;
    } else {
      Release();
    }
  }

 private:
  Napi::Value IsOpen(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), open()); }
  void Release() {
    close_pending_ = false;
    // Closing the last descriptor releases a lock anyway; unlocking first also empties the
    // record. A failure here changes nothing the close does not also do.
    if (kind_ == kLock && owned_.valid()) (void)unlock(owned_.get());
    owned_.reset();
  }

  OwnedHandle owned_;
  HandleKind kind_ = kDirectory;
  int pins_ = 0;
  bool close_pending_ = false;
};

// {failed: true, code, errno, syscall, attribute?}
Napi::Value FailureValue(Napi::Env env, const Failure& failure) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("failed", true);
  out.Set("code", code_name(failure.code));
  out.Set("errno", failure.sys_errno);
  out.Set("syscall", failure.syscall);
  if (failure.attribute != Attribute::none) out.Set("attribute", attribute_name(failure.attribute));
  return out;
}

Napi::Value Invalid(Napi::Env env) { return FailureValue(env, fail(Code::invalid_argument)); }

Napi::Value StatValue(Napi::Env env, const StatInfo& info) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", entry_type_name(info.type));
  out.Set("dev", std::to_string(info.dev));
  out.Set("ino", std::to_string(info.ino));
  out.Set("size", static_cast<double>(info.size));
  out.Set("nlink", static_cast<double>(info.nlink));
  out.Set("mode", info.mode);
  out.Set("uid", static_cast<double>(info.uid));
  out.Set("mtimeMs", static_cast<double>(info.mtime_ns) / 1e6);
  out.Set("ctimeMs", static_cast<double>(info.ctime_ns) / 1e6);
  // Exact times as decimal strings, as dev and ino: a double cannot hold nanoseconds.
  out.Set("atimeNs", std::to_string(info.atime_ns));
  out.Set("mtimeNs", std::to_string(info.mtime_ns));
  out.Set("ctimeNs", std::to_string(info.ctime_ns));
  return out;
}

// The open handle info[index] of one of `kinds`, or nullptr and `failure` (invalid_argument, closed).
Handle* HandleArg(const Napi::CallbackInfo& info, std::size_t index, unsigned kinds, Napi::Value& failure) {
  Handle* any = Handle::Any(info[index]);
  if (any == nullptr || (any->kind() & kinds) == 0) {
    failure = Invalid(info.Env());
    return nullptr;
  }
  if (!any->open()) {
    failure = FailureValue(info.Env(), fail(Code::closed));
    return nullptr;
  }
  return any;
}

// Declares `var` from HandleArg, or returns its failure.
#define HANDLE_ARG(var, index, kinds)                         \
  Napi::Value var##_failure;                                  \
  Handle* var = HandleArg(info, index, kinds, var##_failure); \
  if (var == nullptr) return var##_failure

// A non-negative integer argument that a double represents exactly.
bool IndexArg(const Napi::Value& value, std::uint64_t& out) {
  if (!value.IsNumber()) return false;
  const double d = value.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d) return false;
  out = static_cast<std::uint64_t>(d);
  return true;
}

// A JS string as UTF-8; false when it is not a string or holds a lone surrogate, which has no
// UTF-8 form (converting would silently put U+FFFD in its place and name a different file).
// NUL is passed on as-is: the core's validation rejects it.
bool StringArg(const Napi::Value& value, std::string& out) {
  if (!value.IsString()) return false;
  const std::u16string units = value.As<Napi::String>().Utf16Value();
  for (std::size_t i = 0; i < units.size(); ++i) {
    const char16_t u = units[i];
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 1 >= units.size() || units[i + 1] < 0xDC00 || units[i + 1] > 0xDFFF) return false;
      ++i;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      return false;
    }
  }
  out = value.As<Napi::String>().Utf8Value();
  return true;
}

bool IsUint8Array(const Napi::Value& value) {
  return value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
}

// A Uint8Array/Buffer argument viewed in place, or a string's UTF-8 copy held in `storage`.
struct ByteView {
  std::string storage;
  const unsigned char* data = nullptr;
  std::size_t length = 0;
};

bool BytesArg(const Napi::Value& value, ByteView& out) {
  if (IsUint8Array(value)) {
    auto bytes = value.As<Napi::Uint8Array>();
    out.data = bytes.Data();
    out.length = bytes.ByteLength();
    return true;
  }
  if (!value.IsString()) return false;
  out.storage = value.As<Napi::String>().Utf8Value();
  out.data = reinterpret_cast<const unsigned char*>(out.storage.data());
  out.length = out.storage.size();
  return true;
}

template <class T, class Convert>
Napi::Value Reply(Napi::Env env, Result<T>&& result, Convert convert) {
  if (!result.ok()) return FailureValue(env, result.failure());
  return convert(std::move(result).value());
}

Napi::Value ReplyStatus(Napi::Env env, const Status& status) {
  return status.ok() ? env.Undefined() : FailureValue(env, status.failure());
}

Napi::Value ReplyHandle(Napi::Env env, Result<OwnedHandle>&& result, HandleKind kind) {
  return Reply(env, std::move(result), [&](OwnedHandle h) { return Handle::Wrap(env, std::move(h), kind); });
}

Napi::Value ReplyCount(Napi::Env env, Result<std::size_t>&& result) {
  return Reply(env, std::move(result), [&](std::size_t n) { return Napi::Number::New(env, static_cast<double>(n)); });
}

// A blocking core call (fsync-bound) on the libuv thread pool. The promise always resolves,
// with undefined or a failure record, as the synchronous calls return; no JS runs off the
// main thread. The handle the work uses stays alive and pinned until it is done.
class StatusWork : public Napi::AsyncWorker {
 public:
  static Napi::Value Start(const Napi::CallbackInfo& info, Handle* pinned, std::function<Status()> work) {
    auto* job = new StatusWork(info.Env(), pinned, info[0].As<Napi::Object>(), std::move(work));
    Napi::Promise promise = job->deferred_.Promise();
    job->Queue();
    return promise;
  }

 protected:
  void Execute() override { result_ = work_(); }
  void OnOK() override {
    pinned_->Unpin();
    deferred_.Resolve(ReplyStatus(Env(), result_));
  }
  void OnError(const Napi::Error& error) override {
    pinned_->Unpin();
    deferred_.Reject(error.Value());
  }

 private:
  StatusWork(Napi::Env env, Handle* pinned, Napi::Object handle, std::function<Status()> work)
      : Napi::AsyncWorker(env, "gjc-secure-fs"),
        deferred_(Napi::Promise::Deferred::New(env)),
        pinned_(pinned),
        handle_(Napi::Persistent(handle)),
        work_(std::move(work)) {
    pinned_->Pin();
  }

  Napi::Promise::Deferred deferred_;
  Handle* pinned_;
  Napi::ObjectReference handle_;
  std::function<Status()> work_;
  Status result_ = fail(Code::io_error);  // overwritten by Execute before OnOK reads it
};

// An options argument: an object, or undefined for all defaults (read without allocating,
// as verify and sync are hot). Named booleans are read with JS truthiness.
bool OptionsArg(const Napi::Value& value) { return value.IsUndefined() || value.IsObject(); }

Napi::Value Option(const Napi::Value& options, const char* key) {
  return options.IsObject() ? options.As<Napi::Object>().Get(key) : options.Env().Undefined();
}

bool Flag(const Napi::Value& options, const char* key) { return Option(options, key).ToBoolean(); }

// { create, repair, owned, deferSync }: at most one of the first three (none: verify), and
// deferSync only with create.
bool DirOptionsArg(const Napi::Value& options, DirOpenOptions& out) {
  if (!OptionsArg(options)) return false;
  const bool create = Flag(options, "create"), repair = Flag(options, "repair"), owned = Flag(options, "owned");
  out.defer_sync = Flag(options, "deferSync");
  if (create + repair + owned > 1 || (out.defer_sync && !create)) return false;
  out.policy = create ? DirPolicy::create : repair ? DirPolicy::repair : owned ? DirPolicy::owned : DirPolicy::verify;
  return true;
}

// One entry name, or an array of them (a relative path walked one verified directory at a
// time, in one call); an empty array only with `allow_empty`. The core validates each name.
bool NamesArg(const Napi::Value& value, std::vector<std::string>& out, bool allow_empty = false) {
  std::string name;
  if (value.IsString()) {
    if (!StringArg(value, name)) return false;
    out.push_back(std::move(name));
    return true;
  }
  if (!value.IsArray()) return false;
  auto array = value.As<Napi::Array>();
  if (array.Length() == 0) return allow_empty;
  for (uint32_t i = 0; i < array.Length(); ++i) {
    if (!StringArg(array.Get(i), name)) return false;
    out.push_back(std::move(name));
  }
  return true;
}

// Opens each name below the one before, from `start`, with `open(parent, name, last)`, and
// wraps the last as a handle of `kind`.
template <class Open>
Napi::Value OpenPath(Napi::Env env, NativeHandle start, const std::vector<std::string>& names, HandleKind kind,
                     Open open) {
  OwnedHandle holder;
  NativeHandle parent = start;
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    auto next = open(parent, names[i], false);
    if (!next.ok()) return FailureValue(env, next.failure());
    holder = std::move(next).value();
    parent = holder.get();
  }
  return ReplyHandle(env, open(parent, names.back(), true), kind);
}

Napi::Value OpenRoot(const Napi::CallbackInfo& info) {
  std::string path;
  DirOpenOptions options;
  if (!StringArg(info[0], path) || !DirOptionsArg(info[1], options)) return Invalid(info.Env());
  return ReplyHandle(info.Env(), open_root(path, options), kDirectory);
}

// openDir(dir, names, options): the policy applies to the last name; the directories on the
// way are verified (or, with create, made, deferSync applying to them too).
Napi::Value OpenDir(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::vector<std::string> names;
  DirOpenOptions options;
  if (!NamesArg(info[1], names) || !DirOptionsArg(info[2], options)) return Invalid(info.Env());
  DirOpenOptions parents;
  if (options.policy == DirPolicy::create) parents = options;
  return OpenPath(info.Env(), dir->native(), names, kDirectory, [&](NativeHandle p, const std::string& n, bool last) {
    return open_dir(p, n, last ? options : parents);
  });
}

// openFile(dir, names, options): the directories on the way are verified, never created.
Napi::Value OpenFile(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::vector<std::string> names;
  const Napi::Value given = info[2];
  if (!NamesArg(info[1], names) || !OptionsArg(given)) return Invalid(info.Env());
  FileOpenOptions options;
  options.write = Flag(given, "write");
  options.append = Flag(given, "append");
  options.repair = Flag(given, "repair");
  const Napi::Value create = Option(given, "create");
  std::string mode;
  if (!create.IsUndefined() && !create.IsNull()) {
    if (!StringArg(create, mode) || options.repair) return Invalid(info.Env());
    if (mode == "exclusive") options.create = CreateMode::exclusive;
    else if (mode == "if-missing") options.create = CreateMode::if_missing;
    else return Invalid(info.Env());
  }
  return OpenPath(info.Env(), dir->native(), names, kFile, [&](NativeHandle p, const std::string& n, bool last) {
    return last ? open_file(p, n, options) : open_dir(p, n, {});
  });
}

// openSource(start, names, { directory? }): below a directory handle, or below the absolute
// path `start` (opened by open_source_root; an empty name list opens the path itself).
Napi::Value OpenSource(const Napi::CallbackInfo& info) {
  std::vector<std::string> names;
  if (!OptionsArg(info[2]) || !NamesArg(info[1], names, true)) return Invalid(info.Env());
  const bool directory = Flag(info[2], "directory");
  OwnedHandle root;
  NativeHandle start = invalid_native_handle();
  if (info[0].IsString()) {
    std::string path;
    if (!StringArg(info[0], path)) return Invalid(info.Env());
    auto opened = open_source_root(path);
    if (!opened.ok() || names.empty()) return ReplyHandle(info.Env(), std::move(opened), kDirectory);
    root = std::move(opened).value();
    start = root.get();
  } else {
    HANDLE_ARG(dir, 0, kDirectory);
    if (names.empty()) return Invalid(info.Env());
    start = dir->native();
  }
  return OpenPath(
      info.Env(), start, names, directory ? kDirectory : kFile,
      [&](NativeHandle p, const std::string& n, bool last) { return open_source(p, n, directory || !last); });
}

// removeTree(dir, name, { maxDepth, maxEntries }): always on the thread pool.
Napi::Value RemoveTree(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  std::uint64_t max_depth = 0, max_entries = 0;
  if (!StringArg(info[1], name) || !info[2].IsObject() || !IndexArg(Option(info[2], "maxDepth"), max_depth) ||
      !IndexArg(Option(info[2], "maxEntries"), max_entries) || max_depth > 0xFFFFFFFFu) {
    return Invalid(info.Env());
  }
  return StatusWork::Start(info, dir, [native = dir->native(), name = std::move(name), max_depth, max_entries] {
    return remove_tree(native, name, static_cast<std::uint32_t>(max_depth), static_cast<std::size_t>(max_entries));
  });
}

// setTimes(file, atimeNs, mtimeNs): the times are bigints.
Napi::Value SetTimes(const Napi::CallbackInfo& info) {
  HANDLE_ARG(file, 0, kFile);
  if (!info[1].IsBigInt() || !info[2].IsBigInt()) return Invalid(info.Env());
  bool exact_a = false, exact_m = false;
  const std::int64_t atime = info[1].As<Napi::BigInt>().Int64Value(&exact_a);
  const std::int64_t mtime = info[2].As<Napi::BigInt>().Int64Value(&exact_m);
  if (!exact_a || !exact_m) return Invalid(info.Env());
  return ReplyStatus(info.Env(), set_file_times(file->native(), atime, mtime));
}

// verify(handle, { repair? }): with repair, fixes the mode and ACLs of one we own first.
Napi::Value Verify(const Napi::CallbackInfo& info) {
  HANDLE_ARG(handle, 0, kDirectory | kFile);
  if (!OptionsArg(info[1])) return Invalid(info.Env());
  const bool dir = handle->kind() == kDirectory;
  auto result = Flag(info[1], "repair") ? (dir ? repair_directory(handle->native()) : repair_file(handle->native()))
                                        : (dir ? verify_directory(handle->native()) : verify_file(handle->native()));
  // access * 3 + default: the hot verify allocates nothing (TypeScript maps it to a frozen object).
  return Reply(info.Env(), std::move(result), [&](VerifyEvidence e) {
    return Napi::Number::New(info.Env(), static_cast<int>(e.access_acl) * 3 + static_cast<int>(e.default_acl));
  });
}

// list(dir, prefix?): with a prefix, only the names that start with it become JavaScript objects,
// so a search for a few names in a directory of thousands costs the directory read, not thousands
// of objects.
Napi::Value List(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  Napi::Env env = info.Env();
  std::string prefix;
  if (!info[1].IsUndefined() && !StringArg(info[1], prefix)) return Invalid(env);
  return Reply(env, list_directory(dir->native()), [&](std::vector<DirEntry> entries) {
    Napi::Array out = Napi::Array::New(env);
    uint32_t count = 0;
    for (const DirEntry& found : entries) {
      if (found.name.compare(0, prefix.size(), prefix) != 0) continue;
      Napi::Object entry = Napi::Object::New(env);
      entry.Set("name", found.name);
      entry.Set("type", entry_type_name(found.type));
      out.Set(count++, entry);
    }
    return out;
  });
}

Napi::Value StatEntry(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  if (!StringArg(info[1], name)) return Invalid(info.Env());
  return Reply(info.Env(), stat_entry(dir->native(), name), [&](StatInfo s) { return StatValue(info.Env(), s); });
}

Napi::Value StatHandle(const Napi::CallbackInfo& info) {
  HANDLE_ARG(handle, 0, kDirectory | kFile | kLock);
  return Reply(info.Env(), stat_handle(handle->native()), [&](StatInfo s) { return StatValue(info.Env(), s); });
}

// For the one consumer that must name a held directory to a library that only takes paths
// (SQLite, via /proc/self/fd/<n>). A Win32 HANDLE has no such path: invalid_argument there.
Napi::Value DescriptorNumber(const Napi::CallbackInfo& info) {
  HANDLE_ARG(handle, 0, kDirectory);
#ifdef _WIN32
  return Invalid(info.Env());
#else
  return Napi::Number::New(info.Env(), handle->native());
#endif
}

// read / write(file, buffer, offset, length, position), the range within the Uint8Array.
Napi::Value Positional(const Napi::CallbackInfo& info, bool writing) {
  HANDLE_ARG(file, 0, kFile);
  std::uint64_t offset = 0, length = 0, position = 0;
  if (!IsUint8Array(info[1]) || !IndexArg(info[2], offset) || !IndexArg(info[3], length) ||
      !IndexArg(info[4], position)) {
    return Invalid(info.Env());
  }
  auto bytes = info[1].As<Napi::Uint8Array>();
  if (offset > bytes.ByteLength() || length > bytes.ByteLength() - offset) return Invalid(info.Env());
  unsigned char* data = bytes.Data() + offset;
  const auto n = static_cast<std::size_t>(length);
  return ReplyCount(info.Env(),
                    writing ? write_at(file->native(), data, n, position) : read_at(file->native(), data, n, position));
}
Napi::Value Read(const Napi::CallbackInfo& info) { return Positional(info, false); }
Napi::Value Write(const Napi::CallbackInfo& info) { return Positional(info, true); }

Napi::Value Append(const Napi::CallbackInfo& info) {
  HANDLE_ARG(file, 0, kFile);
  ByteView bytes;
  if (!BytesArg(info[1], bytes)) return Invalid(info.Env());
  return ReplyCount(info.Env(), write_append(file->native(), bytes.data, bytes.length));
}

// sync(handle, { async? }): with async, on the thread pool, returning a promise.
Napi::Value Sync(const Napi::CallbackInfo& info) {
  HANDLE_ARG(handle, 0, kDirectory | kFile);
  if (!OptionsArg(info[1])) return Invalid(info.Env());
  if (!Flag(info[1], "async")) return ReplyStatus(info.Env(), sync_handle(handle->native()));
  return StatusWork::Start(info, handle, [native = handle->native()] { return sync_handle(native); });
}

Napi::Value Unlink(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  if (!StringArg(info[1], name)) return Invalid(info.Env());
  return ReplyStatus(info.Env(), unlink_file(dir->native(), name));
}

Napi::Value PublishNoReplace(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string from, to;
  if (!StringArg(info[1], from) || !StringArg(info[2], to)) return Invalid(info.Env());
  return ReplyStatus(info.Env(), publish_no_replace(dir->native(), from, to));
}

// writeFileAtomic(dir, name, data, { noReplace?, async? }): with async, on the thread pool,
// the bytes copied first since JS may change or free them meanwhile.
Napi::Value WriteFileAtomic(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  ByteView bytes;
  if (!StringArg(info[1], name) || !BytesArg(info[2], bytes) || !OptionsArg(info[3])) return Invalid(info.Env());
  const bool no_replace = Flag(info[3], "noReplace");
  if (!Flag(info[3], "async"))
    return ReplyStatus(info.Env(), write_file_atomic(dir->native(), name, bytes.data, bytes.length, no_replace));
  std::string data(reinterpret_cast<const char*>(bytes.data), bytes.length);
  return StatusWork::Start(info, dir,
                           [native = dir->native(), name = std::move(name), data = std::move(data), no_replace] {
                             return write_file_atomic(native, name, data.data(), data.size(), no_replace);
                           });
}

Napi::Value TryLock(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  ByteView record;
  if (!StringArg(info[1], name) || !BytesArg(info[2], record)) return Invalid(info.Env());
  return ReplyHandle(info.Env(), try_lock(dir->native(), name, record.data, record.length), kLock);
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr) return Invalid(info.Env());
  handle->Close();
  return info.Env().Undefined();
}

Napi::Value Identity(const Napi::CallbackInfo& info) {
  std::string path;
  if (!StringArg(info[0], path)) return Invalid(info.Env());
  return Reply(info.Env(), directory_identity(path), [&](DirectoryIdentity id) {
    Napi::Object out = Napi::Object::New(info.Env());
    out.Set("platform", id.platform);
    out.Set("canonicalPath", id.canonical_path);
    out.Set("dev", id.dev);
    out.Set("ino", id.ino);
    return out;
  });
}

// Pure checks exposed so the rules of every platform are testable on any platform.
Napi::Value IsValidName(const Napi::CallbackInfo& info) {
  std::string name, rules;
  if (!StringArg(info[0], name) || !StringArg(info[1], rules)) return Invalid(info.Env());
  return Napi::Boolean::New(info.Env(), rules == "windows" ? is_valid_name_windows(name) : is_valid_name_posix(name));
}

Napi::Value ClassifyAclBytes(const Napi::CallbackInfo& info) {
  if (!IsUint8Array(info[0])) return Invalid(info.Env());
  auto bytes = info[0].As<Napi::Uint8Array>();
  const AclContent content = parse_posix_acl(bytes.Data(), bytes.ByteLength());
  return Napi::String::New(info.Env(), content == AclContent::minimal    ? "minimal"
                                       : content == AclContent::extended ? "extended"
                                                                         : "malformed");
}

#ifdef __linux__
// readAcl(dir, name, directory): { access, default } as Buffers (empty: none stored).
Napi::Value ReadAcl(const Napi::CallbackInfo& info) {
  HANDLE_ARG(dir, 0, kDirectory);
  std::string name;
  if (!StringArg(info[1], name) || !info[2].IsBoolean()) return Invalid(info.Env());
  return Reply(
      info.Env(), read_acl_values(dir->native(), name, info[2].As<Napi::Boolean>().Value()), [&](AclValues values) {
        Napi::Object out = Napi::Object::New(info.Env());
        out.Set("access", Napi::Buffer<unsigned char>::Copy(info.Env(), values.access.data(), values.access.size()));
        out.Set("default", Napi::Buffer<unsigned char>::Copy(info.Env(), values.dflt.data(), values.dflt.size()));
        return out;
      });
}
#endif

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeHandle", Handle::Define(env));
  const std::pair<const char*, Napi::Function::Callback> functions[] = {
      {"openRoot", OpenRoot},
      {"openDir", OpenDir},
      {"openFile", OpenFile},
      {"openSource", OpenSource},
      {"verify", Verify},
      {"list", List},
      {"statEntry", StatEntry},
      {"statHandle", StatHandle},
      {"descriptorNumber", DescriptorNumber},
      {"read", Read},
      {"write", Write},
      {"append", Append},
      {"sync", Sync},
      {"setTimes", SetTimes},
      {"unlink", Unlink},
      {"publishNoReplace", PublishNoReplace},
      {"writeFileAtomic", WriteFileAtomic},
      {"removeTree", RemoveTree},
      {"tryLock", TryLock},
      {"close", Close},
      {"directoryIdentity", Identity},
      {"isValidName", IsValidName},
      {"classifyAclBytes", ClassifyAclBytes},
  };
  for (const auto& [name, callback] : functions) {
    exports.Set(name, Napi::Function::New(env, callback, name));
  }
#ifdef __linux__
  exports.Set("readAcl", Napi::Function::New(env, ReadAcl, "readAcl"));
#endif
  return exports;
}

}  // namespace
}  // namespace gjc::binding

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return gjc::binding::Init(env, exports); }

NODE_API_MODULE(gjc_session_store, InitAddon)
