#include "values.h"

#include <cmath>

namespace gjc::binding {

Napi::Function Handle::Define(Napi::Env env) {
  Napi::Function ctor = DefineClass(env, "NativeHandle", {InstanceMethod<&Handle::IsOpen>("isOpen")});
  env.SetInstanceData<Napi::FunctionReference>(new Napi::FunctionReference(Napi::Persistent(ctor)));
  return ctor;
}

Handle::Handle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Handle>(info) {}

Napi::Value Handle::IsOpen(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), open());
}

void Handle::Close() {
  if (pins_ > 0) {
    close_pending_ = true;
  } else {
    Release();
  }
}

void Handle::Unpin() {
  if (--pins_ == 0 && close_pending_) Release();
}

void Handle::Release() {
  close_pending_ = false;
  if (kind_ == kLock && owned_.valid()) {
    // Closing the last descriptor releases the lock anyway; unlocking first also empties
    // the record. A failure here changes nothing the close does not also do.
    (void)unlock(owned_.get());
  }
  owned_.reset();
}

Napi::Value Handle::Wrap(Napi::Env env, OwnedHandle owned, HandleKind kind) {
  Napi::Object object = env.GetInstanceData<Napi::FunctionReference>()->New({});
  if (object.IsEmpty()) return env.Undefined();
  Handle* handle = Unwrap(object);
  handle->owned_ = std::move(owned);
  handle->kind_ = kind;
  return object;
}

Handle* Handle::Any(const Napi::Value& value) {
  const Napi::FunctionReference* constructor = value.Env().GetInstanceData<Napi::FunctionReference>();
  bool ours = false;
  if (!value.IsObject() || napi_instanceof(value.Env(), value, constructor->Value(), &ours) != napi_ok || !ours) {
    return nullptr;
  }
  return Unwrap(value.As<Napi::Object>());
}

Napi::Value FailureValue(Napi::Env env, const Failure& failure) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("failed", true);
  out.Set("code", code_name(failure.code));
  out.Set("errno", failure.sys_errno);
  out.Set("syscall", failure.syscall);
  if (failure.attribute != Attribute::none) out.Set("attribute", attribute_name(failure.attribute));
  return out;
}

Napi::Value EvidenceCode(Napi::Env env, const VerifyEvidence& evidence) {
  const int code = static_cast<int>(evidence.access_acl) * 3 + static_cast<int>(evidence.default_acl);
  return Napi::Number::New(env, code);
}

Napi::Value StatValue(Napi::Env env, const StatInfo& info) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", entry_type_name(info.type));
  out.Set("dev", std::to_string(info.dev));
  out.Set("ino", std::to_string(info.ino));
  out.Set("size", static_cast<double>(info.size));
  out.Set("nlink", static_cast<double>(info.nlink));
  out.Set("mode", info.mode);
  out.Set("uid", static_cast<double>(info.uid));
  out.Set("mtimeMs", static_cast<double>(info.mtime_ns) / 1e6);
  out.Set("ctimeMs", static_cast<double>(info.ctime_ns) / 1e6);
  // Exact times as decimal strings, as dev and ino: a double cannot hold nanoseconds.
  out.Set("atimeNs", std::to_string(info.atime_ns));
  out.Set("mtimeNs", std::to_string(info.mtime_ns));
  out.Set("ctimeNs", std::to_string(info.ctime_ns));
  return out;
}

Napi::Value IdentityValue(Napi::Env env, const DirectoryIdentity& identity) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("platform", identity.platform);
  out.Set("canonicalPath", identity.canonical_path);
  out.Set("dev", identity.dev);
  out.Set("ino", identity.ino);
  return out;
}

namespace {

// A JS string holding a lone surrogate has no UTF-8 form: converting it would silently put
// U+FFFD in its place and name a different file.
bool IsWellFormed(const Napi::String& value) {
  const std::u16string units = value.Utf16Value();
  for (std::size_t i = 0; i < units.size(); ++i) {
    const char16_t u = units[i];
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 1 >= units.size() || units[i + 1] < 0xDC00 || units[i + 1] > 0xDFFF) return false;
      ++i;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      return false;
    }
  }
  return true;
}

}  // namespace

Handle* HandleArg(const Napi::CallbackInfo& info, std::size_t index, unsigned kinds, Napi::Value& failure) {
  Handle* any = Handle::Any(info[index]);
  if (any == nullptr || (any->kind() & kinds) == 0) {
    failure = FailureValue(info.Env(), Code::invalid_argument);
    return nullptr;
  }
  if (!any->open()) {
    failure = FailureValue(info.Env(), Code::closed);
    return nullptr;
  }
  return any;
}

bool IndexArg(const Napi::Value& value, std::uint64_t& out) {
  if (!value.IsNumber()) return false;
  const double d = value.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d) return false;
  out = static_cast<std::uint64_t>(d);
  return true;
}

bool StringArg(const Napi::Value& value, std::string& out) {
  if (!value.IsString() || !IsWellFormed(value.As<Napi::String>())) return false;
  out = value.As<Napi::String>().Utf8Value();
  return true;
}

bool BytesArg(const Napi::Value& value, ByteView& out) {
  if (value.IsTypedArray()) {
    if (value.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) return false;
    auto bytes = value.As<Napi::Uint8Array>();
    out.data = bytes.Data();
    out.length = bytes.ByteLength();
    return true;
  }
  if (value.IsString()) {
    out.storage = value.As<Napi::String>().Utf8Value();
    out.data = reinterpret_cast<const unsigned char*>(out.storage.data());
    out.length = out.storage.size();
    return true;
  }
  return false;
}

}  // namespace gjc::binding
