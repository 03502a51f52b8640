// Opening legacy sources on POSIX: objects older tools made below the agent directory with
// looser permissions (0755 directories, 0644 files), read by descriptor without following
// a link, and accepted only when nobody but their owner, the effective user, can change them.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {

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
  if (absolute_path.size() < 2 || absolute_path[0] != '/' || absolute_path.back() == '/' ||
      absolute_path.find('\0') != std::string::npos) {
    return fail(Code::invalid_argument);
  }
  const std::size_t cut = absolute_path.rfind('/');
  const std::string parent = cut == 0 ? "/" : absolute_path.substr(0, cut);
  const std::string name = absolute_path.substr(cut + 1);
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  // Links in the ancestors are resolved once, as open_root resolves them, and the resolved
  // chain must be one no other user can replace.
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(parent.c_str(), nullptr), &std::free);
  if (!real) return posix::errno_failure(errno, "realpath");
  auto dir = posix::open_safe_ancestors(real.get(), false);
  if (!dir.ok()) return dir.failure();
  return open_source(dir.value().get(), name, true);
}

}  // namespace gjc
