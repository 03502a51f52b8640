// Failure codes and the result type shared by every platform file. Core code never throws:
// each operation returns a value or a Failure naming a stable reason code, the OS error
// behind it and the call that produced it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace gjc {

// Stable reason codes. The string spellings (code_name) are public API: the TS union
// SecureFsErrorCode and the README table list exactly these.
enum class Code : std::uint8_t {
  invalid_name,          // a component failed validation; no syscall was made
  invalid_argument,      // a malformed argument other than a name (empty path, NUL, range)
  not_found,             // the entry does not exist (and creation was not asked for)
  already_exists,        // exclusive create or no-replace publish found the name taken
  symlink_refused,       // a symbolic link sat where a directory or file was expected
  not_directory,         // a non-directory sat where a directory was expected
  not_regular_file,      // a directory, FIFO, socket or device sat where a file was expected
  hardlink_refused,      // a managed file has more than one link
  owner_mismatch,        // owner is not the effective user
  mode_mismatch,         // permission bits are not exactly 0700 (dir) / 0600 (file)
  acl_present,           // an ACL is stored on the object
  acl_malformed,         // ACL bytes were returned but do not parse
  acl_denied,            // reading the ACL was refused (EACCES/EPERM)
  acl_io_error,          // reading the ACL failed with EIO
  acl_unknown,           // any other ACL answer, or answers that disagree
  identity_mismatch,     // the object changed identity between two checks
  permission_denied,     // the OS refused the operation (EACCES/EPERM)
  lock_busy,             // another open file description holds the lock
  not_utf8,              // a path the OS returned is not valid UTF-8
  network_unsupported,   // the object lives on a network volume we do not trust
  insecure_ancestor,     // a directory above a trusted root can be replaced by another user
  identity_unavailable,  // the OS could not give a stable identity
  too_large,             // a bounded read found more data than the bound allows
  closed,                // the handle was closed before use
  io_error,              // any other OS failure; errno/syscall say which
};

// The public spelling of a code, e.g. "symlink_refused".
const char* code_name(Code code) noexcept;

// The reason code of a C-runtime errno from a call on a managed path (io_error for the rest),
// the same on every platform.
Code code_of_errno(int error) noexcept;

// Which attribute check produced an ACL failure or the evidence.
enum class Attribute : std::uint8_t { none, access_acl, default_acl };
const char* attribute_name(Attribute attribute) noexcept;

// A failed operation. sys_errno is a C-runtime errno value (0 when the failure is a policy
// decision rather than an OS error); syscall is a static string naming the failed call.
struct Failure {
  Code code = Code::io_error;
  int sys_errno = 0;
  const char* syscall = "";
  Attribute attribute = Attribute::none;
};

inline Failure fail(Code code, int sys_errno = 0, const char* syscall = "", Attribute attribute = Attribute::none) {
  return Failure{code, sys_errno, syscall, attribute};
}

template <class T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Failure failure) : state_(std::move(failure)) {}  // NOLINT: implicit by design
  bool ok() const noexcept { return state_.index() == 0; }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const Failure& failure() const { return std::get<1>(state_); }

 private:
  std::variant<T, Failure> state_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status success() { return Unit{}; }

}  // namespace gjc
