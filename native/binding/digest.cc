#include "digest.h"

#include <string>

#include "values.h"

namespace gjc::binding {

Napi::Function Digest::Define(Napi::Env env) {
  Napi::Function ctor = DefineClass(env, "NativeDigest", {});
  env.GetInstanceData<AddonData>()->digest_constructor = Napi::Persistent(ctor);
  return ctor;
}

// `new NativeDigest()` from JS makes an object without a digest, which nothing accepts.
Digest::Digest(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Digest>(info) {}

Digest* Digest::Free(const Napi::Value& value) {
  if (!IsInstance(value, value.Env().GetInstanceData<AddonData>()->digest_constructor)) return nullptr;
  Digest* digest = Unwrap(value.As<Napi::Object>());
  return digest->sha256_ == nullptr || digest->busy_ ? nullptr : digest;
}

Napi::Value CreateDigest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto made = Sha256::create();
  if (!made.ok()) return FailureValue(env, made.failure());
  Napi::Object object = env.GetInstanceData<AddonData>()->digest_constructor.New({});
  if (object.IsEmpty()) return env.Undefined();
  Digest::Unwrap(object)->sha256_ = std::move(made).value();
  return object;
}

Napi::Value FinishDigest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Digest* digest = Digest::Free(info[0]);
  if (digest == nullptr) return FailureValue(env, Code::invalid_argument);
  auto finished = digest->sha256_->finish();
  if (!finished.ok()) return FailureValue(env, finished.failure());
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(finished.value().size() * 2);
  for (unsigned char byte : finished.value()) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0x0f]);
  }
  return Napi::String::New(env, hex);
}

}  // namespace gjc::binding
