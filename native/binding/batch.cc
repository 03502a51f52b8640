// The batch result travels as a few flat arrays rather than one object per entry, so a
// directory of thousands of files costs a handful of JS allocations besides its names.
#include "batch.h"

#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
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

// The JS form of a finished batch (layout in src/native/binding.d.cts).
Napi::Value BatchValue(Napi::Env env, const std::vector<BatchEntry>& entries) {
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

// The arguments shared by readDirBatch and readDirBatchStart: (dir, maxFileBytes, buffer).
struct BatchArgs {
  Handle* dir = nullptr;
  std::size_t max_file_bytes = 0;
  unsigned char* data = nullptr;
  std::size_t capacity = 0;
};

bool ParseBatchArgs(const Napi::CallbackInfo& info, BatchArgs& out, Napi::Value& failure) {
  out.dir = HandleArg(info, 0, HandleKind::directory, failure);
  if (out.dir == nullptr) return false;
  std::uint64_t max_file_bytes = 0;
  if (!IndexArg(info[1], max_file_bytes) || !info[2].IsTypedArray() ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    failure = FailureValue(info.Env(), Code::invalid_argument);
    return false;
  }
  out.max_file_bytes = static_cast<std::size_t>(max_file_bytes);
  auto buffer = info[2].As<Napi::Uint8Array>();
  out.data = buffer.Data();
  out.capacity = buffer.ByteLength();
  return true;
}

// What a batch on the thread pool and the JS side that waits for it share. `done` and
// `result` are written by the pool thread under `mutex`; `unpinned` and `taken` are only
// touched on the main thread.
struct BatchState {
  std::mutex mutex;
  std::condition_variable settled;
  bool done = false;
  Result<std::vector<BatchEntry>> result = Failure{};
  Handle* dir = nullptr;
  bool unpinned = false;
  bool taken = false;

  // Main thread, once the batch is done (or will never use the descriptor again).
  void Unpin() {
    if (unpinned) return;
    unpinned = true;
    dir->Unpin();
  }
};

// The batch on the libuv thread pool. The directory is pinned (a close meanwhile waits) and
// it and the buffer are referenced until the work completes; the waiting side unpins as soon
// as the batch is done, so a walk holds no more descriptors than it would without it.
class BatchWork : public Napi::AsyncWorker {
 public:
  BatchWork(Napi::Env env, const BatchArgs& args, Napi::Object dir, Napi::Object buffer,
            std::shared_ptr<BatchState> state)
      : Napi::AsyncWorker(env, "gjc-read-batch"),
        args_(args),
        native_(args.dir->native()),
        dir_(Napi::Persistent(dir)),
        buffer_(Napi::Persistent(buffer)),
        state_(std::move(state)) {
    args.dir->Pin();
  }

 protected:
  void Execute() override {
    auto result = read_directory_batch(native_, args_.max_file_bytes, args_.data, args_.capacity);
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->result = std::move(result);
    state_->done = true;
    state_->settled.notify_all();
  }
  void OnOK() override { state_->Unpin(); }
  void OnError(const Napi::Error&) override { state_->Unpin(); }

 private:
  BatchArgs args_;
  NativeHandle native_;
  Napi::ObjectReference dir_;
  Napi::ObjectReference buffer_;
  std::shared_ptr<BatchState> state_;
};

// Marks the externals this file makes, so a foreign external is never taken for a job.
constexpr napi_type_tag kBatchJobTag = {0x6a5c1f0e2b7d4c39, 0x9e81a4d6f3b20c57};
using BatchJob = std::shared_ptr<BatchState>;

}  // namespace

Napi::Value ReadDirBatch(const Napi::CallbackInfo& info) {
  BatchArgs args;
  Napi::Value failure;
  if (!ParseBatchArgs(info, args, failure)) return failure;
  auto result = read_directory_batch(args.dir->native(), args.max_file_bytes, args.data, args.capacity);
  if (!result.ok()) return FailureValue(info.Env(), result.failure());
  return BatchValue(info.Env(), result.value());
}

Napi::Value ReadDirBatchStart(const Napi::CallbackInfo& info) {
  BatchArgs args;
  Napi::Value failure;
  if (!ParseBatchArgs(info, args, failure)) return failure;
  auto state = std::make_shared<BatchState>();
  state->dir = args.dir;
  auto* work = new BatchWork(info.Env(), args, info[0].As<Napi::Object>(), info[2].As<Napi::Object>(), state);
  work->Queue();
  auto external = Napi::External<BatchJob>::New(info.Env(), new BatchJob(std::move(state)),
                                                [](Napi::Env, BatchJob* job) { delete job; });
  external.TypeTag(&kBatchJobTag);
  return external;
}

Napi::Value ReadDirBatchFinish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsExternal() || !info[0].As<Napi::External<BatchJob>>().CheckTypeTag(&kBatchJobTag)) {
    return FailureValue(env, Code::invalid_argument);
  }
  BatchState& state = **info[0].As<Napi::External<BatchJob>>().Data();
  if (state.taken) return FailureValue(env, Code::closed);
  state.taken = true;
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    state.settled.wait(lock, [&] { return state.done; });
  }
  state.Unpin();
  if (!state.result.ok()) return FailureValue(env, state.result.failure());
  auto value = BatchValue(env, state.result.value());
  state.result = Failure{};  // the entries live in JS now
  return value;
}

}  // namespace gjc::binding
