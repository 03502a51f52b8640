// The N-API surface: argument checks and conversions around native/core calls. Every
// function returns its value or a failure record and never throws; C++ exceptions are off.
#include <napi.h>

#include <string>
#include <vector>

#include "../core/acl_bytes.h"
#include "../core/names.h"
#include "../core/platform.h"
#include "async_work.h"
#include "values.h"

namespace gjc::binding {
namespace {

Napi::Value Invalid(Napi::Env env) { return FailureValue(env, Code::invalid_argument); }
Napi::Value Closed(Napi::Env env) { return FailureValue(env, Code::closed); }

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

// The options argument of openRoot / openDir / openFile: an object (or undefined for all
// defaults) whose named booleans are read with JS truthiness.
bool OptionsArg(const Napi::Value& value, Napi::Object& out) {
  if (value.IsUndefined()) {
    out = Napi::Object::New(value.Env());
    return true;
  }
  if (!value.IsObject()) return false;
  out = value.As<Napi::Object>();
  return true;
}

bool Flag(const Napi::Object& options, const char* key) { return options.Get(key).ToBoolean(); }

// { create, repair, owned, deferSync } as DirOpenOptions: at most one of the first three
// (none: verify), and deferSync only with create.
bool DirOptionsArg(const Napi::Value& value, DirOpenOptions& out) {
  Napi::Object options;
  if (!OptionsArg(value, options)) return false;
  const bool create = Flag(options, "create"), repair = Flag(options, "repair"), owned = Flag(options, "owned");
  out.defer_sync = Flag(options, "deferSync");
  if (create + repair + owned > 1 || (out.defer_sync && !create)) return false;
  out.policy = create ? DirPolicy::create : repair ? DirPolicy::repair : owned ? DirPolicy::owned : DirPolicy::verify;
  return true;
}

// openRoot(path, { create?, repair?, owned? }).
Napi::Value OpenRoot(const Napi::CallbackInfo& info) {
  std::string path;
  DirOpenOptions options;
  if (!StringArg(info[0], path) || !DirOptionsArg(info[1], options)) return Invalid(info.Env());
  return ReplyHandle(info.Env(), open_root(path, options), HandleKind::directory);
}

// A name argument: one entry name, or an array of them (a relative path walked one
// verified directory at a time, in one call). Each name is validated by the core.
bool NamesArg(const Napi::Value& value, std::vector<std::string>& out) {
  out.clear();
  std::string name;
  if (value.IsString()) {
    if (!StringArg(value, name)) return false;
    out.push_back(std::move(name));
    return true;
  }
  if (!value.IsArray()) return false;
  auto array = value.As<Napi::Array>();
  if (array.Length() == 0) return false;
  for (uint32_t i = 0; i < array.Length(); ++i) {
    if (!StringArg(array.Get(i), name)) return false;
    out.push_back(std::move(name));
  }
  return true;
}

// Opens every name but the last as a verified directory below `start` (creating them with
// DirPolicy::create, the same `defer_sync` applying), leaving the innermost in `holder`.
// Returns the descriptor to open the last name in: `start` itself for a single name.
Result<NativeHandle> WalkParents(NativeHandle start, const std::vector<std::string>& names,
                                 const DirOpenOptions& last, OwnedHandle& holder) {
  DirOpenOptions parents;
  if (last.policy == DirPolicy::create) parents = last;
  NativeHandle parent = start;
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    auto next = open_dir(parent, names[i], parents);
    if (!next.ok()) return next.failure();
    holder = std::move(next).value();
    parent = holder.get();
  }
  return parent;
}

// openDir(dir, names, { create?, repair?, owned?, deferSync? }): the policy applies to the
// last name; the directories on the way are verified (or, with create, made).
Napi::Value OpenDir(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::vector<std::string> names;
  DirOpenOptions options;
  if (!NamesArg(info[1], names) || !DirOptionsArg(info[2], options)) return Invalid(info.Env());
  OwnedHandle holder;
  auto parent = WalkParents(dir->native(), names, options, holder);
  if (!parent.ok()) return FailureValue(info.Env(), parent.failure());
  return ReplyHandle(info.Env(), open_dir(parent.value(), names.back(), options), HandleKind::directory);
}

// openFile(dir, names, { write?, append?, create?: "exclusive" | "if-missing", repair? }):
// the directories on the way are verified, never created; repair never creates either.
Napi::Value OpenFile(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::vector<std::string> names;
  Napi::Object given;
  if (!NamesArg(info[1], names) || !OptionsArg(info[2], given)) return Invalid(info.Env());
  FileOpenOptions options;
  options.write = Flag(given, "write");
  options.append = Flag(given, "append");
  options.repair = Flag(given, "repair");
  const Napi::Value create = given.Get("create");
  std::string mode;
  if (!create.IsUndefined() && !create.IsNull()) {
    if (!StringArg(create, mode) || options.repair) return Invalid(info.Env());
    if (mode == "exclusive") options.create = CreateMode::exclusive;
    else if (mode == "if-missing") options.create = CreateMode::if_missing;
    else return Invalid(info.Env());
  }
  OwnedHandle holder;
  auto parent = WalkParents(dir->native(), names, DirOpenOptions{}, holder);
  if (!parent.ok()) return FailureValue(info.Env(), parent.failure());
  return ReplyHandle(info.Env(), open_file(parent.value(), names.back(), options), HandleKind::file);
}

// openSource(start, names, { directory? }): a legacy source (platform.h open_source).
// `start` is a directory handle, or an absolute path opened by open_source_root; every name
// but the last is opened as a source directory below it, the last as a directory or (by
// default) a file. An empty name list (only with a path) opens the path itself.
Napi::Value OpenSource(const Napi::CallbackInfo& info) {
  std::vector<std::string> names;
  Napi::Object options;
  if (!OptionsArg(info[2], options)) return Invalid(info.Env());
  const bool directory = Flag(options, "directory");
  if (!(info[1].IsArray() && info[1].As<Napi::Array>().Length() == 0) && !NamesArg(info[1], names)) {
    return Invalid(info.Env());
  }
  OwnedHandle holder;
  NativeHandle parent = invalid_native_handle();
  if (info[0].IsString()) {
    std::string path;
    if (!StringArg(info[0], path)) return Invalid(info.Env());
    auto root = open_source_root(path);
    if (!root.ok() || names.empty()) {
      return ReplyHandle(info.Env(), std::move(root), HandleKind::directory);
    }
    holder = std::move(root).value();
    parent = holder.get();
  } else {
    Napi::Value failure;
    Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
    if (dir == nullptr) return failure;
    if (names.empty()) return Invalid(info.Env());
    parent = dir->native();
  }
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    auto next = open_source(parent, names[i], true);
    if (!next.ok()) return FailureValue(info.Env(), next.failure());
    holder = std::move(next).value();
    parent = holder.get();
  }
  return ReplyHandle(info.Env(), open_source(parent, names.back(), directory),
                     directory ? HandleKind::directory : HandleKind::file);
}

