#include "win_util.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "../names.h"

namespace gjc {

void close_native_handle(NativeHandle handle) noexcept { ::CloseHandle(handle); }

namespace win {
namespace {

// NTSTATUS values we branch on. ntstatus.h clashes with winnt.h unless every includer
// agrees on WIN32_NO_STATUS, so the few we need are spelled out here.
constexpr NTSTATUS kStatusInvalidInfoClass = static_cast<NTSTATUS>(0xC0000003L);
constexpr NTSTATUS kStatusNotImplemented = static_cast<NTSTATUS>(0xC0000002L);
constexpr NTSTATUS kStatusInvalidParameter = static_cast<NTSTATUS>(0xC000000DL);
constexpr NTSTATUS kStatusNotSupported = static_cast<NTSTATUS>(0xC00000BBL);
constexpr NTSTATUS kStatusFileIsADirectory = static_cast<NTSTATUS>(0xC00000BAL);
constexpr NTSTATUS kStatusNotADirectory = static_cast<NTSTATUS>(0xC0000103L);
constexpr NTSTATUS kStatusStoppedOnSymlink = static_cast<NTSTATUS>(0x80000603L);
constexpr NTSTATUS kStatusReparsePointEncountered = static_cast<NTSTATUS>(0xC000050BL);

// Win32 error 681, missing from some SDK headers.
constexpr DWORD kErrorStoppedOnSymlink = 681;

// Information classes of NtSetInformationFile (wdm.h values; not in every winternl.h).
constexpr int kFileRenameInformation = 10;
constexpr int kFileDispositionInformation = 13;
constexpr int kFileDispositionInformationEx = 64;
constexpr int kFileRenameInformationEx = 65;
constexpr ULONG kRenameReplaceIfExists = 0x1;
constexpr ULONG kRenamePosixSemantics = 0x2;
constexpr ULONG kDispositionDelete = 0x1;
constexpr ULONG kDispositionPosixSemantics = 0x2;
constexpr ULONG kDispositionIgnoreReadonly = 0x10;

// FILE_RENAME_INFORMATION and its Ex form share one layout: a BOOLEAN or ULONG at the start.
struct RenameInformation {
  union {
    BOOLEAN replace_if_exists;
    ULONG flags;
  } mode;
  HANDLE root_directory;
  ULONG file_name_length;
  WCHAR file_name[1];
};

using NtCreateFileFn = NTSTATUS(NTAPI*)(PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
                                        ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
using NtSetInformationFileFn = NTSTATUS(NTAPI*)(HANDLE, PIO_STATUS_BLOCK, PVOID, ULONG, int);
using RtlNtStatusToDosErrorFn = ULONG(NTAPI*)(NTSTATUS);

// ntdll is mapped into every process; resolving the three entry points at run time keeps
// the build free of ntdll.lib and of winternl.h differences between MSVC and mingw.
struct NtApi {
  NtCreateFileFn create_file = nullptr;
  NtSetInformationFileFn set_information_file = nullptr;
  RtlNtStatusToDosErrorFn status_to_dos_error = nullptr;
};

template <class Fn>
Fn ntdll_entry(const char* name) {
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  if (ntdll == nullptr) return nullptr;
  // A FARPROC must be cast to its real type; going through void* silences -Wcast-function-type.
  return reinterpret_cast<Fn>(reinterpret_cast<void*>(::GetProcAddress(ntdll, name)));
}

const NtApi& nt() {
  static const NtApi api{ntdll_entry<NtCreateFileFn>("NtCreateFile"),
                         ntdll_entry<NtSetInformationFileFn>("NtSetInformationFile"),
                         ntdll_entry<RtlNtStatusToDosErrorFn>("RtlNtStatusToDosError")};
  return api;
}

// Statuses meaning "this information class is not available here", the only ones that may
// send a rename or delete to its older fallback.
bool class_unavailable(NTSTATUS status) {
  return status == kStatusInvalidInfoClass || status == kStatusNotImplemented || status == kStatusInvalidParameter ||
         status == kStatusNotSupported;
}

Failure missing_ntdll(const char* call) { return fail(Code::io_error, ENOSYS, call); }

NTSTATUS set_information(HANDLE handle, void* info, ULONG size, int info_class) {
  IO_STATUS_BLOCK io{};
  return nt().set_information_file(handle, &io, info, size, info_class);
}

template <class T>
Status query(HANDLE handle, FILE_INFO_BY_HANDLE_CLASS info_class, T& out) {
  if (::GetFileInformationByHandleEx(handle, info_class, &out, sizeof out)) return success();
  return win32_failure(::GetLastError(), "GetFileInformationByHandleEx");
}

}  // namespace

int errno_of(DWORD error) noexcept {
  static constexpr std::pair<DWORD, int> kErrnoOf[] = {
      {ERROR_FILE_NOT_FOUND, ENOENT},
      {ERROR_PATH_NOT_FOUND, ENOENT},
      {ERROR_INVALID_DRIVE, ENOENT},
      {ERROR_DELETE_PENDING, ENOENT},
      {ERROR_NOT_READY, ENOENT},
      {ERROR_ACCESS_DENIED, EACCES},
      {ERROR_INVALID_ACCESS, EACCES},
      {ERROR_NETWORK_ACCESS_DENIED, EACCES},
      {ERROR_PRIVILEGE_NOT_HELD, EPERM},
      {ERROR_ALREADY_EXISTS, EEXIST},
      {ERROR_FILE_EXISTS, EEXIST},
      {ERROR_DIRECTORY, ENOTDIR},
      {ERROR_CANT_ACCESS_FILE, ELOOP},
      {ERROR_CANT_RESOLVE_FILENAME, ELOOP},
      {kErrorStoppedOnSymlink, ELOOP},
      {ERROR_FILENAME_EXCED_RANGE, ENAMETOOLONG},
      {ERROR_BUFFER_OVERFLOW, ENAMETOOLONG},
      {ERROR_INVALID_NAME, EINVAL},
      {ERROR_BAD_PATHNAME, EINVAL},
      {ERROR_INVALID_PARAMETER, EINVAL},
      {ERROR_DISK_FULL, ENOSPC},
      {ERROR_HANDLE_DISK_FULL, ENOSPC},
      {ERROR_NOT_SUPPORTED, ENOTSUP},
      {ERROR_INVALID_FUNCTION, ENOTSUP},
      {ERROR_LOCK_VIOLATION, EBUSY},
      {ERROR_SHARING_VIOLATION, EBUSY},
      {ERROR_NOT_SAME_DEVICE, EXDEV},
      {ERROR_DIR_NOT_EMPTY, ENOTEMPTY},
      {ERROR_INVALID_HANDLE, EBADF},
      {ERROR_NOT_ENOUGH_MEMORY, ENOMEM},
      {ERROR_OUTOFMEMORY, ENOMEM},
  };
  for (const auto& [win32, e] : kErrnoOf) {
    if (win32 == error) return e;
  }
  return EIO;
}

Failure win32_failure(DWORD error, const char* call) {
  const int e = errno_of(error);
  if (error == ERROR_INVALID_NAME || error == ERROR_BAD_PATHNAME) return fail(Code::invalid_name, e, call);
  return fail(code_of_errno(e), e, call);
}

Result<std::wstring> to_wide(std::string_view utf8, Code on_invalid) {
  if (utf8.empty()) return std::wstring();
  if (utf8.size() > 0x7FFFFFFF) return fail(Code::invalid_argument, EINVAL, "MultiByteToWideChar");
  const int in = static_cast<int>(utf8.size());
  const int n = ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), in, nullptr, 0);
  if (n <= 0) return fail(on_invalid, EILSEQ, "MultiByteToWideChar");
  std::wstring wide(static_cast<std::size_t>(n), L'\0');
  if (::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), in, &wide[0], n) != n) {
    return fail(on_invalid, EILSEQ, "MultiByteToWideChar");
  }
  return wide;
}

