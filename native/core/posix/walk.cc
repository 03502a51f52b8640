// Descriptor walk and the owner-only policy on POSIX: open one validated name at a time
// below a held directory, never following a link, and check every object on the very
// descriptor that will be used. Legacy sources (0755 directories and 0644 files older tools
// made) are opened the same way, accepted when nobody but their owner, us, can change them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "posix_util.h"

namespace gjc {

void close_native_handle(NativeHandle handle) noexcept { ::close(handle); }

namespace {

constexpr mode_t kDirMode = 0700;
constexpr mode_t kFileMode = 0600;

// The owner-only verdict on open descriptor `fd`: type, owner, mode, links, then the ACL gate.
Result<VerifyEvidence> verify(int fd, bool directory) {
  auto checked = posix::check_fd(fd, directory, posix::ModeRule::exact);
  if (!checked.ok()) return checked.failure();
  return os::acl_check(fd, directory);
}

// Owner-only apply on an object we already own: refuses anything that is not ours.
Result<VerifyEvidence> repair(int fd, bool directory) {
  auto owned = posix::check_fd(fd, directory, posix::ModeRule::any);
  if (!owned.ok()) return owned.failure();
  auto stripped = os::acl_strip(fd, directory);
  if (!stripped.ok()) return stripped.failure();
  if (retry_eintr([&] { return ::fchmod(fd, directory ? kDirMode : kFileMode); }) != 0) {
    return posix::errno_failure(errno, "fchmod");
  }
  return verify(fd, directory);
}

// An object this process just created is usually owner-only already (the umask can only
// clear bits), so it is changed only when the umask or an inherited default ACL made it
// deviate: that saves an ACL removal and a chmod on every create.
Result<VerifyEvidence> settle_created(int fd, bool directory) {
  auto checked = verify(fd, directory);
  if (checked.ok()) return checked;
  return repair(fd, directory);
}

// DirPolicy::owned: a directory of the effective user, whatever its mode and ACLs.
Result<VerifyEvidence> check_owned_dir(int fd) {
  auto owned = posix::check_fd(fd, true, posix::ModeRule::any);
  if (!owned.ok()) return owned.failure();
  return VerifyEvidence{};
}

Result<OwnedHandle> open_dir_name(int parent, const std::string& name, const DirOpenOptions& options) {
  const auto open_it = [&] {
    return OwnedHandle(
        retry_eintr([&] { return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags); }));
  };
  // An existing directory is the common case (every open of a session walks the same ones), so it
  // is opened first and a directory is made only when the name is free: no creation call on an open.
  OwnedHandle fd = open_it();
  bool created = false;
  if (!fd.valid() && errno == ENOENT && options.policy == DirPolicy::create) {
    if (retry_eintr([&] { return ::mkdirat(parent, name.c_str(), kDirMode); }) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      return posix::errno_failure(errno, "mkdirat");
    }
    // Made here, or by a racing creator meanwhile: either way what is opened is then verified.
    fd = open_it();
  }
  if (!fd.valid()) return posix::explain_dir_open_failure(parent, name.c_str(), errno, "openat");
  auto checked = created                               ? settle_created(fd.get(), true)
                 : options.policy == DirPolicy::repair ? repair(fd.get(), true)
                 : options.policy == DirPolicy::owned  ? check_owned_dir(fd.get())
                                                       : verify(fd.get(), true);
  if (!checked.ok()) return checked.failure();
  if (created && !options.defer_sync && retry_eintr([&] { return ::fsync(parent); }) != 0) {
    return posix::errno_failure(errno, "fsync");
  }
  return fd;
}

}  // namespace

Result<VerifyEvidence> verify_directory(NativeHandle dir) { return verify(dir, true); }
Result<VerifyEvidence> verify_file(NativeHandle file) { return verify(file, false); }
Result<VerifyEvidence> repair_directory(NativeHandle dir) { return repair(dir, true); }
Result<VerifyEvidence> repair_file(NativeHandle file) { return repair(file, false); }

Result<OwnedHandle> open_dir(NativeHandle parent, std::string_view name, const DirOpenOptions& options) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  return open_dir_name(parent, std::string(name), options);
}

