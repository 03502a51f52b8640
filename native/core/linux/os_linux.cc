// Linux answers to the POSIX hooks: renameat2 with a linkat fallback, OFD locks, procfs
// canonical paths, getrandom.
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <string>

#include "../eintr.h"
#include "../portable.h"
#include "../posix/posix_util.h"

namespace gjc {
namespace {

// One F_OFD_SETLK request over the whole file, retried on EINTR.
int set_ofd_lock(int fd, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  return retry_eintr([&] { return ::fcntl(fd, F_OFD_SETLK, &lock); });
}

}  // namespace

Status os::rename_noreplace(int dirfd, const char* from, const char* to) {
  if (retry_eintr([&] { return ::renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE); }) == 0) return success();
  // Only these say "this filesystem or kernel cannot do RENAME_NOREPLACE"; every other
  // errno is a real answer and must not trigger the fallback.
  if (errno != EINVAL && errno != ENOSYS) return posix::errno_failure(errno, "renameat2");
  return posix::link_then_unlink(dirfd, from, to);
}

Status sync_handle(NativeHandle fd) {
  if (retry_eintr([&] { return ::fsync(fd); }) != 0) return posix::errno_failure(errno, "fsync");
  return success();
}

Result<std::string> os::canonical_path(int fd, const std::string& opened_path) {
  // The kernel's own name for the held descriptor; realpath of the original path only when
  // procfs is unavailable, accepted only if it still leads to the same directory.
  char buf[PATH_MAX + 1];
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(proc.c_str(), buf, PATH_MAX);
  if (n > 0 && buf[0] == '/') return std::string(buf, static_cast<std::size_t>(n));
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(opened_path.c_str(), nullptr), &std::free);
  if (!real) return fail(Code::identity_unavailable, errno, "realpath");
  struct stat by_path {};
  auto held = posix::fstat_of(fd);
  if (!held.ok() || ::stat(real.get(), &by_path) != 0 || by_path.st_dev != held.value().st_dev ||
      by_path.st_ino != held.value().st_ino) {
    return fail(Code::identity_unavailable, 0, "realpath");
  }
  return std::string(real.get());
}

const char* os::platform_name() noexcept { return "linux"; }

Status lock_file(NativeHandle file) {
  if (set_ofd_lock(file, F_WRLCK) == 0) return success();
  if (errno == EAGAIN || errno == EACCES) return fail(Code::lock_busy, 0, "fcntl");
  return posix::errno_failure(errno, "fcntl");
}

Status unlock_file(NativeHandle file) {
  if (set_ofd_lock(file, F_UNLCK) != 0) return posix::errno_failure(errno, "fcntl");
  return success();
}

std::uint64_t random_u64() noexcept {
  std::uint64_t value = 0;
  if (retry_eintr([&] { return ::getrandom(&value, sizeof value, GRND_NONBLOCK); }) ==
      static_cast<ssize_t>(sizeof value)) {
    return value;
  }
  // Without entropy, a process-unique counter mixed with time still makes names unique;
  // O_EXCL turns any collision into a clean failure rather than a clobber.
  static std::atomic<std::uint64_t> counter{0};
  const auto now = static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  return now ^ (static_cast<std::uint64_t>(::getpid()) << 40) ^ counter.fetch_add(1);
}

}  // namespace gjc