Result<std::string> to_utf8(const wchar_t* text, std::size_t length) {
  if (length == 0) return std::string();
  if (length > 0x7FFFFFFF) return fail(Code::not_utf8, EILSEQ, "WideCharToMultiByte");
  const int in = static_cast<int>(length);
  const int n = ::WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, text, in, nullptr, 0, nullptr, nullptr);
  if (n <= 0) return fail(Code::not_utf8, EILSEQ, "WideCharToMultiByte");
  std::string out(static_cast<std::size_t>(n), '\0');
  if (::WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, text, in, &out[0], n, nullptr, nullptr) != n) {
    return fail(Code::not_utf8, EILSEQ, "WideCharToMultiByte");
  }
  return out;
}

Result<std::wstring> wide_name(std::string_view name) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  return to_wide(name, Code::invalid_name);
}

Result<std::wstring> final_path(HANDLE handle, DWORD volume_form) {
  std::wstring buffer(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetFinalPathNameByHandleW(handle, &buffer[0], static_cast<DWORD>(buffer.size()),
                                                FILE_NAME_NORMALIZED | volume_form);
    if (n == 0) return win32_failure(::GetLastError(), "GetFinalPathNameByHandleW");
    // On success n excludes the NUL; when the buffer is too small it is the size needed.
    if (n < buffer.size()) {
      buffer.resize(n);
      return buffer;
    }
    buffer.assign(n + 1, L'\0');
  }
}

