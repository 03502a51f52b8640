// Kernel-released lock files and native directory identity on POSIX.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../platform.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {
namespace {

// Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool is_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra = 0;
    unsigned int min = 0;
    unsigned int cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { extra = 1; min = 0x80; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { extra = 2; min = 0x800; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { extra = 3; min = 0x10000; cp = c & 0x07; }
    else return false;
    if (i + extra >= s.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace

Result<OwnedHandle> try_lock(NativeHandle dir, std::string_view name, const void* record,
                             std::size_t record_length) {
  FileOpenOptions options;
  options.write = true;
  options.create = CreateMode::if_missing;
  auto file = open_file(dir, name, options);
  if (!file.ok()) return file.failure();
  auto taken = os::try_lock(file.value().get());
  if (!taken.ok()) return taken.failure();
  if (!taken.value()) return fail(Code::lock_busy, 0, "fcntl");
  const int fd = file.value().get();
  if (retry_eintr([&] { return ::ftruncate(fd, 0); }) != 0) {
    return posix::errno_failure(errno, "ftruncate");
  }
  auto written = write_at(fd, record, record_length, 0);
  if (!written.ok()) return written.failure();
  return std::move(file).value();
}

Status unlock(NativeHandle lock) {
  // Empty first, so a reader never sees a record of a holder that has let go.
  if (retry_eintr([&] { return ::ftruncate(lock, 0); }) != 0) {
    return posix::errno_failure(errno, "ftruncate");
  }
  return os::unlock(lock);
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
  if (!is_utf8(canonical.value())) return fail(Code::not_utf8);
  DirectoryIdentity identity;
  identity.platform = os::platform_name();
  identity.canonical_path = std::move(canonical).value();
  identity.dev = std::to_string(static_cast<unsigned long long>(st.value().st_dev));
  identity.ino = std::to_string(static_cast<unsigned long long>(st.value().st_ino));
  return identity;
}

}  // namespace gjc
