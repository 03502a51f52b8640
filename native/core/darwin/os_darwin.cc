// macOS answers to the POSIX hooks: renameatx_np(RENAME_EXCL) with a linkat fallback,
// F_FULLFSYNC, flock, F_GETPATH, arc4random.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/param.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../portable.h"
#include "../posix/posix_util.h"

namespace gjc {
namespace {

// File systems without exclusive rename (some network and FUSE ones) answer these; every
// other errno is a real answer and must not trigger the fallback.
bool excl_unsupported(int error) { return error == ENOTSUP || error == EOPNOTSUPP || error == EINVAL; }

}  // namespace

Status os::rename_noreplace(int dirfd, const char* from, const char* to) {
  if (retry_eintr([&] { return ::renameatx_np(dirfd, from, dirfd, to, RENAME_EXCL); }) == 0) return success();
  if (!excl_unsupported(errno)) return posix::errno_failure(errno, "renameatx_np");
  return posix::link_then_unlink(dirfd, from, to);
}

Status sync_handle(NativeHandle fd) {
  // Plain fsync on macOS leaves data in the drive's cache; F_FULLFSYNC flushes it. File
  // systems that cannot (some network and external ones) refuse it, and get fsync.
  if (retry_eintr([&] { return ::fcntl(fd, F_FULLFSYNC); }) == 0) return success();
  const int error = errno;
  if (error != ENOTSUP && error != EOPNOTSUPP && error != EINVAL && error != ENOTTY) {
    return posix::errno_failure(error, "fcntl");
  }
  if (retry_eintr([&] { return ::fsync(fd); }) != 0) return posix::errno_failure(errno, "fsync");
  return success();
}

Status lock_file(NativeHandle file) {
  // flock locks belong to the open file description, like Linux OFD locks, and go when
  // its last descriptor closes (or the holder dies).
  if (retry_eintr([&] { return ::flock(file, LOCK_EX | LOCK_NB); }) == 0) return success();
  if (errno == EWOULDBLOCK || errno == EAGAIN) return fail(Code::lock_busy, 0, "fcntl");
  return posix::errno_failure(errno, "flock");
}

Status unlock_file(NativeHandle file) {
  if (retry_eintr([&] { return ::flock(file, LOCK_UN); }) != 0) return posix::errno_failure(errno, "flock");
  return success();
}

Result<std::string> os::canonical_path(int fd, const std::string& opened_path) {
  (void)opened_path;  // F_GETPATH answers for any directory we hold open
  char buf[MAXPATHLEN];
  if (retry_eintr([&] { return ::fcntl(fd, F_GETPATH, buf); }) != 0) {
    return fail(Code::identity_unavailable, errno, "fcntl");
  }
  if (buf[0] != '/') return fail(Code::identity_unavailable, 0, "fcntl");
  return std::string(buf);
}

std::uint64_t random_u64() noexcept {
  std::uint64_t value = 0;
  ::arc4random_buf(&value, sizeof value);
  return value;
}

const char* os::platform_name() noexcept { return "darwin"; }

int os::ancestor_access() noexcept {
#if defined(O_SEARCH)
  // An SDK from macOS 13 on defines O_SEARCH (O_EXEC | O_DIRECTORY), which macOS 11 and 12
  // do not know: a build made with it for those asks the running system first.
  if (__builtin_available(macOS 13.0, *)) return O_SEARCH;
#endif
  return O_RDONLY;
}

}  // namespace gjc
