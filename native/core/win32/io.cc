// Reading, writing, listing, removing and publishing through held Windows handles, lock
// records, and directory identity. Renames go through a handle to the source with the held
// directory as the target root, so no path is resolved twice.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../names.h"
#include "../portable.h"
#include "win_util.h"

#include <ntsecapi.h>  // RtlGenRandom (SystemFunction036 in advapi32)

namespace gjc {
namespace {

OVERLAPPED overlapped_at(std::uint64_t offset) {
  OVERLAPPED ov{};
  ov.Offset = static_cast<DWORD>(offset & 0xFFFFFFFFu);
  ov.OffsetHigh = static_cast<DWORD>(offset >> 32);
  return ov;
}

// ReadFile/WriteFile take a DWORD count; larger requests go in pieces of this size.
constexpr std::size_t kMaxChunk = 1u << 30;

// Writes every byte, in DWORD-sized pieces. `at_end` places each piece at the end of the
// file as the file system sees it at that moment (offset 0xFFFFFFFF:0xFFFFFFFF), like
// O_APPEND.
Result<std::size_t> write_all(HANDLE file, const void* data, std::size_t length, std::uint64_t offset, bool at_end) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (done < length) {
    OVERLAPPED ov = overlapped_at(at_end ? ~std::uint64_t{0} : offset + done);
    DWORD wrote = 0;
    const DWORD chunk = static_cast<DWORD>(std::min(length - done, kMaxChunk));
    if (!::WriteFile(file, bytes + done, chunk, &wrote, &ov)) return win::win32_failure(::GetLastError(), "WriteFile");
    if (wrote == 0) return fail(Code::io_error, EIO, "WriteFile");
    done += wrote;
  }
  return length;
}

EntryType entry_type_of_attributes(DWORD attributes) {
  // Any reparse point counts as a link: we never look behind one to find out what it is.
  if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) return EntryType::symlink;
  if ((attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) return EntryType::directory;
  return EntryType::file;
}

// The name `name` must now lead to exactly the file we wrote.
Status check_published(HANDLE dir, const std::wstring& name, HANDLE written) {
  auto named = win::open_relative(dir, name, {FILE_READ_ATTRIBUTES});
  if (!named.ok()) return named.failure();
  auto a = win::file_id_of(named.value().get());
  if (!a.ok()) return a.failure();
  auto b = win::file_id_of(written);
  if (!b.ok()) return b.failure();
  // Both names are in `dir`, so both objects are on its volume and the FileId alone decides.
  // (Comparing serials would also trip over wine, whose handles report serial 0 once the
  // file they name has been renamed.)
  if (std::memcmp(&a.value().FileId, &b.value().FileId, sizeof(FILE_ID_128)) != 0) {
    return fail(Code::identity_mismatch, 0, "GetFileInformationByHandleEx");
  }
  return success();
}

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

Result<std::vector<DirEntry>> read_entries(NativeHandle dir) {
  // A second handle to the same directory carries its own enumeration position, so
  // listing never disturbs (or is disturbed by) another listing of the held handle.
  auto own = win::reopen(dir, FILE_LIST_DIRECTORY, true);
  if (!own.ok()) return own.failure();
  std::vector<std::uint64_t> buffer(64 * 1024 / sizeof(std::uint64_t));
  const DWORD bytes = static_cast<DWORD>(buffer.size() * sizeof(std::uint64_t));
  std::vector<DirEntry> entries;
  FILE_INFO_BY_HANDLE_CLASS info_class = FileIdBothDirectoryRestartInfo;
  for (;;) {
    if (!::GetFileInformationByHandleEx(own.value().get(), info_class, buffer.data(), bytes)) {
      const DWORD error = ::GetLastError();
      if (error == ERROR_NO_MORE_FILES) break;
      return win::win32_failure(error, "GetFileInformationByHandleEx");
    }
    info_class = FileIdBothDirectoryInfo;
    const auto* base = reinterpret_cast<const unsigned char*>(buffer.data());
    for (std::size_t at = 0;;) {
      const auto* entry = reinterpret_cast<const FILE_ID_BOTH_DIR_INFO*>(base + at);
      const std::size_t length = entry->FileNameLength / sizeof(wchar_t);
      const std::wstring_view name(entry->FileName, length);
      if (name != L"." && name != L"..") {
        // A name that is not valid UTF-16 cannot be named back to us; failing the whole
        // listing is safer than a replacement character that aliases another entry.
        auto utf8 = win::to_utf8(entry->FileName, length);
        if (!utf8.ok()) return utf8.failure();
        entries.push_back(DirEntry{std::move(utf8).value(), entry_type_of_attributes(entry->FileAttributes)});
      }
      if (entry->NextEntryOffset == 0) break;
      at += entry->NextEntryOffset;
    }
  }
  return entries;
}

// Every name read_entries returns is valid UTF-8 already: to_utf8 refuses the rest.
Result<std::vector<DirEntry>> list_directory(NativeHandle dir) { return read_entries(dir); }

Result<StatInfo> stat_entry(NativeHandle dir, std::string_view name) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  auto opened = win::open_relative(dir, wide.value(), {FILE_READ_ATTRIBUTES});
  if (!opened.ok()) return opened.failure();
  return win::stat_of(opened.value().get());
}

