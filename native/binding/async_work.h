// Blocking core calls (fsync-bound ones) run on the libuv thread pool and settle a promise.
// The promise always resolves, with undefined or a failure record, exactly like the
// synchronous calls return; nothing is thrown and no JS runs off the main thread.
#pragma once

#include <napi.h>

#include <functional>
#include <utility>

#include "../core/result.h"
#include "values.h"

namespace gjc::binding {

class StatusWork : public Napi::AsyncWorker {
 public:
  // Runs `work` off the main thread. `handle` (the JS object of `pinned`) is kept alive and
  // pinned until the work is done, so its descriptor stays valid throughout.
  static Napi::Value Start(Napi::Env env, Handle* pinned, Napi::Object handle,
                           std::function<Status()> work) {
    auto* job = new StatusWork(env, pinned, handle, std::move(work));
    Napi::Promise promise = job->deferred_.Promise();
    job->Queue();
    return promise;
  }

 protected:
  void Execute() override { status_ = work_(); }

  void OnOK() override {
    Napi::Env env = Env();
    pinned_->Unpin();
    deferred_.Resolve(status_.ok() ? env.Undefined() : FailureValue(env, status_.failure()));
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
  Status status_ = success();
};

}  // namespace gjc::binding
