// The batch result travels as a few flat arrays rather than one object per entry, so a
// directory of thousands of files costs a handful of JS allocations besides its names.
#include "batch.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "../core/platform.h"
#include "values.h"

namespace gjc::binding {
namespace {

// Numbers per entry in `info`, in this order (binding.d.cts documents the same layout).
enum Field : std::size_t {
  kType, kOutcome, kStatType, kMode, kUid, kNlink, kSize, kMtimeMs, kCtimeMs, kDataOffset, kDataLength,
  kFields
};

bool SizeArg(const Napi::Value& value, std::size_t& out) {
  if (!value.IsNumber()) return false;
  const double d = value.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d) return false;
  out = static_cast<std::size_t>(d);
  return true;
}

}  // namespace

Napi::Value ReadDirBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Handle* dir = Handle::Any(info[0]);
  if (dir == nullptr || dir->kind() != HandleKind::directory) return FailureValue(env, Code::invalid_argument);
  if (!dir->open()) return FailureValue(env, Code::closed);
  std::size_t max_file_bytes = 0;
  if (!SizeArg(info[1], max_file_bytes) || !info[2].IsTypedArray() ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    return FailureValue(env, Code::invalid_argument);
  }
  auto buffer = info[2].As<Napi::Uint8Array>();
  auto result = read_directory_batch(dir->native(), max_file_bytes, buffer.Data(), buffer.ByteLength());
  if (!result.ok()) return FailureValue(env, result.failure());
  const std::vector<BatchEntry>& entries = result.value();
  const std::size_t count = entries.size();
  auto names = Napi::Array::New(env, count);
  auto numbers = Napi::Float64Array::New(env, count * kFields);
  auto ids = Napi::TypedArrayOf<std::uint64_t>::New(env, count * 2, napi_biguint64_array);
  auto failures = Napi::Array::New(env);
  double* row = numbers.Data();
  std::uint64_t* id = ids.Data();
  for (std::size_t i = 0; i < count; ++i, row += kFields, id += 2) {
    const BatchEntry& entry = entries[i];
    names.Set(static_cast<uint32_t>(i), Napi::String::New(env, entry.name));
    row[kType] = static_cast<double>(entry.type);
    row[kOutcome] = static_cast<double>(entry.outcome);
    row[kStatType] = entry.stated ? static_cast<double>(entry.stat.type) : -1;
    row[kMode] = entry.stat.mode;
    row[kUid] = static_cast<double>(entry.stat.uid);
    row[kNlink] = static_cast<double>(entry.stat.nlink);
    row[kSize] = static_cast<double>(entry.stat.size);
    row[kMtimeMs] = static_cast<double>(entry.stat.mtime_ns) / 1e6;
    row[kCtimeMs] = static_cast<double>(entry.stat.ctime_ns) / 1e6;
    row[kDataOffset] = static_cast<double>(entry.data_offset);
    row[kDataLength] = static_cast<double>(entry.data_length);
    id[0] = entry.stat.dev;
    id[1] = entry.stat.ino;
    if (entry.outcome == BatchOutcome::refused) {
      failures.Set(failures.Length(), FailureValue(env, entry.failure));
    }
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("names", names);
  out.Set("info", numbers);
  out.Set("ids", ids);
  out.Set("failures", failures);
  return out;
}

}  // namespace gjc::binding