Result<StatInfo> stat_handle(NativeHandle handle) { return win::stat_of(handle); }

Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length, std::uint64_t offset) {
  OVERLAPPED ov = overlapped_at(offset);
  DWORD got = 0;
  const DWORD want = static_cast<DWORD>(std::min(length, kMaxChunk));
  if (!::ReadFile(file, buffer, want, &got, &ov)) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_HANDLE_EOF) return std::size_t{0};
    return win::win32_failure(error, "ReadFile");
  }
  return static_cast<std::size_t>(got);
}

Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length, std::uint64_t offset) {
  return write_all(file, data, length, offset, false);
}

Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length) {
  return write_all(file, data, length, 0, true);
}

Status sync_handle(NativeHandle handle) {
  auto facts = win::facts_of(handle);
  if (!facts.ok()) return facts.failure();
  // Windows has no directory fsync: a rename is made durable by the file system's own
  // journal, and FlushFileBuffers on a directory handle is refused.
  if (facts.value().directory) return success();
  if (!::FlushFileBuffers(handle)) {
    const DWORD error = ::GetLastError();
    // A handle without write access cannot have dirtied the file, and FlushFileBuffers
    // refuses it; the writer's handle is the one whose sync matters.
    if (error == ERROR_ACCESS_DENIED) return success();
    return win::win32_failure(error, "FlushFileBuffers");
  }
  return success();
}

Status unlink_file(NativeHandle dir, std::string_view name) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  // FILE_NON_DIRECTORY_FILE turns a directory into not_regular_file; a reparse point is
  // opened (and removed) as itself, like unlinkat on a symlink.
  auto opened = win::open_relative(dir, wide.value(),
                                   {DELETE | FILE_READ_ATTRIBUTES, win::kShareAll, FILE_OPEN, FILE_NON_DIRECTORY_FILE});
  if (!opened.ok()) return opened.failure();
  return win::delete_handle(opened.value().get());
}

Status set_file_times(NativeHandle file, std::int64_t atime_ns, std::int64_t mtime_ns) {
  // Zero would mean "leave unchanged", so it is out of range too.
  const std::int64_t atime = atime_ns / 100 + win::kTicksFrom1601To1970;
  const std::int64_t mtime = mtime_ns / 100 + win::kTicksFrom1601To1970;
  if (atime <= 0 || mtime <= 0) return fail(Code::invalid_argument, EINVAL);
  // The held handle has no FILE_WRITE_ATTRIBUTES: a second one to the same object gets it.
  auto writer = win::reopen(file, FILE_WRITE_ATTRIBUTES, false);
  if (!writer.ok()) return writer.failure();
  FILE_BASIC_INFO info{};
  info.LastAccessTime.QuadPart = atime;
  info.LastWriteTime.QuadPart = mtime;
  if (!::SetFileInformationByHandle(writer.value().get(), FileBasicInfo, &info, sizeof(info))) {
    return win::win32_failure(::GetLastError(), "SetFileInformationByHandle");
  }
  return success();
}

std::uint64_t random_u64() noexcept {
  std::uint64_t value = 0;
  if (!RtlGenRandom(&value, sizeof value)) {
    // The exclusive create refuses a collision, so a weaker source is still safe here.
    LARGE_INTEGER ticks{};
    ::QueryPerformanceCounter(&ticks);
    value = static_cast<std::uint64_t>(ticks.QuadPart) ^ (static_cast<std::uint64_t>(::GetCurrentProcessId()) << 32);
  }
  return value;
}

Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to) {
  auto source = win::wide_name(from);
  if (!source.ok()) return source.failure();
  auto target = win::wide_name(to);
  if (!target.ok()) return target.failure();
  auto moving = win::open_relative(dir, source.value(), {DELETE | FILE_READ_ATTRIBUTES});
  if (!moving.ok()) return moving.failure();
  // The held directory needs no sync on Windows (see sync_handle).
  return win::rename_handle(moving.value().get(), dir, target.value(), false);
}

Status publish_staged(NativeHandle dir, NativeHandle file, const std::string&, std::string_view name, bool no_replace) {
  auto target = win::wide_name(name);
  if (!target.ok()) return target.failure();
  auto mover = win::reopen(file, DELETE | FILE_READ_ATTRIBUTES, false);
  if (!mover.ok()) return mover.failure();
  auto renamed = win::rename_handle(mover.value().get(), dir, target.value(), !no_replace);
  if (!renamed.ok()) return renamed;
  return check_published(dir, target.value(), file);
}

void discard_staged(NativeHandle dir, NativeHandle file, const std::string&, std::string_view name) {
  // Removed through its own handle: whatever the names lead to now, only our temporary
  // (if it was not published) is deleted.
  auto doomed = win::reopen(file, DELETE, false);
  auto target = win::wide_name(name);
  // An invalid name published nothing, so the temporary is ours to delete.
  if (doomed.ok() && (!target.ok() || !check_published(dir, target.value(), file).ok())) {
    win::delete_handle(doomed.value().get());
  }
}

Status truncate_file(NativeHandle file) {
  FILE_END_OF_FILE_INFO end{};
  if (!::SetFileInformationByHandle(file, FileEndOfFileInfo, &end, sizeof end)) {
    return win::win32_failure(::GetLastError(), "SetFileInformationByHandle");
  }
  return success();
}

Status lock_file(NativeHandle file) {
  OVERLAPPED ov = overlapped_at(kLockOffset);
  if (::LockFileEx(file, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)) return success();
  const DWORD error = ::GetLastError();
  if (error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING) return fail(Code::lock_busy, EAGAIN, "LockFileEx");
  return win::win32_failure(error, "LockFileEx");
}

Status unlock_file(NativeHandle file) {
  OVERLAPPED ov = overlapped_at(kLockOffset);
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
  if (!guid_path.ok())
    return fail(Code::identity_unavailable, guid_path.failure().sys_errno, guid_path.failure().syscall);
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