namespace {

Failure nt_failure(NTSTATUS status, const char* call) {
  // These statuses lose their meaning in RtlNtStatusToDosError (a directory where a file was
  // asked for becomes ERROR_ACCESS_DENIED), so they are mapped first.
  if (status == kStatusFileIsADirectory) return fail(Code::not_regular_file, EISDIR, call);
  if (status == kStatusNotADirectory) return fail(Code::not_directory, ENOTDIR, call);
  if (status == kStatusStoppedOnSymlink || status == kStatusReparsePointEncountered) {
    return fail(Code::symlink_refused, ELOOP, call);
  }
  if (nt().status_to_dos_error == nullptr) return fail(Code::io_error, EIO, call);
  return win32_failure(nt().status_to_dos_error(status), call);
}

Status set_status(NTSTATUS status) {
  return NT_SUCCESS(status) ? success() : Status(nt_failure(status, "NtSetInformationFile"));
}

// symlink_refused unless `child`'s final path is `parent`'s final path plus `name`. Defence
// in depth behind FILE_OPEN_REPARSE_POINT: whatever redirected the open (a file system or
// filter that follows links anyway, as wine does with unix symlinks), the handle we keep is
// the entry the name denotes in the held directory, never an object elsewhere.
Status confirm_reached_by_name(HANDLE parent, HANDLE child, const std::wstring& name) {
  // NT names need no mount-manager query: the cheapest final-path form.
  auto above = final_path(parent, VOLUME_NAME_NT);
  if (!above.ok()) return above.failure();
  auto here = final_path(child, VOLUME_NAME_NT);
  if (!here.ok()) return here.failure();
  std::wstring expected_dir = above.value();
  if (expected_dir.empty() || expected_dir.back() != L'\\') expected_dir += L'\\';
  const std::wstring& got = here.value();
  // The directory part must match exactly (both come from the same normalisation); the
  // last component case-insensitively, as the open itself was (OBJ_CASE_INSENSITIVE).
  const bool same_dir = got.size() > expected_dir.size() && got.compare(0, expected_dir.size(), expected_dir) == 0;
  const std::wstring last = same_dir ? got.substr(expected_dir.size()) : std::wstring();
  if (!same_dir || ::CompareStringOrdinal(last.c_str(), static_cast<int>(last.size()), name.c_str(),
                                          static_cast<int>(name.size()), TRUE) != CSTR_EQUAL) {
    return fail(Code::symlink_refused, ELOOP, "GetFinalPathNameByHandleW");
  }
  return success();
}

}  // namespace

