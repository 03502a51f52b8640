// No-replace publication and atomic replacement of files in a held directory.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {
namespace {

Status write_and_publish(int dir, const std::string& tmp, const std::string& name,
                         const void* data, std::size_t length, bool no_replace) {
  FileOpenOptions options;
  options.write = true;
  options.create = CreateMode::exclusive;
  auto file = open_file(dir, tmp, options);
  if (!file.ok()) return file.failure();
  const int fd = file.value().get();
  auto written = write_at(fd, data, length, 0);
  if (!written.ok()) return written.failure();
  auto synced = os::full_sync(fd);
  if (!synced.ok()) return synced;
  auto verified = verify_file(fd);
  if (!verified.ok()) return verified.failure();
  if (no_replace) {
    auto published = os::rename_noreplace(dir, tmp.c_str(), name.c_str());
    if (!published.ok()) return published;
  } else if (retry_eintr([&] { return ::renameat(dir, tmp.c_str(), dir, name.c_str()); }) != 0) {
    return posix::errno_failure(errno, "renameat");
  }
  // The name must now lead to exactly the inode we wrote.
  auto same = posix::check_same_entry(dir, name.c_str(), fd);
  if (!same.ok()) return same;
  return os::full_sync(dir);
}

}  // namespace

Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to) {
  if (!is_valid_name(from) || !is_valid_name(to)) return fail(Code::invalid_name);
  auto renamed = os::rename_noreplace(dir, std::string(from).c_str(), std::string(to).c_str());
  if (!renamed.ok()) return renamed;
  return os::full_sync(dir);
}

Status write_file_atomic(NativeHandle dir, std::string_view name, const void* data,
                         std::size_t length, bool no_replace) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string target(name);
  const std::string tmp = staging_name(target, os::random_u64());
  auto status = write_and_publish(dir, tmp, target, data, length, no_replace);
  // The temporary is gone after a successful publish; on any failure it must not linger.
  if (!status.ok()) ::unlinkat(dir, tmp.c_str(), 0);
  return status;
}

}  // namespace gjc
