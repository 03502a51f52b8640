// Removing a directory tree on POSIX by descriptor: each directory is opened no-follow
// relative to its parent's descriptor and verified before anything in it is removed, and
// every other entry is unlinked as itself, so a link planted or swapped into the tree is
// removed as a link and nothing it points to is ever touched.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../portable.h"
#include "posix_util.h"

namespace gjc {

const char* const kRemoveEntryCall = "unlinkat";

namespace {

// Opens directory `name` below `parent` no-follow and verifies it owner-only.
Result<OwnedHandle> open_verified_dir(int parent, const char* name) {
  OwnedHandle fd(retry_eintr([&] { return ::openat(parent, name, O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags); }));
  if (!fd.valid()) return posix::explain_dir_open_failure(parent, name, errno, "openat");
  auto checked = verify_directory(fd.get());
  if (!checked.ok()) return checked.failure();
  return fd;
}

// Removes entry `name` of `dir` once it is emptied: only while the name is still the
// directory `held` (swapped for another object, identity_mismatch); rmdir never follows a
// link and refuses a directory that is not empty.
Status remove_emptied(int dir, const char* name, int held) {
  auto same = posix::check_same_entry(dir, name, held);
  if (!same.ok()) return same;
  if (retry_eintr([&] { return ::unlinkat(dir, name, AT_REMOVEDIR); }) != 0) {
    return posix::errno_failure(errno, "unlinkat");
  }
  return success();
}

}  // namespace

// Unlinked as itself unless it is a directory; an entry swapped between the two kinds while
// this runs is retried once as what it is then.
Status remove_entry(int dir, const std::string& name, std::uint32_t depth, TreeBudget& budget) {
  if (++budget.met > budget.max_entries) return fail(Code::too_large, 0, "readdir");
  for (int attempt = 0; attempt < 2; ++attempt) {
    // unlinkat without AT_REMOVEDIR never follows a link and refuses a directory.
    if (retry_eintr([&] { return ::unlinkat(dir, name.c_str(), 0); }) == 0) return success();
    const int error = errno;
    if (error == ENOENT) return success();
    // Linux says EISDIR for a directory, macOS EPERM.
    if (error != EISDIR && error != EPERM) return posix::errno_failure(error, "unlinkat");
    auto child = open_verified_dir(dir, name.c_str());
    if (!child.ok()) {
      const Code code = child.failure().code;
      if (code == Code::not_found) return success();
      // A link or file again, swapped in after the unlink saw a directory: once more.
      if ((code == Code::symlink_refused || code == Code::not_directory) && attempt == 0) continue;
      // Not a directory either time: the unlink's own answer is the reason.
      if (code == Code::symlink_refused || code == Code::not_directory) return posix::errno_failure(error, "unlinkat");
      return child.failure();
    }
    if (depth >= budget.max_depth) return fail(Code::too_large, 0, "openat");
    auto emptied = empty_dir(child.value().get(), depth + 1, budget);
    if (!emptied.ok()) return emptied;
    return remove_emptied(dir, name.c_str(), child.value().get());
  }
  return fail(Code::identity_mismatch, 0, "unlinkat");
}

Status remove_tree(NativeHandle parent, std::string_view name, std::uint32_t max_depth, std::size_t max_entries) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  auto root = open_verified_dir(parent, n.c_str());
  if (!root.ok()) return root.failure();
  TreeBudget budget{max_depth, max_entries};
  auto emptied = empty_dir(root.value().get(), 1, budget);
  if (!emptied.ok()) return emptied;
  return remove_emptied(parent, n.c_str(), root.value().get());
}

}  // namespace gjc