namespace {

// The exclusive create of open_file: a new regular file made owner-only (settled), or the failure.
// `taken` is set when the name was taken instead (EEXIST), for an if-missing caller to open it.
Result<OwnedHandle> create_file(int parent, const std::string& n, int access, bool& taken) {
  const int flags = access | posix::kBaseOpenFlags;
  // O_EXCL fails on any existing name (a FIFO or a link included), so what this opens is
  // always a new regular file: no O_NONBLOCK needed, and nothing to clear afterwards.
  OwnedHandle fd(retry_eintr([&] { return ::openat(parent, n.c_str(), flags | O_CREAT | O_EXCL, kFileMode); }));
  taken = !fd.valid() && errno == EEXIST;
  if (!fd.valid()) return posix::errno_failure(errno, "openat");
  auto checked = settle_created(fd.get(), false);
  if (!checked.ok()) {
    // A file we just created and could not make owner-only must not stay behind.
    ::unlinkat(parent, n.c_str(), 0);
    return checked.failure();
  }
  return fd;
}

// Opens the existing regular file `n` and verifies (or repairs) it.
Result<OwnedHandle> open_existing(int parent, const std::string& n, int access, const FileOpenOptions& options) {
  const int flags = access | posix::kBaseOpenFlags;
  if (access != O_RDONLY) {
    // Opening for writing is already a use of the object (it wakes watchers; a device may
    // act on open), so an entry that is visibly not a regular file of ours is refused
    // first. The checks on the opened descriptor below stay the authority.
    struct stat pre {};
    if (retry_eintr([&] { return ::fstatat(parent, n.c_str(), &pre, AT_SYMLINK_NOFOLLOW); }) == 0 &&
        (!S_ISREG(pre.st_mode) || pre.st_uid != ::geteuid())) {
      return posix::check_stat(pre, false, posix::ModeRule::exact).failure();
    }
  }
  // O_NONBLOCK so that a FIFO or device cannot hold the open; cleared once the type is known.
  OwnedHandle fd(retry_eintr([&] { return ::openat(parent, n.c_str(), flags | O_NONBLOCK); }));
  if (!fd.valid()) return posix::errno_failure(errno, "openat");
  auto checked = options.repair ? repair(fd.get(), false) : verify(fd.get(), false);
  if (!checked.ok()) return checked.failure();
  // F_SETFL replaces only the changeable status flags, and of those we opened with just
  // O_APPEND (kept) and O_NONBLOCK (dropped), so no F_GETFL round trip is needed.
  if (::fcntl(fd.get(), F_SETFL, flags & O_APPEND) == -1) return posix::errno_failure(errno, "fcntl");
  return fd;
}

}  // namespace

Result<OwnedHandle> open_file(NativeHandle parent, std::string_view name, const FileOpenOptions& options) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  const int access = options.append ? O_RDWR | O_APPEND : options.write ? O_RDWR : O_RDONLY;
  const bool creates = options.create != CreateMode::none && !options.repair;
  bool taken = false;
  if (creates && options.create == CreateMode::exclusive) return create_file(parent, n, access, taken);
  // If-missing: the file is nearly always there already (a lock file, a transcript opened
  // again), so it is opened first and made only when the name is free; a name that comes or
  // goes meanwhile gets one more try of the other way.
  auto opened = open_existing(parent, n, access, options);
  if (opened.ok() || !creates || opened.failure().sys_errno != ENOENT) return opened;
  auto created = create_file(parent, n, access, taken);
  if (created.ok() || !taken) return created;
  return open_existing(parent, n, access, options);
}

