// Emptying lock records and native directory identity on POSIX.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../portable.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {

Status truncate_file(NativeHandle file) {
  if (retry_eintr([&] { return ::ftruncate(file, 0); }) != 0) return posix::errno_failure(errno, "ftruncate");
  return success();
}

Result<DirectoryIdentity> directory_identity(const std::string& path) {
  if (path.empty() || path.find('\0') != std::string::npos) return fail(Code::invalid_argument);
  // Links are followed on purpose: an identity names the directory a path leads to.
  OwnedHandle fd(retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!fd.valid()) {
    const int error = errno;
    if (error == ENOENT) return fail(Code::not_found, error, "open");
    if (error == ENOTDIR) return fail(Code::not_directory, error, "open");
    return fail(Code::io_error, error, "open");
  }
  auto network = os::is_network_fs(fd.get());
  if (!network.ok()) return network.failure();
  if (network.value()) return fail(Code::network_unsupported, 0, "fstatfs");
  auto st = posix::fstat_of(fd.get());
  if (!st.ok()) return st.failure();
  auto canonical = os::canonical_path(fd.get(), path);
  if (!canonical.ok()) return canonical.failure();
  if (!is_valid_utf8(canonical.value())) return fail(Code::not_utf8);
  DirectoryIdentity identity;
  identity.platform = os::platform_name();
  identity.canonical_path = std::move(canonical).value();
  identity.dev = std::to_string(static_cast<unsigned long long>(st.value().st_dev));
  identity.ino = std::to_string(static_cast<unsigned long long>(st.value().st_ino));
  return identity;
}

}  // namespace gjc
