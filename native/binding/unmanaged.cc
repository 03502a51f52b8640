// The import batch and the tree walk travel as flat arrays (numbers, 64-bit ids and times)
// plus strings, like the read batch: one JS allocation per array, not per entry.
#include "unmanaged.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../core/platform.h"
#include "async_work.h"
#include "values.h"

namespace gjc::binding {
namespace {

// Numbers per request in `info`, in this order (binding.d.cts documents the same layout).
enum Field : std::size_t { kOutcome, kChange, kDataOffset, kDataLength, kFields };

// Bytes per request in `digests`: the SHA-256 of a copied request (zeros otherwise).
constexpr std::size_t kDigestBytes = std::tuple_size<Sha256Digest>::value;

// Numbers per request in `versions`: dev, ino, size, mtimeNs, ctimeNs.
constexpr std::size_t kVersionFields = 5;

// Numbers per tree entry in `info`: depth, type (NativeEntryType order), size, nlink.
enum TreeField : std::size_t { kDepth, kType, kSize, kNlink, kTreeFields };

// A (dev, ino) identity argument: a BigUint64Array of two.
bool IdArg(const Napi::Value& value, std::uint64_t& dev, std::uint64_t& ino) {
  if (!value.IsTypedArray()) return false;
  auto array = value.As<Napi::TypedArray>();
  if (array.TypedArrayType() != napi_biguint64_array || array.ElementLength() != 2) return false;
  const auto* id = value.As<Napi::TypedArrayOf<std::uint64_t>>().Data();
  dev = id[0];
  ino = id[1];
  return true;
}

bool FailureOf(const ImportEntry& entry) {
  return entry.outcome == ImportOutcome::failed ||
         (entry.outcome == ImportOutcome::changed && entry.change == ImportChange::unopenable);
}

}  // namespace

Napi::Value SuccessValue(Napi::Env env, const ImportBatch& batch) {
  if (!batch.supported) return Napi::String::New(env, "unsupported");
  const std::size_t count = batch.entries.size();
  auto numbers = Napi::Float64Array::New(env, count * kFields);
  auto failures = Napi::Array::New(env, count);
  auto digests = Napi::Buffer<unsigned char>::New(env, count * kDigestBytes);
  unsigned char* digest = digests.Data();
  double* row = numbers.Data();
  for (std::size_t i = 0; i < count; ++i, row += kFields, digest += kDigestBytes) {
    const ImportEntry& entry = batch.entries[i];
    std::memcpy(digest, entry.sha256.data(), kDigestBytes);
    row[kOutcome] = static_cast<double>(entry.outcome);
    row[kChange] = static_cast<double>(entry.change);
    row[kDataOffset] = static_cast<double>(entry.data_offset);
    row[kDataLength] = static_cast<double>(entry.data_length);
    if (FailureOf(entry)) failures.Set(static_cast<uint32_t>(i), FailureValue(env, entry.failure));
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("info", numbers);
  out.Set("failures", failures);
  out.Set("digests", digests);
  return out;
}

Napi::Value ImportFilesAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Value failure;
  Handle* dest = HandleArg(info, 0, HandleKind::directory, failure);
  if (dest == nullptr) return failure;
  std::string source_dir;
  std::uint64_t dev = 0, ino = 0;
  if (!StringArg(info[1], source_dir) || !IdArg(info[2], dev, ino) || !info[3].IsArray() ||
      !info[4].IsTypedArray() || !info[5].IsTypedArray()) {
    return FailureValue(env, Code::invalid_argument);
  }
  auto versions = info[4].As<Napi::TypedArray>();
  auto names = info[3].As<Napi::Array>();
  if (versions.TypedArrayType() != napi_bigint64_array ||
      versions.ElementLength() != names.Length() * kVersionFields ||
      info[5].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    return FailureValue(env, Code::invalid_argument);
  }
  const auto* version = info[4].As<Napi::TypedArrayOf<std::int64_t>>().Data();
  std::vector<ImportRequest> requests(names.Length());
  for (uint32_t i = 0; i < names.Length(); ++i, version += kVersionFields) {
    ImportRequest& request = requests[i];
    if (!StringArg(names.Get(i), request.name) || version[2] < 0) return FailureValue(env, Code::invalid_argument);
    request.dev = static_cast<std::uint64_t>(version[0]);
    request.ino = static_cast<std::uint64_t>(version[1]);
    request.size = static_cast<std::uint64_t>(version[2]);
    request.mtime_ns = version[3];
    request.ctime_ns = version[4];
  }
  auto buffer = info[5].As<Napi::Uint8Array>();
  unsigned char* data = buffer.Data();
  const std::size_t capacity = buffer.ByteLength();
  const NativeHandle native = dest->native();
  return ResultWork<ImportBatch>::Start(
      env, dest, info[0].As<Napi::Object>(),
      [=, requests = std::move(requests)] { return import_files(source_dir, dev, ino, native, requests, data, capacity); },
      buffer);
}

Napi::Value SuccessValue(Napi::Env env, const TreeWalk& walk) {
  if (!walk.supported) return Napi::String::New(env, "unsupported");
  if (walk.compared) return Napi::String::New(env, walk.matches ? "same" : "differs");
  const std::size_t count = walk.entries.size();
  auto paths = Napi::Array::New(env, count);
  auto numbers = Napi::Float64Array::New(env, count * kTreeFields);
  // Signed, as Node's bigint stats carry them, so both spell an id the same way.
  auto ids = Napi::TypedArrayOf<std::int64_t>::New(env, count * 2, napi_bigint64_array);
  auto times = Napi::TypedArrayOf<std::int64_t>::New(env, count * 2, napi_bigint64_array);
  for (std::size_t i = 0; i < count; ++i) {
    const TreeEntry& entry = walk.entries[i];
    paths.Set(static_cast<uint32_t>(i), Napi::String::New(env, entry.path));
    double* row = numbers.Data() + i * kTreeFields;
    row[kDepth] = entry.depth;
    row[kType] = static_cast<double>(entry.stat.type);
    row[kSize] = static_cast<double>(entry.stat.size);
    row[kNlink] = static_cast<double>(entry.stat.nlink);
    ids.Data()[i * 2] = static_cast<std::int64_t>(entry.stat.dev);
    ids.Data()[i * 2 + 1] = static_cast<std::int64_t>(entry.stat.ino);
    times.Data()[i * 2] = entry.stat.mtime_ns;
    times.Data()[i * 2 + 1] = entry.stat.ctime_ns;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("paths", paths);
  out.Set("info", numbers);
  out.Set("ids", ids);
  out.Set("times", times);
  out.Set("truncated", Napi::Boolean::New(env, walk.truncated));
  return out;
}

namespace {

// The entries of an earlier walk, as SuccessValue(TreeWalk) gave them to JS; false when
// `value` is not exactly that shape.
bool ExpectedArg(const Napi::Value& value, std::vector<TreeEntry>& out) {
  if (!value.IsObject()) return false;
  auto object = value.As<Napi::Object>();
  Napi::Value paths = object.Get("paths"), numbers = object.Get("info"), ids = object.Get("ids"),
              times = object.Get("times");
  if (!paths.IsArray() || !numbers.IsTypedArray() || !ids.IsTypedArray() || !times.IsTypedArray()) return false;
  const std::size_t count = paths.As<Napi::Array>().Length();
  auto typed = [&](const Napi::Value& v, napi_typedarray_type type, std::size_t per) {
    auto array = v.As<Napi::TypedArray>();
    return array.TypedArrayType() == type && array.ElementLength() == count * per;
  };
  if (!typed(numbers, napi_float64_array, kTreeFields) || !typed(ids, napi_bigint64_array, 2) ||
      !typed(times, napi_bigint64_array, 2)) {
    return false;
  }
  const double* row = numbers.As<Napi::Float64Array>().Data();
  const auto* id = ids.As<Napi::TypedArrayOf<std::int64_t>>().Data();
  const auto* time = times.As<Napi::TypedArrayOf<std::int64_t>>().Data();
  out.resize(count);
  for (std::size_t i = 0; i < count; ++i, row += kTreeFields) {
    TreeEntry& entry = out[i];
    if (!StringArg(paths.As<Napi::Array>().Get(static_cast<uint32_t>(i)), entry.path)) return false;
    const double type = row[kType];
    if (!(type >= 0 && type <= static_cast<double>(EntryType::unknown)) || type != static_cast<double>(static_cast<int>(type))) {
      return false;
    }
    entry.depth = static_cast<std::uint32_t>(row[kDepth]);
    entry.stat.type = static_cast<EntryType>(static_cast<int>(type));
    entry.stat.size = static_cast<std::uint64_t>(row[kSize]);
    entry.stat.nlink = static_cast<std::uint64_t>(row[kNlink]);
    entry.stat.dev = static_cast<std::uint64_t>(id[i * 2]);
    entry.stat.ino = static_cast<std::uint64_t>(id[i * 2 + 1]);
    entry.stat.mtime_ns = time[i * 2];
    entry.stat.ctime_ns = time[i * 2 + 1];
  }
  return true;
}

}  // namespace

Napi::Value WalkTreeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string root;
  std::uint64_t dev = 0, ino = 0, max_depth = 0, max_entries = 0;
  if (!StringArg(info[0], root) || !IdArg(info[1], dev, ino) || !IndexArg(info[2], max_depth) ||
      !IndexArg(info[3], max_entries) || max_depth > 4096 || max_entries > 1000000000) {
    return FailureValue(env, Code::invalid_argument);
  }
  // Shared by the job and its copies: std::function needs a copyable callable.
  std::shared_ptr<std::vector<TreeEntry>> expected;
  if (!info[4].IsUndefined()) {
    expected = std::make_shared<std::vector<TreeEntry>>();
    if (!ExpectedArg(info[4], *expected)) return FailureValue(env, Code::invalid_argument);
  }
  const auto depth = static_cast<std::uint32_t>(max_depth);
  const auto entries = static_cast<std::size_t>(max_entries);
  return ResultWork<TreeWalk>::Start(env, nullptr, Napi::Object(), [=] {
    return walk_tree(root, dev, ino, depth, entries, expected.get());
  });
}

}  // namespace gjc::binding
