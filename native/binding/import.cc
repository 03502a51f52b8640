// The import batch travels as one flat array of numbers plus the failure records of the
// entries that have one, like the read batch.
#include "import.h"

#include <cstdint>
#include <string>
#include <vector>

#include "../core/platform.h"
#include "async_work.h"
#include "values.h"

namespace gjc::binding {
namespace {

// Numbers per request in `info`, in this order (binding.d.cts documents the same layout).
enum Field : std::size_t { kOutcome, kChange, kDataOffset, kDataLength, kFields };

// Numbers per request in `versions`: dev, ino, size, mtimeNs, ctimeNs.
constexpr std::size_t kVersionFields = 5;

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
  double* row = numbers.Data();
  for (std::size_t i = 0; i < count; ++i, row += kFields) {
    const ImportEntry& entry = batch.entries[i];
    row[kOutcome] = static_cast<double>(entry.outcome);
    row[kChange] = static_cast<double>(entry.change);
    row[kDataOffset] = static_cast<double>(entry.data_offset);
    row[kDataLength] = static_cast<double>(entry.data_length);
    if (FailureOf(entry)) failures.Set(static_cast<uint32_t>(i), FailureValue(env, entry.failure));
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("info", numbers);
  out.Set("failures", failures);
  return out;
}

Napi::Value ImportFilesAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Handle* dest = Handle::Any(info[0]);
  if (dest == nullptr || dest->kind() != HandleKind::directory) return FailureValue(env, Code::invalid_argument);
  if (!dest->open()) return FailureValue(env, Code::closed);
  std::string source_dir;
  if (!StringArg(info[1], source_dir) || !info[2].IsTypedArray() || !info[3].IsArray() ||
      !info[4].IsTypedArray() || !info[5].IsTypedArray()) {
    return FailureValue(env, Code::invalid_argument);
  }
  auto dir_id = info[2].As<Napi::TypedArray>();
  auto versions = info[4].As<Napi::TypedArray>();
  auto names = info[3].As<Napi::Array>();
  if (dir_id.TypedArrayType() != napi_biguint64_array || dir_id.ElementLength() != 2 ||
      versions.TypedArrayType() != napi_bigint64_array ||
      versions.ElementLength() != names.Length() * kVersionFields ||
      info[5].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    return FailureValue(env, Code::invalid_argument);
  }
  const auto* id = info[2].As<Napi::TypedArrayOf<std::uint64_t>>().Data();
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
  const std::uint64_t dev = id[0];
  const std::uint64_t ino = id[1];
  return ResultWork<ImportBatch>::Start(
      env, dest, info[0].As<Napi::Object>(),
      [=, requests = std::move(requests)] { return import_files(source_dir, dev, ino, native, requests, data, capacity); },
      buffer);
}

}  // namespace gjc::binding