// removeTreeAsync(dir, name, maxDepth, maxEntries): remove_tree on the thread pool.
Napi::Value RemoveTreeAsync(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::string name;
  std::uint64_t max_depth = 0, max_entries = 0;
  if (!StringArg(info[1], name) || !IndexArg(info[2], max_depth) || !IndexArg(info[3], max_entries) ||
      max_depth > 0xFFFFFFFFu) {
    return Invalid(info.Env());
  }
  const NativeHandle native = dir->native();
  return StatusWork::Start(info.Env(), dir, info[0].As<Napi::Object>(),
                           [native, name = std::move(name), max_depth, max_entries] {
                             return remove_tree(native, name, static_cast<std::uint32_t>(max_depth),
                                                static_cast<std::size_t>(max_entries));
                           });
}

// setTimes(file, atimeNs, mtimeNs): set_file_times; the times are bigints.
Napi::Value SetTimes(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* file = HandleArg(info, 0, HandleKind::file, failure);
  if (file == nullptr) return failure;
  if (!info[1].IsBigInt() || !info[2].IsBigInt()) return Invalid(info.Env());
  bool exact_a = false, exact_m = false;
  const std::int64_t atime = info[1].As<Napi::BigInt>().Int64Value(&exact_a);
  const std::int64_t mtime = info[2].As<Napi::BigInt>().Int64Value(&exact_m);
  if (!exact_a || !exact_m) return Invalid(info.Env());
  return ReplyStatus(info.Env(), set_file_times(file->native(), atime, mtime));
}

