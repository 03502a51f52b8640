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
  const std::vector<TreeEntry>* expected;
  std::size_t met = 0;
  bool differs = false;
  TreeWalk result;
};

bool same_entry(const TreeEntry& want, const std::string& path, const StatInfo& st) {
  if (want.path != path || want.stat.type != st.type) return false;
  if (st.type != EntryType::file) return true;
  return want.stat.dev == st.dev && want.stat.ino == st.ino && want.stat.size == st.size &&
         want.stat.nlink == st.nlink && want.stat.mtime_ns == st.mtime_ns &&
         want.stat.ctime_ns == st.ctime_ns;
}

// Collects the entry, or checks it against the expected one at its place; false once the
// walk should stop.
bool record(Walk& walk, const std::string& path, std::uint32_t depth, const StatInfo& st) {
  const std::size_t at = walk.met++;
  if (walk.expected != nullptr) {
    walk.differs = at >= walk.expected->size() || !same_entry((*walk.expected)[at], path, st);
    return !walk.differs;
  }
  TreeEntry& out = walk.result.entries.emplace_back();
  out.path = path;
  out.depth = depth;
  out.stat = st;
  return true;
}

// Opens `dir` afresh for listing; the walk keeps `dir` itself for the relative stats.
Status walk_dir(int dir, const std::string& prefix, std::uint32_t depth, Walk& walk) {
  auto listed = list_directory(dir);
  if (!listed.ok()) return listed.failure();
  std::vector<DirEntry>& names = listed.value();
  std::sort(names.begin(), names.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& entry : names) {
    if (walk.met > walk.max_entries) {
      walk.result.truncated = true;
      return success();
    }
    struct stat st {};
    if (retry_eintr([&] { return ::fstatat(dir, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW); }) != 0) {
      return posix::errno_failure(errno, "fstatat");
    }
    const std::string path = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (!record(walk, path, depth, posix::stat_info_of(st))) return success();
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
    auto inner = walk_dir(child.get(), path, depth + 1, walk);
    if (!inner.ok() || walk.result.truncated || walk.differs) return inner;
  }
  return success();
}

}  // namespace

Result<TreeWalk> walk_tree(const std::string& root, std::uint64_t dev, std::uint64_t ino,
                           std::uint32_t max_depth, std::size_t max_entries,
                           const std::vector<TreeEntry>* expected) {
  auto opened = posix::open_identified_dir(root, dev, ino);
  if (!opened.ok()) return opened.failure();
  const OwnedHandle dir = std::move(opened).value();
  Walk walk{max_depth, max_entries, expected, 0, false, TreeWalk{}};
  auto walked = walk_dir(dir.get(), "", 1, walk);
  if (!walked.ok()) return walked.failure();
  if (expected != nullptr) {
    walk.result.compared = true;
    walk.result.matches = !walk.differs && !walk.result.truncated && walk.met == expected->size();
  }
  return std::move(walk.result);
}

}  // namespace gjc
