// The SHA-256 digest JS holds while a file is copied chunk by chunk: each verified write
// adds its bytes on the thread pool (writeVerifiedAsync), and JS asks for the hex digest at
// the end. One write at a time may use a digest: the bytes must go in in order.
#pragma once

#include <napi.h>

#include <memory>

#include "../core/sha256.h"

namespace gjc::binding {

class Digest : public Napi::ObjectWrap<Digest> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit Digest(const Napi::CallbackInfo& info);

  // The Digest in `value` when it is one of ours, made by createDigest and not in use by
  // running work; else nullptr.
  static Digest* Free(const Napi::Value& value);

  Sha256* sha256() const { return sha256_.get(); }
  // Running work uses the digest from Claim() until Release(), both on the main thread.
  void Claim() { busy_ = true; }
  void Release() { busy_ = false; }

 private:
  friend Napi::Value CreateDigest(const Napi::CallbackInfo& info);
  friend Napi::Value FinishDigest(const Napi::CallbackInfo& info);
  std::unique_ptr<Sha256> sha256_;
  bool busy_ = false;
};

// createDigest(): a new Digest, or a failure record.
Napi::Value CreateDigest(const Napi::CallbackInfo& info);
// finishDigest(digest): the lowercase hex SHA-256 of everything added, the digest starting
// afresh; invalid_argument while a write is using it.
Napi::Value FinishDigest(const Napi::CallbackInfo& info);

}  // namespace gjc::binding
