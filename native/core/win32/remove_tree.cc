// Removing a directory tree on Windows by handle: every entry is opened relative to its
// directory's handle as itself (FILE_OPEN_REPARSE_POINT, so a link or junction is never
// followed), directories are verified owner-only and emptied before they go, and each
// object is deleted through its own handle, so what is deleted is what was opened.
#include <cerrno>
#include <string>
#include <vector>

#include "../names.h"
#include "../portable.h"
#include "win_util.h"

namespace gjc {

const char* const kRemoveEntryCall = "NtSetInformationFile";

namespace {

// Opens `name` below `parent` as itself, with what deleting (and, for a directory,
// verifying and listing) it needs.
Result<OwnedHandle> open_for_delete(HANDLE parent, std::string_view name) {
  auto wide = win::to_wide(name, Code::invalid_name);
  if (!wide.ok()) return wide.failure();
  return win::open_relative(parent, wide.value(), {DELETE | FILE_READ_ATTRIBUTES | READ_CONTROL});
}

// Deletes the object open as `object`: a real directory is verified and emptied first;
// anything else (a reparse point included) is deleted as itself.
Status remove_object(HANDLE object, std::uint32_t depth, TreeBudget& budget) {
  auto facts = win::facts_of(object);
  if (!facts.ok()) return facts.failure();
  if (facts.value().directory && !facts.value().reparse_point) {
    auto checked = verify_directory(object);
    if (!checked.ok()) return checked.failure();
    if (depth >= budget.max_depth) return fail(Code::too_large, 0, "NtCreateFile");
    auto emptied = empty_dir(object, depth + 1, budget);
    if (!emptied.ok()) return emptied;
  }
  return win::delete_handle(object);
}

}  // namespace

Status remove_entry(NativeHandle dir, const std::string& name, std::uint32_t depth, TreeBudget& budget) {
  if (++budget.met > budget.max_entries) return fail(Code::too_large, 0, "GetFileInformationByHandleEx");
  auto child = open_for_delete(dir, name);
  if (!child.ok()) return child.failure().code == Code::not_found ? success() : Status(child.failure());
  return remove_object(child.value().get(), depth, budget);
}

Status remove_tree(NativeHandle parent, std::string_view name, std::uint32_t max_depth, std::size_t max_entries) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  auto root = open_for_delete(parent, name);
  if (!root.ok()) return root.failure();
  auto facts = win::facts_of(root.value().get());
  if (!facts.ok()) return facts.failure();
  if (facts.value().reparse_point) return fail(Code::symlink_refused, ELOOP, "NtCreateFile");
  if (!facts.value().directory) return fail(Code::not_directory, ENOTDIR, "NtCreateFile");
  TreeBudget budget{max_depth, max_entries};
  // The root counts as depth 0: its children are at depth 1, as on POSIX.
  return remove_object(root.value().get(), 0, budget);
}

}  // namespace gjc