Napi::Value VerifyOrRepair(const Napi::CallbackInfo& info, bool repair) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr || handle->kind() == HandleKind::lock) return Invalid(info.Env());
  if (!handle->open()) return Closed(info.Env());
  const bool dir = handle->kind() == HandleKind::directory;
  auto result = repair ? (dir ? repair_directory(handle->native()) : repair_file(handle->native()))
                       : (dir ? verify_directory(handle->native()) : verify_file(handle->native()));
  return Reply(info.Env(), std::move(result), [&](VerifyEvidence e) { return EvidenceCode(info.Env(), e); });
}
Napi::Value Verify(const Napi::CallbackInfo& info) { return VerifyOrRepair(info, false); }
Napi::Value Repair(const Napi::CallbackInfo& info) { return VerifyOrRepair(info, true); }

Napi::Value List(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  Napi::Env env = info.Env();
  return Reply(env, list_directory(dir->native()), [&](std::vector<DirEntry> entries) {
    Napi::Array out = Napi::Array::New(env, entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      Napi::Object entry = Napi::Object::New(env);
      entry.Set("name", entries[i].name);
      entry.Set("type", entry_type_name(entries[i].type));
      out.Set(static_cast<uint32_t>(i), entry);
    }
    return out;
  });
}

Napi::Value StatEntry(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::string name;
  if (!StringArg(info[1], name)) return Invalid(info.Env());
  return Reply(info.Env(), stat_entry(dir->native(), name), [&](StatInfo s) { return StatValue(info.Env(), s); });
}

Napi::Value StatHandle(const Napi::CallbackInfo& info) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr) return Invalid(info.Env());
  if (!handle->open()) return Closed(info.Env());
  return Reply(info.Env(), stat_handle(handle->native()), [&](StatInfo s) { return StatValue(info.Env(), s); });
}

// The descriptor number of an open directory handle, for the one consumer that must name a
// held directory to a library that only takes paths (SQLite, via /proc/self/fd/<n>). POSIX
// only: a Win32 HANDLE has no such path, so there it reports invalid_argument.
Napi::Value DescriptorNumber(const Napi::CallbackInfo& info) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr || handle->kind() != HandleKind::directory) return Invalid(info.Env());
  if (!handle->open()) return Closed(info.Env());
#ifdef _WIN32
  return Invalid(info.Env());
#else
  return Napi::Number::New(info.Env(), handle->native());
#endif
}

// The arguments (file, buffer, offset, length, position) of positional I/O: an open file
// handle and a Uint8Array range checked here against the array's bounds.
struct PositionalArgs {
  Handle* file = nullptr;
  unsigned char* data = nullptr;
  std::size_t length = 0;
  std::uint64_t position = 0;
};

bool ParsePositional(const Napi::CallbackInfo& info, PositionalArgs& out, Napi::Value& failure) {
  out.file = HandleArg(info, 0, HandleKind::file, failure);
  if (out.file == nullptr) return false;
  std::uint64_t offset = 0, length = 0;
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      !IndexArg(info[2], offset) || !IndexArg(info[3], length) || !IndexArg(info[4], out.position)) {
    failure = Invalid(info.Env());
    return false;
  }
  auto bytes = info[1].As<Napi::Uint8Array>();
  if (offset > bytes.ByteLength() || length > bytes.ByteLength() - offset) {
    failure = Invalid(info.Env());
    return false;
  }
  out.data = bytes.Data() + offset;
  out.length = static_cast<std::size_t>(length);
  return true;
}