Result<OwnedHandle> open_relative(HANDLE parent, const std::wstring& name, const RelativeOpen& how) {
  if (nt().create_file == nullptr) return missing_ntdll("NtCreateFile");
  if (name.size() > 0x7FFF) return fail(Code::invalid_name, ENAMETOOLONG, "NtCreateFile");
  UNICODE_STRING object_name;
  object_name.Buffer = name.empty() ? nullptr : const_cast<PWSTR>(name.data());
  object_name.Length = static_cast<USHORT>(name.size() * sizeof(wchar_t));
  object_name.MaximumLength = object_name.Length;
  OBJECT_ATTRIBUTES attributes;
  // No OBJ_INHERIT: the handle is never inherited by a child process.
  InitializeObjectAttributes(&attributes, &object_name, OBJ_CASE_INSENSITIVE, parent, how.security);
  IO_STATUS_BLOCK io{};
  HANDLE opened = INVALID_HANDLE_VALUE;
  const NTSTATUS status = nt().create_file(
      &opened, how.access | SYNCHRONIZE, &attributes, &io, nullptr, FILE_ATTRIBUTE_NORMAL, how.share, how.disposition,
      how.options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT, nullptr, 0);
  if (!NT_SUCCESS(status)) return nt_failure(status, "NtCreateFile");
  OwnedHandle held(opened);
  if (!name.empty()) {
    auto reached = confirm_reached_by_name(parent, held.get(), name);
    if (!reached.ok()) return reached.failure();
  }
  return held;
}

