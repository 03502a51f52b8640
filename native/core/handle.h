// The RAII owner of one OS descriptor or handle. Every descriptor the core opens lives in
// one of these from the moment the OS returns it, so no early return can leak it.
#pragma once

#include <cstdint>

namespace gjc {

#if defined(_WIN32)
using NativeHandle = void*;  // a Win32 HANDLE
inline NativeHandle invalid_native_handle() noexcept { return reinterpret_cast<void*>(-1); }
#else
using NativeHandle = int;  // a POSIX file descriptor
inline NativeHandle invalid_native_handle() noexcept { return -1; }
#endif

// Releases one handle; implemented once per platform. Errors from close are ignored on
// purpose: after close returns the descriptor is gone either way (POSIX 2024, Linux).
void close_native_handle(NativeHandle handle) noexcept;

class OwnedHandle {
 public:
  OwnedHandle() noexcept = default;
  explicit OwnedHandle(NativeHandle handle) noexcept : handle_(handle) {}
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  OwnedHandle(OwnedHandle&& other) noexcept : handle_(other.release()) {}
  OwnedHandle& operator=(OwnedHandle&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ~OwnedHandle() { reset(); }

  bool valid() const noexcept { return handle_ != invalid_native_handle(); }
  NativeHandle get() const noexcept { return handle_; }
  NativeHandle release() noexcept {
    NativeHandle h = handle_;
    handle_ = invalid_native_handle();
    return h;
  }
  void reset(NativeHandle next = invalid_native_handle()) noexcept {
    if (valid()) close_native_handle(handle_);
    handle_ = next;
  }

 private:
  NativeHandle handle_ = invalid_native_handle();
};

}  // namespace gjc
