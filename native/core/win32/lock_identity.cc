// Lock-file primitives and native directory identity on Windows.
#include <cerrno>
#include <cstdio>
#include <string>

#include "../portable.h"
#include "paths.h"
#include "win_util.h"

namespace gjc {
namespace {

// Windows byte-range locks are mandatory: a lock over the record would stop diagnostics
// from reading it. One byte far beyond any record is locked instead; locking past the end
// of a file is allowed, and the lock goes when the holder's handle does (or it dies).
constexpr std::uint64_t kLockOffset = 0x4000000000000000ULL;

// The 128-bit FileId as 32 hex digits, most significant byte first.
std::string hex_file_id(const FILE_ID_128& id) {
  std::string out;
  char byte[3];
  for (int i = 15; i >= 0; --i) {
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned>(id.Identifier[i]));
    out += byte;
  }
  return out;
}

}  // namespace

Status truncate_file(NativeHandle file) {
  FILE_END_OF_FILE_INFO end{};
  if (!::SetFileInformationByHandle(file, FileEndOfFileInfo, &end, sizeof end)) {
    return win::win32_failure(::GetLastError(), "SetFileInformationByHandle");
  }
  return success();
}

Status lock_file(NativeHandle file) {
  OVERLAPPED ov = win::overlapped_at(kLockOffset);
  if (::LockFileEx(file, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)) return success();
  const DWORD error = ::GetLastError();
  if (error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING) return fail(Code::lock_busy, EAGAIN, "LockFileEx");
  return win::win32_failure(error, "LockFileEx");
}

Status unlock_file(NativeHandle file) {
  OVERLAPPED ov = win::overlapped_at(kLockOffset);
  if (!::UnlockFileEx(file, 0, 1, 0, &ov)) return win::win32_failure(::GetLastError(), "UnlockFileEx");
  return success();
}

Result<DirectoryIdentity> directory_identity(const std::string& path) {
  if (path.empty()) return fail(Code::invalid_argument, EINVAL);
  // UNC spellings and network drive letters are refused here, before any I/O.
  auto parsed = win::parse_local_path(path);
  if (!parsed.ok()) return parsed.failure();
  const std::wstring full = win::join_prefix(parsed.value(), parsed.value().components.size());
  // Links are followed on purpose: an identity names the directory a path leads to.
  auto dir = win::open_path(full, FILE_READ_ATTRIBUTES | SYNCHRONIZE);
  if (!dir.ok()) {
    const Failure& failure = dir.failure();
    if (failure.code == Code::not_found || failure.code == Code::not_directory) return failure;
    return fail(Code::io_error, failure.sys_errno, failure.syscall);
  }
  const HANDLE h = dir.value().get();
  auto local = win::check_local_dir(h);
  if (!local.ok()) return local.failure();
  // The GUID form names the volume itself, so drive letters, subst drives, mount points
  // and junctions that reach one directory all give one canonical path.
  auto guid_path = win::final_path(h, VOLUME_NAME_GUID);
  if (!guid_path.ok()) return fail(Code::identity_unavailable, guid_path.failure().sys_errno, guid_path.failure().syscall);
  auto canonical = win::to_utf8(guid_path.value().data(), guid_path.value().size());
  if (!canonical.ok()) return canonical.failure();
  auto id = win::file_id_of(h);
  if (!id.ok()) return fail(Code::identity_unavailable, id.failure().sys_errno, id.failure().syscall);
  DirectoryIdentity identity;
  identity.platform = "win32";
  identity.canonical_path = std::move(canonical).value();
  identity.dev = std::to_string(static_cast<unsigned long long>(id.value().VolumeSerialNumber));
  identity.ino = hex_file_id(id.value().FileId);
  return identity;
}

}  // namespace gjc