// read(file, buffer, offset, length, position) / write(...): positional I/O.
Napi::Value Positional(const Napi::CallbackInfo& info, bool writing) {
  PositionalArgs args;
  Napi::Value failure;
  if (!ParsePositional(info, args, failure)) return failure;
  const NativeHandle file = args.file->native();
  auto result = writing ? write_at(file, args.data, args.length, args.position)
                        : read_at(file, args.data, args.length, args.position);
  return Reply(info.Env(), std::move(result), [&](std::size_t n) { return Napi::Number::New(info.Env(), static_cast<double>(n)); });
}
Napi::Value Read(const Napi::CallbackInfo& info) { return Positional(info, false); }
Napi::Value Write(const Napi::CallbackInfo& info) { return Positional(info, true); }

Napi::Value Append(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* file = HandleArg(info, 0, HandleKind::file, failure);
  if (file == nullptr) return failure;
  ByteView bytes;
  if (!BytesArg(info[1], bytes)) return Invalid(info.Env());
  return Reply(info.Env(), write_append(file->native(), bytes.data, bytes.length),
               [&](std::size_t n) { return Napi::Number::New(info.Env(), static_cast<double>(n)); });
}

Napi::Value Sync(const Napi::CallbackInfo& info) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr || handle->kind() == HandleKind::lock) return Invalid(info.Env());
  if (!handle->open()) return Closed(info.Env());
  return ReplyStatus(info.Env(), sync_handle(handle->native()));
}

Napi::Value Unlink(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::string name;
  if (!StringArg(info[1], name)) return Invalid(info.Env());
  return ReplyStatus(info.Env(), unlink_file(dir->native(), name));
}

Napi::Value PublishNoReplace(const Napi::CallbackInfo& info) {
  Napi::Value failure;
  Handle* dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (dir == nullptr) return failure;
  std::string from, to;
  if (!StringArg(info[1], from) || !StringArg(info[2], to)) return Invalid(info.Env());
  return ReplyStatus(info.Env(), publish_no_replace(dir->native(), from, to));
}

// The (directory, name, bytes) arguments of writeFileAtomic and tryLock.
struct NamedBytes {
  Handle* dir = nullptr;
  std::string name;
  ByteView bytes;
};

bool NamedBytesArgs(const Napi::CallbackInfo& info, NamedBytes& out, Napi::Value& failure) {
  out.dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (out.dir == nullptr) return false;
  if (!StringArg(info[1], out.name) || !BytesArg(info[2], out.bytes)) {
    failure = Invalid(info.Env());
    return false;
  }
  return true;
}

// The { noReplace? } argument of writeFileAtomic and writeFileAtomicAsync.
bool NoReplaceArg(const Napi::Value& value, bool& no_replace) {
  Napi::Object options;
  if (!OptionsArg(value, options)) return false;
  no_replace = Flag(options, "noReplace");
  return true;
}

// writeFileAtomic(dir, name, data, { noReplace? }).
Napi::Value WriteFileAtomic(const Napi::CallbackInfo& info) {
  NamedBytes args;
  Napi::Value failure;
  if (!NamedBytesArgs(info, args, failure)) return failure;
  bool no_replace = false;
  if (!NoReplaceArg(info[3], no_replace)) return Invalid(info.Env());
  auto status = write_file_atomic(args.dir->native(), args.name, args.bytes.data, args.bytes.length, no_replace);
  return ReplyStatus(info.Env(), status);
}

