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
  // No FILE_DIRECTORY_FILE / FILE_NON_DIRECTORY_FILE: whatever sits at the name is opened
  // (a reparse point as itself), so the check can say what it is.
  auto opened = directory ? win::open_relative(parent, name, {win::kDirAccess, win::kDirShare})
                          : win::open_relative(parent, name, {FILE_READ_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL});
  if (!opened.ok()) return opened.failure();
  auto checked = win::check_source(opened.value().get(), directory);
  if (!checked.ok()) return checked.failure();
  return opened;
}

}  // namespace

Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory) {
  auto wide = win::wide_name(name);
  if (!wide.ok()) return wide.failure();
  return open_source_wide(parent, wide.value(), directory);
}

Result<OwnedHandle> open_source_root(const std::string& absolute_path) {
  auto parsed = win::parse_local_path(absolute_path);
  if (!parsed.ok()) return parsed.failure();
  const win::LocalPath& path = parsed.value();
  if (path.components.empty()) return fail(Code::invalid_argument, EINVAL);
  // The ancestors are trusted as the user gave them, as open_root trusts them.
  auto parent = win::open_path(win::join_prefix(path, path.components.size() - 1), win::kDirAccess);
  if (!parent.ok()) return parent.failure();
  auto local = win::check_local_dir(parent.value().get());
  if (!local.ok()) return local.failure();
  return open_source_wide(parent.value().get(), path.components.back(), true);
}

}  // namespace gjc
