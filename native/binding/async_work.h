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

// The JS value of a successful call: undefined for a Status.
inline Napi::Value SuccessValue(Napi::Env env, const Unit&) { return env.Undefined(); }

template <class T>
class ResultWork : public Napi::AsyncWorker {
 public:
  // Runs `work` off the main thread. `handle` (the JS object of `pinned`) is kept alive and
  // pinned until the work is done, so its descriptor stays valid throughout. Work that uses
  // no handle passes nullptr and an empty object.
  static Napi::Value Start(Napi::Env env, Handle* pinned, Napi::Object handle,
                           std::function<Result<T>()> work) {
    auto* job = new ResultWork(env, pinned, handle, std::move(work));
    Napi::Promise promise = job->deferred_.Promise();
    job->Queue();
    return promise;
  }

 protected:
  void Execute() override { result_ = work_(); }

  void OnOK() override {
    Napi::Env env = Env();
    if (pinned_ != nullptr) pinned_->Unpin();
    deferred_.Resolve(result_.ok() ? SuccessValue(env, result_.value()) : FailureValue(env, result_.failure()));
  }

  void OnError(const Napi::Error& error) override {
    if (pinned_ != nullptr) pinned_->Unpin();
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
  std::function<Result<T>()> work_;
  // Overwritten by Execute before OnOK reads it.
  Result<T> result_ = fail(Code::io_error);
};

using StatusWork = ResultWork<Unit>;

}  // namespace gjc::binding