// writeFileAtomicAsync(dir, name, data, { noReplace? }): the same as writeFileAtomic, on the
// thread pool. The bytes are copied first, since JS may change or free them meanwhile.
Napi::Value WriteFileAtomicAsync(const Napi::CallbackInfo& info) {
  NamedBytes args;
  Napi::Value failure;
  if (!NamedBytesArgs(info, args, failure)) return failure;
  bool no_replace = false;
  if (!NoReplaceArg(info[3], no_replace)) return Invalid(info.Env());
  std::string data(reinterpret_cast<const char*>(args.bytes.data), args.bytes.length);
  const NativeHandle dir = args.dir->native();
  return StatusWork::Start(info.Env(), args.dir, info[0].As<Napi::Object>(),
                           [dir, name = std::move(args.name), data = std::move(data), no_replace] {
                             return write_file_atomic(dir, name, data.data(), data.size(), no_replace);
                           });
}

// syncAsync(handle): sync on the thread pool.
Napi::Value SyncAsync(const Napi::CallbackInfo& info) {
  Handle* handle = Handle::Any(info[0]);
  if (handle == nullptr || handle->kind() == HandleKind::lock) return Invalid(info.Env());
  if (!handle->open()) return Closed(info.Env());
  const NativeHandle native = handle->native();
  return StatusWork::Start(info.Env(), handle, info[0].As<Napi::Object>(), [native] { return sync_handle(native); });
}

Napi::Value TryLock(const Napi::CallbackInfo& info) {
  NamedBytes args;
  Napi::Value failure;
  if (!NamedBytesArgs(info, args, failure)) return failure;
  auto lock = try_lock(args.dir->native(), args.name, args.bytes.data, args.bytes.length);
  return ReplyHandle(info.Env(), std::move(lock), HandleKind::lock);
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
  return Reply(info.Env(), directory_identity(path), [&](DirectoryIdentity id) { return IdentityValue(info.Env(), id); });
}

// Pure checks exposed so the rules of every platform are testable on any platform.
Napi::Value IsValidName(const Napi::CallbackInfo& info) {
  std::string name, rules;
  if (!StringArg(info[0], name) || !StringArg(info[1], rules)) return Invalid(info.Env());
  const bool ok = rules == "windows" ? is_valid_name_windows(name) : is_valid_name_posix(name);
  return Napi::Boolean::New(info.Env(), ok);
}

Napi::Value ClassifyAclBytes(const Napi::CallbackInfo& info) {
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    return Invalid(info.Env());
  }
  auto bytes = info[0].As<Napi::Uint8Array>();
  switch (parse_posix_acl(bytes.Data(), bytes.ByteLength())) {
    case AclContent::minimal: return Napi::String::New(info.Env(), "minimal");
    case AclContent::extended: return Napi::String::New(info.Env(), "extended");
    case AclContent::malformed: break;
  }
  return Napi::String::New(info.Env(), "malformed");
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeHandle", Handle::Define(env));
  const std::pair<const char*, Napi::Function::Callback> functions[] = {
      {"openRoot", OpenRoot}, {"openDir", OpenDir}, {"openFile", OpenFile},
      {"verify", Verify}, {"repair", Repair}, {"list", List},
      {"statEntry", StatEntry}, {"statHandle", StatHandle}, {"descriptorNumber", DescriptorNumber}, {"read", Read},
      {"write", Write}, {"append", Append}, {"sync", Sync},
      {"unlink", Unlink}, {"publishNoReplace", PublishNoReplace},
      {"writeFileAtomic", WriteFileAtomic}, {"writeFileAtomicAsync", WriteFileAtomicAsync},
      {"syncAsync", SyncAsync}, {"tryLock", TryLock}, {"close", Close},
      {"directoryIdentity", Identity}, {"isValidName", IsValidName},
      {"classifyAclBytes", ClassifyAclBytes},
      {"openSource", OpenSource}, {"removeTreeAsync", RemoveTreeAsync}, {"setTimes", SetTimes},
  };
  for (const auto& [name, callback] : functions) {
    exports.Set(name, Napi::Function::New(env, callback, name));
  }
  return exports;
}

}  // namespace
}  // namespace gjc::binding

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  return gjc::binding::Init(env, exports);
}

NODE_API_MODULE(gjc_session_store, InitAddon)
