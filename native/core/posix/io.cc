// Reading, writing, listing, removing and publishing through held POSIX descriptors, lock
// records, and directory identity.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../portable.h"
#include "posix_util.h"

namespace gjc {
namespace {

// Calls `write_some(done)` until all `length` bytes are written: a short write (disk full,
// a signal after partial progress) continues from where it stopped.
template <class WriteSome>
Result<std::size_t> write_fully(std::size_t length, const char* syscall, WriteSome write_some) {
  for (std::size_t done = 0; done < length;) {
    const ssize_t n = retry_eintr([&] { return write_some(done); });
    if (n < 0) return posix::errno_failure(errno, syscall);
    done += static_cast<std::size_t>(n);
  }
  return length;
}

}  // namespace

Result<std::vector<DirEntry>> list_directory(NativeHandle dir) {
  auto entries = read_entries(dir);
  if (!entries.ok()) return entries;
  // A name JS cannot hold exactly would come back altered and then name nothing (or
  // something else): refuse the listing rather than hand out a wrong name.
  for (const DirEntry& entry : entries.value()) {
    if (!is_valid_utf8(entry.name)) return fail(Code::not_utf8, 0, "readdir");
  }
  return entries;
}

Result<StatInfo> stat_entry(NativeHandle dir, std::string_view name) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  struct stat st {};
  if (retry_eintr([&] { return ::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW); }) != 0) {
    return posix::errno_failure(errno, "fstatat");
  }
  return posix::stat_info_of(st);
}

Result<StatInfo> stat_handle(NativeHandle handle) {
  auto st = posix::fstat_of(handle);
  if (!st.ok()) return st.failure();
  return posix::stat_info_of(st.value());
}

Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length, std::uint64_t offset) {
  const ssize_t n = retry_eintr([&] { return ::pread(file, buffer, length, static_cast<off_t>(offset)); });
  if (n < 0) return posix::errno_failure(errno, "pread");
  return static_cast<std::size_t>(n);
}

Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length, std::uint64_t offset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  return write_fully(length, "pwrite", [&](std::size_t done) {
    return ::pwrite(file, bytes + done, length - done, static_cast<off_t>(offset + done));
  });
}

// O_APPEND puts every piece at the end, so the record is never interleaved with our own
// later appends.
Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  return write_fully(length, "write", [&](std::size_t done) { return ::write(file, bytes + done, length - done); });
}

Status unlink_file(NativeHandle dir, std::string_view name) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  if (retry_eintr([&] { return ::unlinkat(dir, n.c_str(), 0); }) != 0) return posix::errno_failure(errno, "unlinkat");
  return success();
}

Status set_file_times(NativeHandle file, std::int64_t atime_ns, std::int64_t mtime_ns) {
  auto spec = [](std::int64_t ns) {
    // Floor division: a time before 1970 keeps a non-negative nanosecond part.
    std::int64_t sec = ns / 1000000000, rem = ns % 1000000000;
    if (rem < 0) {
      rem += 1000000000;
      --sec;
    }
    struct timespec t {};
    t.tv_sec = static_cast<time_t>(sec);
    t.tv_nsec = static_cast<long>(rem);
    return t;
  };
  const struct timespec times[2] = {spec(atime_ns), spec(mtime_ns)};
  if (retry_eintr([&] { return ::futimens(file, times); }) != 0) return posix::errno_failure(errno, "futimens");
  return success();
}

Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to) {
  if (!is_valid_name(from) || !is_valid_name(to)) return fail(Code::invalid_name);
  auto renamed = os::rename_noreplace(dir, std::string(from).c_str(), std::string(to).c_str());
  if (!renamed.ok()) return renamed;
  return sync_handle(dir);
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
  auto same = posix::check_same_entry(dir, target.c_str(), file);
  if (!same.ok()) return same;
  // The rename is durable only once the directory is synced (Windows needs no such step).
  return sync_handle(dir);
}

void discard_staged(NativeHandle dir, NativeHandle, const std::string& tmp, std::string_view) {
  ::unlinkat(dir, tmp.c_str(), 0);  // after a publish the name is gone and this changes nothing
}

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
