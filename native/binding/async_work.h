// Blocking core calls (fsync-bound ones) run on the libuv thread pool and settle a promise.
// The promise always resolves, with the call's value or a failure record, exactly like the
// synchronous calls return; nothing is thrown and no JS runs off the main thread.
#pragma once

#include <napi.h>

#include <functional>
#include <utility>

#include "../core/result.h"
#include "values.h"

namespace gjc::binding {

// The JS value of a successful call: undefined for a Status, the string for a word.
inline Napi::Value SuccessValue(Napi::Env env, const Unit&) { return env.Undefined(); }
inline Napi::Value SuccessValue(Napi::Env env, const char* word) { return Napi::String::New(env, word); }
// An import batch and a tree walk (unmanaged.cc; layouts in src/native/binding.d.cts).
Napi::Value SuccessValue(Napi::Env env, const ImportBatch& batch);
Napi::Value SuccessValue(Napi::Env env, const TreeWalk& walk);

template <class T>
class ResultWork : public Napi::AsyncWorker {
 public:
  // Runs `work` off the main thread. `handle` (the JS object of `pinned`) is kept alive and
  // pinned until the work is done, so its descriptor stays valid throughout; so is
  // `memory` (when given), a buffer the work reads or writes. Work that uses no handle
  // passes nullptr and an empty object.
  // `settle` (when given) runs on the main thread once the work is done, before the
  // promise settles; `also` is another object kept alive until then.
  static Napi::Value Start(Napi::Env env, Handle* pinned, Napi::Object handle,
                           std::function<Result<T>()> work, Napi::Object memory = Napi::Object(),
                           Napi::Object also = Napi::Object(), std::function<void()> settle = nullptr) {
    auto* job = new ResultWork(env, pinned, handle, std::move(work));
    if (!memory.IsEmpty()) job->memory_ = Napi::Persistent(memory);
    if (!also.IsEmpty()) job->also_ = Napi::Persistent(also);
    job->settle_ = std::move(settle);
    Napi::Promise promise = job->deferred_.Promise();
    job->Queue();
    return promise;
  }

 protected:
  void Execute() override { result_ = work_(); }

  void OnOK() override {
    Napi::Env env = Env();
    if (pinned_ != nullptr) pinned_->Unpin();
    if (settle_) settle_();
    deferred_.Resolve(result_.ok() ? SuccessValue(env, result_.value()) : FailureValue(env, result_.failure()));
  }

  void OnError(const Napi::Error& error) override {
    if (pinned_ != nullptr) pinned_->Unpin();
    if (settle_) settle_();
    deferred_.Reject(error.Value());
  }

 private:
  ResultWork(Napi::Env env, Handle* pinned, Napi::Object handle, std::function<Result<T>()> work)
      : Napi::AsyncWorker(env, "gjc-secure-fs"),
        deferred_(Napi::Promise::Deferred::New(env)),
        pinned_(pinned),
        work_(std::move(work)) {
    if (pinned_ == nullptr) return;
    handle_ = Napi::Persistent(handle);
    pinned_->Pin();
  }

  Napi::Promise::Deferred deferred_;
  Handle* pinned_;
  Napi::ObjectReference handle_;
  Napi::ObjectReference memory_;
  Napi::ObjectReference also_;
  std::function<Result<T>()> work_;
  std::function<void()> settle_;
  // Overwritten by Execute before OnOK reads it.
  Result<T> result_ = fail(Code::io_error);
};

using StatusWork = ResultWork<Unit>;
// For calls whose success carries a word (e.g. "synced" or "unsupported").
using WordWork = ResultWork<const char*>;

}  // namespace gjc::binding
