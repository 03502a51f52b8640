// Opening legacy sources on Windows: objects older tools made below the agent directory
// with the profile's inherited DACL, read by handle without following a reparse point, and
// accepted only when the effective user owns them.
#include <cerrno>
#include <string>

#include "../names.h"
#include "../platform.h"
#include "paths.h"
#include "security.h"
#include "win_util.h"

namespace gjc {
namespace {

Result<OwnedHandle> open_source_wide(HANDLE parent, const std::wstring& name, bool directory) {
  win::RelativeOpen how;
  // No FILE_DIRECTORY_FILE / FILE_NON_DIRECTORY_FILE: whatever sits at the name is opened
  // (a reparse point as itself), so the check can say what it is.
  how.access = directory ? win::kDirAccess : FILE_READ_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL;
  if (directory) how.share = win::kDirShare;
  auto opened = win::open_relative(parent, name, how);
  if (!opened.ok()) return opened.failure();
  auto checked = win::check_source(opened.value().get(), directory);
  if (!checked.ok()) return checked.failure();
  return opened;
}

}  // namespace

Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  auto wide = win::to_wide(name, Code::invalid_name);
  if (!wide.ok()) return wide.failure();
  return open_source_wide(parent, wide.value(), directory);
}

Result<OwnedHandle> open_source_root(const std::string& absolute_path) {
  auto parsed = win::parse_local_path(absolute_path);
  if (!parsed.ok()) return parsed.failure();
  const win::LocalPath& path = parsed.value();
  if (path.components.empty()) return fail(Code::invalid_argument, EINVAL);
  // The ancestors are trusted as the user gave them, as open_root trusts them.
  const std::wstring prefix = win::join_prefix(path, path.components.size() - 1);
  // bInheritHandle is FALSE (no SECURITY_ATTRIBUTES): never inherited by a child.
  OwnedHandle parent(::CreateFileW(prefix.c_str(), win::kDirAccess,
                                   FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                   OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
  if (!parent.valid()) return win::win32_failure(::GetLastError(), "CreateFileW");
  auto facts = win::facts_of(parent.get());
  if (!facts.ok()) return facts.failure();
  if (!facts.value().directory) return fail(Code::not_directory, ENOTDIR, "CreateFileW");
  auto local = win::refuse_network_handle(parent.get());
  if (!local.ok()) return local.failure();
  return open_source_wide(parent.get(), path.components.back(), true);
}

}  // namespace gjc