namespace {

// Whether a directory above a trusted root keeps its entries out of other users' reach, as
// ssh's StrictModes and sudo's secure path require: owned by root or `euid`, and writable
// by neither group nor others unless sticky. With a POSIX ACL the group bits are the mask,
// an upper bound on every named entry, so an ACL granting someone else write shows here.
bool ancestor_is_safe(const struct stat& st, uid_t euid) {
  if (st.st_uid != 0 && st.st_uid != euid) return false;
  return (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (st.st_mode & S_ISVTX) != 0;
}

// Opens the canonical absolute directory `real` from "/" one component at a time without
// following a link, refusing (insecure_ancestor) any directory on the chain that another
// user could replace, each checked on the descriptor that leads to the next one. With
// `for_writes` the result is readable, so it can be synced.
Result<OwnedHandle> open_safe_ancestors(const std::string& real, bool for_writes) {
  const uid_t euid = ::geteuid();
  // Nothing is read, ACL-checked or synced through these descriptors, only fstat()ed.
  const int access = os::ancestor_access();
  const int flags = access | O_DIRECTORY | posix::kBaseOpenFlags;
  OwnedHandle current(retry_eintr([&] { return ::open("/", flags); }));
  if (!current.valid()) return posix::errno_failure(errno, "open");
  for (std::size_t start = 1;;) {
    auto st = posix::fstat_of(current.get());
    if (!st.ok()) return st.failure();
    if (!S_ISDIR(st.value().st_mode)) {
      return fail(S_ISLNK(st.value().st_mode) ? Code::symlink_refused : Code::not_directory, 0, "fstat");
    }
    if (!ancestor_is_safe(st.value(), euid)) return fail(Code::insecure_ancestor, 0, "fstat");
    while (start < real.size() && real[start] == '/') ++start;
    if (start >= real.size()) break;
    const std::size_t end = std::min(real.find('/', start), real.size());
    const std::string name = real.substr(start, end - start);
    start = end;
    OwnedHandle next(retry_eintr([&] { return ::openat(current.get(), name.c_str(), flags); }));
    if (!next.valid()) return posix::explain_dir_open_failure(current.get(), name.c_str(), errno, "openat");
    current = std::move(next);
  }
  if (!for_writes || access == O_RDONLY) return current;
  // "." is the held directory itself: nothing the name could be swapped for.
  OwnedHandle readable(
      retry_eintr([&] { return ::openat(current.get(), ".", O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags); }));
  if (!readable.valid()) return posix::errno_failure(errno, "openat");
  return readable;
}

// An absolute path's validated names, and the trusted directory to walk them from: the one
// above names[existing].
struct TrustedStart {
  std::vector<std::string> parts;
  std::size_t existing = 0;
  OwnedHandle dir;
};

// Links in the ancestors are resolved once, as the user gave them: the deepest existing
// ancestor of the last name (with `create`, of the first missing one) is canonicalised and
// that chain opened from "/" by open_safe_ancestors; the caller walks the rest.
Result<TrustedStart> open_trusted_start(const std::string& absolute_path, bool create) {
  if (absolute_path.empty() || absolute_path[0] != '/' || absolute_path.find('\0') != std::string::npos) {
    return fail(Code::invalid_argument);
  }
  TrustedStart start;
  for (std::size_t at = 1; at <= absolute_path.size();) {
    const std::size_t end = std::min(absolute_path.find('/', at), absolute_path.size());
    if (end > at) start.parts.emplace_back(absolute_path.substr(at, end - at));
    if (end > at && !is_valid_name(start.parts.back())) return fail(Code::invalid_name);
    at = end + 1;
  }
  if (start.parts.empty()) return fail(Code::invalid_argument);
  start.existing = start.parts.size() - 1;
  std::unique_ptr<char, decltype(&std::free)> real(nullptr, &std::free);
  for (;;) {
    std::string prefix;
    for (std::size_t i = 0; i < start.existing; ++i) prefix += "/" + start.parts[i];
    if (prefix.empty()) prefix = "/";
    real.reset(::realpath(prefix.c_str(), nullptr));
    if (real) break;
    if (errno != ENOENT) return posix::errno_failure(errno, "realpath");
    if (!create || start.existing == 0) return fail(Code::not_found, ENOENT, "realpath");
    --start.existing;
  }
  auto ancestors = open_safe_ancestors(real.get(), create);
  if (!ancestors.ok()) return ancestors.failure();
  start.dir = std::move(ancestors).value();
  return start;
}

}  // namespace

Result<OwnedHandle> open_root(const std::string& absolute_path, const DirOpenOptions& options) {
  auto start = open_trusted_start(absolute_path, options.policy == DirPolicy::create);
  if (!start.ok()) return start.failure();
  auto& [parts, existing, current] = start.value();
  for (std::size_t i = existing; i < parts.size(); ++i) {
    auto next =
        open_dir_name(current.get(), parts[i], i + 1 == parts.size() ? options : DirOpenOptions{DirPolicy::create});
    if (!next.ok()) return next.failure();
    current = std::move(next).value();
  }
  return std::move(current);
}

Result<OwnedHandle> open_source(NativeHandle parent, std::string_view name, bool directory) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  // O_NONBLOCK: a FIFO or device at the name must not hold the open. The descriptor is
  // only ever read with pread (files) or listed (directories), so the flag can stay.
  const int flags = O_RDONLY | O_NONBLOCK | posix::kBaseOpenFlags | (directory ? O_DIRECTORY : 0);
  OwnedHandle fd;
#ifdef O_NOATIME
  // Reading a source must not change it, its access time included (a copy keeps the
  // source's times). O_NOATIME is refused (EPERM) on a file we do not own; the open is then
  // made without it, and the owner check below refuses the file.
  fd.reset(retry_eintr([&] { return ::openat(parent, n.c_str(), flags | O_NOATIME); }));
  if (!fd.valid() && errno == EPERM) fd.reset(retry_eintr([&] { return ::openat(parent, n.c_str(), flags); }));
#else
  fd.reset(retry_eintr([&] { return ::openat(parent, n.c_str(), flags); }));
#endif
  if (!fd.valid()) {
    if (directory) return posix::explain_dir_open_failure(parent, n.c_str(), errno, "openat");
    return posix::errno_failure(errno, "openat");
  }
  auto checked = posix::check_fd(fd.get(), directory, posix::ModeRule::no_foreign_write);
  if (!checked.ok()) return checked.failure();
  auto acl = os::acl_check(fd.get(), directory);
  if (!acl.ok()) return acl.failure();
  return fd;
}

Result<OwnedHandle> open_source_root(const std::string& absolute_path) {
  if (!absolute_path.empty() && absolute_path.back() == '/') return fail(Code::invalid_argument);
  auto start = open_trusted_start(absolute_path, false);
  if (!start.ok()) return start.failure();
  return open_source(start.value().dir.get(), start.value().parts.back(), true);
}

}  // namespace gjc
