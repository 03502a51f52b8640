// The no-follow walk of an unmanaged tree on POSIX (a legacy artifact directory before and
// after it is copied): one call into the addon for the whole tree, each directory held by
// descriptor while its entries are stat'ed relative to it.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "../eintr.h"
#include "../platform.h"
#include "posix_util.h"

namespace gjc {
namespace {

struct Walk {
  std::uint32_t max_depth;
  std::size_t max_entries;
  TreeWalk result;
};

// Opens `dir` afresh for listing; the walk keeps `dir` itself for the relative stats.
Status walk_dir(int dir, const std::string& prefix, std::uint32_t depth, Walk& walk) {
  auto listed = list_directory(dir);
  if (!listed.ok()) return listed.failure();
  std::vector<DirEntry>& names = listed.value();
  std::sort(names.begin(), names.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& entry : names) {
    if (walk.result.entries.size() > walk.max_entries) {
      walk.result.truncated = true;
      return success();
    }
    struct stat st {};
    if (retry_eintr([&] { return ::fstatat(dir, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW); }) != 0) {
      return posix::errno_failure(errno, "fstatat");
    }
    TreeEntry& out = walk.result.entries.emplace_back();
    out.path = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    out.depth = depth;
    out.stat = posix::stat_info_of(st);
    if (!S_ISDIR(st.st_mode) || depth > walk.max_depth) continue;
    OwnedHandle child(retry_eintr([&] {
      return ::openat(dir, entry.name.c_str(), O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags);
    }));
    if (!child.valid()) return posix::explain_dir_open_failure(dir, entry.name.c_str(), errno, "openat");
    auto held = posix::fstat_of(child.get());
    if (!held.ok()) return held.failure();
    // The name could have been swapped for another directory between the stat and the open.
    if (held.value().st_dev != st.st_dev || held.value().st_ino != st.st_ino) {
      return fail(Code::identity_mismatch, 0, "fstat");
    }
    const std::string path = out.path;  // `out` may move as the vector grows
    auto inner = walk_dir(child.get(), path, depth + 1, walk);
    if (!inner.ok() || walk.result.truncated) return inner;
  }
  return success();
}

}  // namespace

Result<TreeWalk> walk_tree(const std::string& root, std::uint64_t dev, std::uint64_t ino,
                           std::uint32_t max_depth, std::size_t max_entries) {
  if (root.empty() || root[0] != '/' || root.find('\0') != std::string::npos) {
    return fail(Code::invalid_argument);
  }
  OwnedHandle dir(retry_eintr([&] {
    return ::open(root.c_str(), O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags);
  }));
  if (!dir.valid()) return posix::explain_dir_open_failure(AT_FDCWD, root.c_str(), errno, "open");
  auto held = posix::fstat_of(dir.get());
  if (!held.ok()) return held.failure();
  const StatInfo info = posix::stat_info_of(held.value());
  if (info.dev != dev || info.ino != ino) return fail(Code::identity_mismatch, 0, "fstat");
  Walk walk{max_depth, max_entries, TreeWalk{}};
  auto walked = walk_dir(dir.get(), "", 1, walk);
  if (!walked.ok()) return walked.failure();
  return std::move(walk.result);
}

}  // namespace gjc