Result<OwnedHandle> open_path(const std::wstring& path, ACCESS_MASK access) {
  // bInheritHandle is FALSE (no SECURITY_ATTRIBUTES): never inherited by a child.
  OwnedHandle opened(
      ::CreateFileW(path.c_str(), access, kShareAll, nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
  if (!opened.valid()) return win32_failure(::GetLastError(), "CreateFileW");
  return opened;
}

Result<OwnedHandle> reopen(HANDLE handle, ACCESS_MASK access, bool directory) {
  const ULONG type = directory ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE;
  return open_relative(handle, std::wstring(), {access, kShareAll, FILE_OPEN, type});
}

Status rename_handle(HANDLE handle, HANDLE dir, const std::wstring& name, bool replace) {
  if (nt().set_information_file == nullptr) return missing_ntdll("NtSetInformationFile");
  const std::size_t bytes = name.size() * sizeof(wchar_t);
  const std::size_t size = offsetof(RenameInformation, file_name) + bytes;
  // Backed by 8-byte words so the HANDLE member is aligned.
  std::vector<std::uint64_t> storage((size + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t) + 1);
  auto* info = reinterpret_cast<RenameInformation*>(storage.data());
  info->root_directory = dir;
  info->file_name_length = static_cast<ULONG>(bytes);
  std::memcpy(info->file_name, name.data(), bytes);
  if (replace) {
    // POSIX semantics let the rename replace a target that others hold open (shared for
    // delete), as rename(2) does; only where the class is missing do we use the old one.
    info->mode.flags = kRenameReplaceIfExists | kRenamePosixSemantics;
    const NTSTATUS ex = set_information(handle, info, static_cast<ULONG>(size), kFileRenameInformationEx);
    if (!class_unavailable(ex)) return set_status(ex);
    info->mode.flags = 0;
    info->mode.replace_if_exists = TRUE;
  } else {
    // Without ReplaceIfExists the existence check and the rename are one step in the file
    // system: a taken name fails with STATUS_OBJECT_NAME_COLLISION and is left alone.
    info->mode.flags = 0;
  }
  return set_status(set_information(handle, info, static_cast<ULONG>(size), kFileRenameInformation));
}

Status delete_handle(HANDLE handle) {
  if (nt().set_information_file == nullptr) return missing_ntdll("NtSetInformationFile");
  ULONG flags = kDispositionDelete | kDispositionPosixSemantics | kDispositionIgnoreReadonly;
  const NTSTATUS ex = set_information(handle, &flags, sizeof flags, kFileDispositionInformationEx);
  if (!class_unavailable(ex)) return set_status(ex);
  BOOLEAN delete_file = TRUE;
  return set_status(set_information(handle, &delete_file, sizeof delete_file, kFileDispositionInformation));
}

Result<HandleFacts> facts_of(HANDLE handle) {
  FILE_ATTRIBUTE_TAG_INFO tag{};
  FILE_STANDARD_INFO standard{};
  auto queried = query(handle, FileAttributeTagInfo, tag);
  if (queried.ok()) queried = query(handle, FileStandardInfo, standard);
  if (!queried.ok()) return queried.failure();
  HandleFacts facts;
  facts.reparse_point = (tag.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0;
  facts.directory = (tag.FileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  facts.links = standard.NumberOfLinks;
  facts.size = static_cast<std::uint64_t>(standard.EndOfFile.QuadPart);
  ::SetLastError(NO_ERROR);
  facts.file_type = ::GetFileType(handle);
  if (facts.file_type == FILE_TYPE_UNKNOWN && ::GetLastError() != NO_ERROR) {
    return win32_failure(::GetLastError(), "GetFileType");
  }
  return facts;
}

Result<FILE_ID_INFO> file_id_of(HANDLE handle) {
  FILE_ID_INFO id{};
  auto queried = query(handle, FileIdInfo, id);
  if (!queried.ok()) return queried.failure();
  return id;
}

Result<StatInfo> stat_of(HANDLE handle) {
  auto facts = facts_of(handle);
  if (!facts.ok()) return facts.failure();
  FILE_BASIC_INFO basic{};
  auto queried = query(handle, FileBasicInfo, basic);
  if (!queried.ok()) return queried.failure();
  StatInfo info;
  const HandleFacts& f = facts.value();
  if (f.reparse_point) {
    info.type = EntryType::symlink;
  } else if (f.directory) {
    info.type = EntryType::directory;
  } else {
    info.type = f.file_type == FILE_TYPE_DISK   ? EntryType::file
                : f.file_type == FILE_TYPE_CHAR ? EntryType::char_device
                : f.file_type == FILE_TYPE_PIPE ? EntryType::fifo
                                                : EntryType::unknown;
  }
  auto id = file_id_of(handle);
  if (id.ok()) {
    info.dev = id.value().VolumeSerialNumber;
    std::memcpy(&info.ino, id.value().FileId.Identifier, sizeof info.ino);
  } else {
    // File systems without FileIdInfo still give the 32-bit serial and 64-bit index. The
    // two kinds are never mixed for one volume, because the answer depends on the volume.
    BY_HANDLE_FILE_INFORMATION legacy{};
    if (!::GetFileInformationByHandle(handle, &legacy)) {
      return win32_failure(::GetLastError(), "GetFileInformationByHandle");
    }
    info.dev = legacy.dwVolumeSerialNumber;
    info.ino = (static_cast<std::uint64_t>(legacy.nFileIndexHigh) << 32) | legacy.nFileIndexLow;
  }
  info.size = f.size;
  info.nlink = f.links;
  auto unix_ns = [](const LARGE_INTEGER& ticks) { return (ticks.QuadPart - kTicksFrom1601To1970) * 100; };
  info.atime_ns = unix_ns(basic.LastAccessTime);
  info.mtime_ns = unix_ns(basic.LastWriteTime);
  info.ctime_ns = unix_ns(basic.ChangeTime);
  return info;
}

}  // namespace win
}  // namespace gjc
