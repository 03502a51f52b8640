// Linux answers to the POSIX hooks: renameat2 with a linkat fallback, OFD locks, procfs
// canonical paths, getrandom, and O_PATH for ancestors.
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
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

// The prebuilt addon targets glibc 2.17 and musl, which have no renameat2 (glibc added it in
// 2.28) or getrandom (2.25) to link against, while a newer libc has both. So they are weak
// references under names of our own (a libc header may declare them differently): null where
// the running libc lacks them, and then the system call is made directly. Going through the
// libc symbol whenever there is one keeps the call visible to LD_PRELOAD interposers.
extern "C" int gjc_libc_renameat2(int, const char*, int, const char*, unsigned int) __asm__("renameat2")
    __attribute__((weak));
extern "C" ssize_t gjc_libc_getrandom(void*, size_t, unsigned int) __asm__("getrandom") __attribute__((weak));

namespace gjc {
namespace {

// The kernel's values (linux/fs.h, linux/random.h), which older libc headers do not define.
constexpr unsigned int kRenameNoReplace = 1;
constexpr unsigned int kRandomNonBlock = 1;

int renameat2_noreplace(int dirfd, const char* from, const char* to) {
  if (gjc_libc_renameat2 != nullptr) return gjc_libc_renameat2(dirfd, from, dirfd, to, kRenameNoReplace);
  return static_cast<int>(::syscall(SYS_renameat2, dirfd, from, dirfd, to, kRenameNoReplace));
}

ssize_t getrandom_nonblock(void* buffer, size_t length) {
  if (gjc_libc_getrandom != nullptr) return gjc_libc_getrandom(buffer, length, kRandomNonBlock);
  return static_cast<ssize_t>(::syscall(SYS_getrandom, buffer, length, kRandomNonBlock));
}

// One F_OFD_SETLK request over the whole file, retried on EINTR.
int set_ofd_lock(int fd, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  return retry_eintr([&] { return ::fcntl(fd, F_OFD_SETLK, &lock); });
}

}  // namespace

Status os::rename_noreplace(int dirfd, const char* from, const char* to) {
  if (retry_eintr([&] { return renameat2_noreplace(dirfd, from, to); }) == 0) return success();
  // Only these say "this filesystem or kernel cannot do RENAME_NOREPLACE" (ENOSYS: a kernel
  // before 3.15); every other errno is a real answer and must not trigger the fallback.
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

int os::ancestor_access() noexcept { return O_PATH; }

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
  if (retry_eintr([&] { return getrandom_nonblock(&value, sizeof value); }) == static_cast<ssize_t>(sizeof value)) {
    return value;
  }
  // Without entropy, a process-unique counter mixed with time still makes names unique;
  // O_EXCL turns any collision into a clean failure rather than a clobber.
  static std::atomic<std::uint64_t> counter{0};
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return now ^ (static_cast<std::uint64_t>(::getpid()) << 40) ^ counter.fetch_add(1);
}

}  // namespace gjc
