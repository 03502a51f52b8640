// Handle walk and the owner-only policy on Windows: one validated name at a time below a
// held directory handle (NtCreateFile with RootDirectory), never following a reparse
// point, and every object checked on the very handle that will be used.
#include <cerrno>
#include <memory>
#include <string>

#include "../names.h"
#include "../platform.h"
#include "paths.h"
#include "security.h"
#include "win_util.h"

namespace gjc {
namespace {

// Removes an object we just created and could not make owner-only.
void discard_created(HANDLE created, bool directory) {
  auto deleter = win::reopen(created, DELETE, directory);
  if (deleter.ok()) win::delete_handle(deleter.value().get());
}

// Windows has no looser reading of an owned directory: the owner and DACL checks are one
// verdict there (verify_directory), so DirPolicy::owned verifies in full. There is no
// directory sync either, so `defer_sync` changes nothing.
Result<OwnedHandle> open_dir_name(HANDLE parent, const std::wstring& name, DirPolicy policy) {
  bool created = false;
  OwnedHandle dir;
  if (policy == DirPolicy::create) {
    auto security = win::owner_only_security(true);
    if (!security.ok()) return security.failure();
    win::RelativeOpen how;
    how.access = win::kDirAccess;
    how.share = win::kDirShare;
    how.disposition = FILE_CREATE;
    how.options = FILE_DIRECTORY_FILE;
    how.security = &security.value()->descriptor;
    auto made = win::open_relative(parent, name, how);
    if (made.ok()) {
      dir = std::move(made).value();
      created = true;
    } else if (made.failure().code != Code::already_exists) {
      return made.failure();
    }
  }
  if (!created) {
    // No FILE_DIRECTORY_FILE: whatever sits at the name is opened (a reparse point as
    // itself), so verify can say which of not_directory / symlink_refused it is.
    win::RelativeOpen how;
    how.access = win::kDirAccess;
    how.share = win::kDirShare;
    auto opened = win::open_relative(parent, name, how);
    if (!opened.ok()) return opened.failure();
    dir = std::move(opened).value();
  }
  auto checked = created || policy == DirPolicy::repair ? repair_directory(dir.get())
                                                        : verify_directory(dir.get());
  if (!checked.ok()) {
    if (created) discard_created(dir.get(), true);
    return checked.failure();
  }
  return dir;
}

ACCESS_MASK file_access(const FileOpenOptions& options) {
  ACCESS_MASK access = FILE_READ_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL;
  // An append handle gets FILE_APPEND_DATA without FILE_WRITE_DATA: the file system then
  // puts every write at the end, as O_APPEND does.
  if (options.append) return access | FILE_APPEND_DATA;
  if (options.write) return access | FILE_WRITE_DATA | FILE_APPEND_DATA;
  return access;
}

// A refused open says nothing about what sits at the name; an attributes-only open (which
// a stranger's DACL may still allow) lets the type codes win over permission_denied.
Failure explain_refused_open(HANDLE parent, const std::wstring& name, const Failure& refused) {
  if (refused.code != Code::permission_denied) return refused;
  win::RelativeOpen how;
  how.access = FILE_READ_ATTRIBUTES;
  auto probe = win::open_relative(parent, name, how);
  if (!probe.ok()) return refused;
  auto checked = verify_file(probe.value().get());
  if (!checked.ok() && checked.failure().code != Code::owner_mismatch &&
      checked.failure().code != Code::acl_denied) {
    return checked.failure();
  }
  return refused;
}

}  // namespace

Result<OwnedHandle> open_dir(NativeHandle parent, std::string_view name, const DirOpenOptions& options) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  auto wide = win::to_wide(name, Code::invalid_name);
  if (!wide.ok()) return wide.failure();
  return open_dir_name(parent, wide.value(), options.policy);
}

Result<OwnedHandle> open_file(NativeHandle parent, std::string_view name, const FileOpenOptions& options) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  auto wide = win::to_wide(name, Code::invalid_name);
  if (!wide.ok()) return wide.failure();
  const std::wstring& n = wide.value();
  OwnedHandle file;
  bool created = false;
  if (options.create != CreateMode::none && !options.repair) {
    auto security = win::owner_only_security(false);
    if (!security.ok()) return security.failure();
    win::RelativeOpen how;
    how.access = file_access(options);
    how.disposition = FILE_CREATE;
    how.options = FILE_NON_DIRECTORY_FILE;
    how.security = &security.value()->descriptor;
    auto made = win::open_relative(parent, n, how);
    if (made.ok()) {
      file = std::move(made).value();
      created = true;
    } else if (made.failure().code != Code::already_exists ||
               options.create == CreateMode::exclusive) {
      return made.failure();
    }
  }
  if (!created) {
    win::RelativeOpen how;
    how.access = file_access(options);
    auto opened = win::open_relative(parent, n, how);
    if (!opened.ok()) return explain_refused_open(parent, n, opened.failure());
    file = std::move(opened).value();
  }
  auto checked = created || options.repair ? repair_file(file.get()) : verify_file(file.get());
  if (!checked.ok()) {
    if (created) discard_created(file.get(), false);
    return checked.failure();
  }
  return file;
}

Result<OwnedHandle> open_root(const std::string& absolute_path, const DirOpenOptions& options) {
  const bool create = options.policy == DirPolicy::create;
  auto parsed = win::parse_local_path(absolute_path);
  if (!parsed.ok()) return parsed.failure();
  const win::LocalPath& path = parsed.value();
  if (path.components.empty()) return fail(Code::invalid_argument, EINVAL);

  // Ancestors are trusted as the user gave them: CreateFileW follows links in them (that is
  // the canonicalisation), the deepest existing one is opened, and the rest is walked (and,
  // with `create`, made) one verified component at a time.
  std::size_t existing = path.components.size() - 1;
  OwnedHandle current;
  for (;;) {
    const std::wstring prefix = win::join_prefix(path, existing);
    // bInheritHandle is FALSE (no SECURITY_ATTRIBUTES): never inherited by a child.
    current.reset(::CreateFileW(prefix.c_str(), win::kDirAccess,
                                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
    if (current.valid()) break;
    const Failure missing = win::win32_failure(::GetLastError(), "CreateFileW");
    if (missing.code != Code::not_found || !create || existing == 0) return missing;
    --existing;
  }
  auto facts = win::facts_of(current.get());
  if (!facts.ok()) return facts.failure();
  if (!facts.value().directory) return fail(Code::not_directory, ENOTDIR, "CreateFileW");
  auto local = win::refuse_network_handle(current.get());
  if (!local.ok()) return local.failure();
  for (std::size_t i = existing; i < path.components.size(); ++i) {
    const DirPolicy policy = i + 1 == path.components.size() ? options.policy : DirPolicy::create;
    auto next = open_dir_name(current.get(), path.components[i], policy);
    if (!next.ok()) return next.failure();
    current = std::move(next).value();
  }
  return current;
}

}  // namespace gjc
