// Helpers shared by the Windows platform files: UTF-8/UTF-16 conversion, Win32 and NTSTATUS
// errors as Failures, handle-relative opens, the facts a verify needs from a handle, path
// parsing and the owner-only security.
#pragma once

// FileIdInfo and the other by-handle classes we use are declared only for Windows 8 and later.
#if !defined(_WIN32_WINNT) || _WIN32_WINNT < 0x0A00
#undef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <winternl.h>

// MSVC's winternl.h leaves this to ntdef.h, which cannot be included beside windows.h.
#ifndef NT_SUCCESS
#define NT_SUCCESS(status) (static_cast<NTSTATUS>(status) >= 0)
#endif

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../platform.h"
#include "../result.h"

namespace gjc::win {

// A Win32 error code as a Failure: the errno closest to it and the reason code that errno
// has on POSIX, so callers see the same codes on every platform.
Failure win32_failure(DWORD error, const char* call);
int errno_of(DWORD error) noexcept;

// Strict conversions: invalid UTF-8 in, or an unpaired surrogate out, is an error rather
// than a silently replaced character. The failure code is the caller's choice.
Result<std::wstring> to_wide(std::string_view utf8, Code on_invalid);
Result<std::string> to_utf8(const wchar_t* text, std::size_t length);

// One entry name, validated (invalid_name) and converted for NtCreateFile.
Result<std::wstring> wide_name(std::string_view name);

constexpr ULONG kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

// How to open one name below a held directory with NtCreateFile.
struct RelativeOpen {
  ACCESS_MASK access = 0;
  ULONG share = kShareAll;
  ULONG disposition = FILE_OPEN;            // FILE_OPEN or FILE_CREATE; never an overwriting one
  ULONG options = 0;                        // added to FILE_OPEN_REPARSE_POINT|FILE_SYNCHRONOUS_IO_NONALERT
  PSECURITY_DESCRIPTOR security = nullptr;  // applied only when the object is created
};

// Opens `name` (one validated component) relative to `parent`, never following a final
// reparse point (FILE_OPEN_REPARSE_POINT), never inheritable (no OBJ_INHERIT). `name` holds
// no separator, so no other component is resolved by name. The opened object is then
// confirmed to be `parent`\`name` itself.
Result<OwnedHandle> open_relative(HANDLE parent, const std::wstring& name, const RelativeOpen& how);

// Opens an absolute \\?\ path with CreateFileW (links in it are followed), never inheritable.
Result<OwnedHandle> open_path(const std::wstring& path, ACCESS_MASK access);

// The normalised final path of an open handle in the VOLUME_NAME_* form asked for.
Result<std::wstring> final_path(HANDLE handle, DWORD volume_form);

// Opens the object behind `handle` again with other access rights (an empty name relative
// to the handle, as ReOpenFile does): the same object by construction, no path involved.
Result<OwnedHandle> reopen(HANDLE handle, ACCESS_MASK access, bool directory);

// Renames the object open as `handle` to `name` in directory `dir`. With `replace` an
// existing entry is replaced (POSIX semantics where the OS has them); without it an
// existing entry makes the call fail with already_exists and is never touched.
Status rename_handle(HANDLE handle, HANDLE dir, const std::wstring& name, bool replace);

// Deletes the object open as `handle` (opened with DELETE access); the name goes at once
// where the OS supports POSIX delete semantics, else when the last handle closes.
Status delete_handle(HANDLE handle);

struct HandleFacts {
  bool reparse_point = false;
  bool directory = false;
  DWORD file_type = FILE_TYPE_UNKNOWN;  // GetFileType: FILE_TYPE_DISK for a file, not a pipe or device
  std::uint64_t links = 0;
  std::uint64_t size = 0;
};
Result<HandleFacts> facts_of(HANDLE handle);

Result<FILE_ID_INFO> file_id_of(HANDLE handle);

// Metadata of an open handle as StatInfo: dev = 64-bit volume serial, ino = low 64 bits of
// the 128-bit FileId (the whole id is in DirectoryIdentity), mode and uid 0.
Result<StatInfo> stat_of(HANDLE handle);

// FILETIME-style times count 100 ns ticks since 1601.
constexpr std::int64_t kTicksFrom1601To1970 = 116444736000000000LL;

// The access rights every directory handle holds: list, traverse, attributes, security.
constexpr ACCESS_MASK kDirAccess =
    FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE;

// Directories are shared without FILE_SHARE_DELETE: while we hold one, nobody can rename
// or remove it, which pins every name resolved below it for the life of the handle.
constexpr ULONG kDirShare = FILE_SHARE_READ | FILE_SHARE_WRITE;

// paths.cc: the accepted absolute paths, and network checks before (lexically) and after any I/O.

// A local absolute path split for a walk: `root` is the volume root in the \\?\ form
// ("\\?\C:\" or "\\?\Volume{guid}\"), `components` the validated names below it.
struct LocalPath {
  std::wstring root;
  std::vector<std::wstring> components;
};

// Accepts "C:\a\b", "C:/a/b", "\\?\C:\a", "\\.\C:\a" and "\\?\Volume{guid}\a".
// Refuses, before any I/O: every UNC spelling ("\\server\share", "//server/share",
// "\\?\UNC\...", "\\.\UNC\...") and a drive letter the OS maps to a network share
// (network_unsupported); relative, drive-relative and device paths, "." and ".."
// (invalid_argument); a component that is not a valid Windows name (invalid_name).
Result<LocalPath> parse_local_path(const std::string& utf8_path);

// The path of a prefix: root plus the first `count` components, in the \\?\ form that
// bypasses Win32 name rewriting (trailing dots, MAX_PATH).
std::wstring join_prefix(const LocalPath& path, std::size_t count);

// not_directory unless `handle` is a directory; network_unsupported when it lives on a
// network volume (the DOS form of its final path is \\?\UNC\..., or its volume root is a
// remote drive).
Status check_local_dir(HANDLE handle);

// security.cc: the owner-only check of an object's security, and the descriptor we create with.

// An absolute security descriptor: owner = the current user, a protected DACL holding one
// ACCESS_ALLOWED ACE (full access) for that user, inheritable on directories. The SID and
// the ACL live inside, so `descriptor` stays valid for the life of the object.
struct OwnerOnlySecurity {
  std::vector<unsigned char> user_sid;
  std::vector<std::uint64_t> acl;  // 8-byte words keep the ACL aligned
  SECURITY_DESCRIPTOR descriptor{};
};
Result<std::unique_ptr<OwnerOnlySecurity>> owner_only_security(bool directory);

// The DACL half of owner-only (testable on descriptors built in memory): present, protected,
// exactly one ACE, and that ACE is ACCESS_ALLOWED for `user`. Anything else is acl_present.
Status check_owner_only_dacl(PACL dacl, SECURITY_DESCRIPTOR_CONTROL control, const std::vector<unsigned char>& user);

// The legacy-source check (platform.h open_source): type, owner SID == the effective user,
// and for a file one link; the DACL need not be owner-only.
Status check_source(HANDLE handle, bool directory);

// The SID of the effective user: the thread's impersonation token if it has one, else the
// process token (the analogue of geteuid()).
Result<std::vector<unsigned char>> current_user_sid();

}  // namespace gjc::win
