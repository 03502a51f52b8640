// Whole-file-system flush on Linux: one syncfs instead of an fsync per file.
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "../eintr.h"
#include "../platform.h"
#include "../posix/posix_util.h"

namespace gjc {
namespace {

// Before 5.8, syncfs returned 0 even when writeback failed, which would make it weaker
// than the per-file fsyncs it replaces; such kernels take the fallback.
bool syncfs_reports_errors() {
  static const bool reports = [] {
    struct utsname names {};
    if (::uname(&names) != 0) return false;
    char* rest = nullptr;
    const long major = std::strtol(names.release, &rest, 10);
    if (rest == names.release || *rest != '.') return false;
    const char* minor_text = rest + 1;
    const long minor = std::strtol(minor_text, &rest, 10);
    if (rest == minor_text) return false;
    return major > 5 || (major == 5 && minor >= 8);
  }();
  return reports;
}

}  // namespace

Result<FilesystemSync> sync_filesystem(NativeHandle handle) {
  if (!syncfs_reports_errors()) return FilesystemSync::unsupported;
  if (retry_eintr([&] { return ::syncfs(handle); }) == 0) return FilesystemSync::synced;
  // A seccomp sandbox that does not know the call answers ENOSYS: nothing was flushed, and
  // per-file syncs still work there.
  if (errno == ENOSYS) return FilesystemSync::unsupported;
  return posix::errno_failure(errno, "syncfs");
}

}  // namespace gjc
