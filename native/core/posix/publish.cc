// No-replace publication, and the publish step of an atomic write, in a held directory.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../portable.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {

Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to) {
  if (!is_valid_name(from) || !is_valid_name(to)) return fail(Code::invalid_name);
  auto renamed = os::rename_noreplace(dir, std::string(from).c_str(), std::string(to).c_str());
  if (!renamed.ok()) return renamed;
  return os::full_sync(dir);
}

Status publish_staged(NativeHandle dir, NativeHandle file, const std::string& tmp, std::string_view name,
                      bool no_replace) {
  const std::string target(name);
  if (no_replace) {
    auto published = os::rename_noreplace(dir, tmp.c_str(), target.c_str());
    if (!published.ok()) return published;
  } else if (retry_eintr([&] { return ::renameat(dir, tmp.c_str(), dir, target.c_str()); }) != 0) {
    return posix::errno_failure(errno, "renameat");
  }
  return posix::check_same_entry(dir, target.c_str(), file);
}

void discard_staged(NativeHandle dir, NativeHandle, const std::string& tmp, std::string_view) {
  ::unlinkat(dir, tmp.c_str(), 0);  // after a publish the name is gone and this changes nothing
}

}  // namespace gjc
