// Conversions between core values and JS values, and the handle class JS holds. No policy
// lives here: every decision is made in native/core.
#pragma once

#include <napi.h>

#include <string>

#include "../core/handle.h"
#include "../core/platform.h"
#include "../core/result.h"

namespace gjc::binding {

// The kinds of handle, as bits so an argument can accept several.
enum HandleKind : unsigned { kDirectory = 1, kFile = 2, kLock = 4 };

// A JS object owning one open descriptor. JS never sees the number itself, so it cannot
// close it twice or pass a foreign one.
class Handle : public Napi::ObjectWrap<Handle> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit Handle(const Napi::CallbackInfo& info);

  static Napi::Value Wrap(Napi::Env env, OwnedHandle owned, HandleKind kind);
  // Any Handle in `value` (open or closed), else nullptr.
  static Handle* Any(const Napi::Value& value);

  NativeHandle native() const { return owned_.get(); }
  // False once closed, and as soon as a close was asked for while work was in flight.
  bool open() const { return owned_.valid() && !close_pending_; }
  HandleKind kind() const { return kind_; }
  void Close();

  // Work on a thread-pool thread uses the descriptor: while pinned, Close() only marks the
  // handle closed, and the descriptor is released when the last work unpins it, so its
  // number can never be reused under running work.
  void Pin() { ++pins_; }
  void Unpin();

 private:
  Napi::Value IsOpen(const Napi::CallbackInfo& info);
  void Release();
  OwnedHandle owned_;
  HandleKind kind_ = kDirectory;
  int pins_ = 0;
  bool close_pending_ = false;
};

// {failed: true, code, errno, syscall, attribute?}
Napi::Value FailureValue(Napi::Env env, const Failure& failure);
inline Napi::Value FailureValue(Napi::Env env, Code code) { return FailureValue(env, fail(code)); }

// Evidence as one small number, access * 3 + default (each an Evidence value), so the hot
// verify path allocates nothing; TypeScript maps it to a shared frozen object.
Napi::Value EvidenceCode(Napi::Env env, const VerifyEvidence& evidence);
Napi::Value StatValue(Napi::Env env, const StatInfo& info);
Napi::Value IdentityValue(Napi::Env env, const DirectoryIdentity& identity);

// The open handle argument `info[index]` of one of `kinds` (HandleKind bits), or nullptr with
// `failure` set to why there is none (invalid_argument, or closed).
Handle* HandleArg(const Napi::CallbackInfo& info, std::size_t index, unsigned kinds, Napi::Value& failure);

// A non-negative integer argument that a double represents exactly.
bool IndexArg(const Napi::Value& value, std::uint64_t& out);

// Reads a JS string argument into `out` as UTF-8; false when it is not a string or holds a
// lone surrogate. Strings holding NUL are returned as-is: the core's validation rejects them.
bool StringArg(const Napi::Value& value, std::string& out);

// The bytes of a Uint8Array/Buffer argument (viewed in place), or of a string (its UTF-8
// copy, held in `storage`).
struct ByteView {
  std::string storage;
  const unsigned char* data = nullptr;
  std::size_t length = 0;
};

// Fills `out`; false when `value` is neither a Uint8Array nor a string.
bool BytesArg(const Napi::Value& value, ByteView& out);

}  // namespace gjc::binding
