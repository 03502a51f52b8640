// Handle walk and the owner-only policy on Windows: one validated name at a time below a
// held directory handle (NtCreateFile with RootDirectory), never following a reparse
// point, and every object checked on the very handle that will be used. Legacy sources
// (with the profile's inherited DACL, as older tools made them) are opened the same way and
// accepted when the effective user owns them.
#include <cerrno>
#include <memory>
#include <string>

#include "../names.h"
#include "../platform.h"
#include "win_util.h"

namespace gjc {
namespace {

// A refused open says nothing about what sits at the name; an attributes-only open (which
// a stranger's DACL may still allow) lets the type codes win over permission_denied.
Failure explain_refused_open(HANDLE parent, const std::wstring& name, const Failure& refused) {
  if (refused.code != Code::permission_denied) return refused;
  auto probe = win::open_relative(parent, name, {FILE_READ_ATTRIBUTES});
  if (!probe.ok()) return refused;
  auto checked = verify_file(probe.value().get());
  if (!checked.ok() && checked.failure().code != Code::owner_mismatch && checked.failure().code != Code::acl_denied) {
    return checked.failure();
  }
  return refused;
}

// What open_checked does at the name: `create` makes it owner-only (an existing one is then
// opened, unless `exclusive`); `repair` fixes an existing one. A created or repaired object
// is brought to owner-only by repair_*, everything else verified.
struct Intent {
  bool create = false;
  bool exclusive = false;
  bool repair = false;
};

// Opens (or creates) `name` below `parent` with `how` and checks it. The open of an existing
// entry names no type (FILE_OPEN_REPARSE_POINT opens a reparse point as itself), so the check
// can say which of not_directory / not_regular_file / symlink_refused it is.
Result<OwnedHandle> open_checked(HANDLE parent, const std::wstring& name, bool directory, win::RelativeOpen how,
                                 Intent intent) {
  OwnedHandle object;
  bool created = false;
  if (intent.create) {
    auto security = win::owner_only_security(directory);
    if (!security.ok()) return security.failure();
    win::RelativeOpen make = how;
    make.disposition = FILE_CREATE;
    make.options = directory ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE;
    make.security = &security.value()->descriptor;
    auto made = win::open_relative(parent, name, make);
    if (made.ok()) {
      object = std::move(made).value();
      created = true;
    } else if (made.failure().code != Code::already_exists || intent.exclusive) {
      return made.failure();
    }
  }
  if (!created) {
    auto opened = win::open_relative(parent, name, how);
    if (!opened.ok()) return directory ? opened.failure() : explain_refused_open(parent, name, opened.failure());
    object = std::move(opened).value();
  }
  const bool settle = created || intent.repair;
  auto checked = directory ? (settle ? repair_directory(object.get()) : verify_directory(object.get()))
                           : (settle ? repair_file(object.get()) : verify_file(object.get()));
  if (!checked.ok()) {
    // An object we just created and could not make owner-only must not stay behind.
    if (created) {
      auto deleter = win::reopen(object.get(), DELETE, directory);
      if (deleter.ok()) win::delete_handle(deleter.value().get());
    }
    return checked.failure();
  }
  return object;
}

// Windows has no looser reading of an owned directory: the owner and DACL checks are one
// verdict there, so DirPolicy::owned verifies in full. There is no directory sync either,
// so `defer_sync` changes nothing.
Result<OwnedHandle> open_dir_name(HANDLE parent, const std::wstring& name, DirPolicy policy) {
  return open_checked(parent, name, true, {win::kDirAccess, win::kDirShare},
                      {policy == DirPolicy::create, false, policy == DirPolicy::repair});
}

Result<OwnedHandle> open_source_wide(HANDLE parent, const std::wstring& name, bool directory) {
  // No FILE_DIRECTORY_FILE / FILE_NON_DIRECTORY_FILE: whatever sits at the name is opened
  // (a reparse point as itself), so the check can say what it is.
  auto opened = directory ? win::open_relative(parent, name, {win::kDirAccess, win::kDirShare})
                          : win::open_relative(parent, name, {FILE_READ_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL});
  if (!opened.ok()) return opened.failure();
  auto checked = win::check_source(opened.value().get(), directory);
  if (!checked.ok()) return checked.failure();
  return opened;
}

// A parsed absolute path, and the trusted directory to walk it from: the one above
// path.components[existing].
struct TrustedStart {
  win::LocalPath path;
  std::size_t existing = 0;
  OwnedHandle dir;
};

// Ancestors are trusted as the user gave them: CreateFileW follows links in them (that is
// the canonicalisation) to the deepest existing ancestor of the last component (with
// `create`, of the first missing one), which must be local; the caller walks the rest.
Result<TrustedStart> open_trusted_start(const std::string& absolute_path, bool create) {
  auto parsed = win::parse_local_path(absolute_path);
  if (!parsed.ok()) return parsed.failure();
  TrustedStart start;
  start.path = std::move(parsed).value();
  if (start.path.components.empty()) return fail(Code::invalid_argument, EINVAL);
  for (start.existing = start.path.components.size() - 1;; --start.existing) {
    auto opened = win::open_path(win::join_prefix(start.path, start.existing), win::kDirAccess);
    if (opened.ok()) {
      start.dir = std::move(opened).value();
      break;
    }
    if (opened.failure().code != Code::not_found || !create || start.existing == 0) return opened.failure();
  }
  auto local = win::check_local_dir(start.dir.get());
  if (!local.ok()) return local.failure();
  return start;
}

}  // namespace

Result<OwnedHandle> open_dir(NativeHandle parent, std::string_view name, const DirOpenOptions& options) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  return open_dir_name(parent, wide.value(), options.policy);
}

Result<OwnedHandle> open_file(NativeHandle parent, std::string_view name, const FileOpenOptions& options) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  ACCESS_MASK access = FILE_READ_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL;
  // An append handle gets FILE_APPEND_DATA without FILE_WRITE_DATA: the file system then
  // puts every write at the end, as O_APPEND does.
  if (options.append) {
    access |= FILE_APPEND_DATA;
  } else if (options.write) {
    access |= FILE_WRITE_DATA | FILE_APPEND_DATA;
  }
  const bool create = options.create != CreateMode::none && !options.repair;
  return open_checked(parent, wide.value(), false, {access},
                      {create, options.create == CreateMode::exclusive, options.repair});
}

Result<OwnedHandle> open_root(const std::string& absolute_path, const DirOpenOptions& options) {
  auto start = open_trusted_start(absolute_path, options.policy == DirPolicy::create);
  if (!start.ok()) return start.failure();
  auto& [path, existing, current] = start.value();
  for (std::size_t i = existing; i < path.components.size(); ++i) {
    const DirPolicy policy = i + 1 == path.components.size() ? options.policy : DirPolicy::create;
    auto next = open_dir_name(current.get(), path.components[i], policy);
    if (!next.ok()) return next.failure();
    current = std::move(next).value();
  }
  return std::move(current);
}

Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  return open_source_wide(parent, wide.value(), directory);
}

Result<OwnedHandle> open_source_root(const std::string& absolute_path) {
  auto start = open_trusted_start(absolute_path, false);
  if (!start.ok()) return start.failure();
  return open_source_wide(start.value().dir.get(), start.value().path.components.back(), true);
}

}  // namespace gjc
