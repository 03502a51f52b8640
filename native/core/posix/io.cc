// Reading, writing, listing and removing through held POSIX descriptors.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "../utf8.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {
namespace {

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};

EntryType entry_type_of_dirent(unsigned char d_type) {
  switch (d_type) {
    case DT_REG: return EntryType::file;
    case DT_DIR: return EntryType::directory;
    case DT_LNK: return EntryType::symlink;
    case DT_FIFO: return EntryType::fifo;
    case DT_SOCK: return EntryType::socket;
    case DT_CHR: return EntryType::char_device;
    case DT_BLK: return EntryType::block_device;
    default: return EntryType::unknown;
  }
}

}  // namespace

Result<std::vector<DirEntry>> list_directory(NativeHandle dir) {
  // A fresh open file description of the same directory ("." never names a link), so
  // listing neither moves nor closes the held descriptor.
  OwnedHandle own(retry_eintr([&] {
    return ::openat(dir, ".", O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags);
  }));
  if (!own.valid()) return posix::errno_failure(errno, "openat");
  std::unique_ptr<DIR, DirCloser> stream(::fdopendir(own.get()));
  if (!stream) return posix::errno_failure(errno, "fdopendir");
  own.release();  // now owned by the DIR stream
  std::vector<DirEntry> entries;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(stream.get());
    if (entry == nullptr) {
      if (errno != 0) return posix::errno_failure(errno, "readdir");
      break;
    }
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    // A name JS cannot hold exactly would come back altered and then name nothing (or
    // something else): refuse the listing rather than hand out a wrong name.
    if (!is_valid_utf8(entry->d_name)) return fail(Code::not_utf8, 0, "readdir");
    entries.push_back(DirEntry{entry->d_name, entry_type_of_dirent(entry->d_type)});
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

Result<std::size_t> read_at(NativeHandle file, void* buffer, std::size_t length,
                            std::uint64_t offset) {
  const ssize_t n = retry_eintr([&] {
    return ::pread(file, buffer, length, static_cast<off_t>(offset));
  });
  if (n < 0) return posix::errno_failure(errno, "pread");
  return static_cast<std::size_t>(n);
}

Result<std::size_t> write_at(NativeHandle file, const void* data, std::size_t length,
                             std::uint64_t offset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = retry_eintr([&] {
      return ::pwrite(file, bytes + done, length - done, static_cast<off_t>(offset + done));
    });
    if (n < 0) return posix::errno_failure(errno, "pwrite");
    done += static_cast<std::size_t>(n);
  }
  return length;
}

Result<std::size_t> write_append(NativeHandle file, const void* data, std::size_t length) {
  // O_APPEND puts every write at the end; a short write (disk full, signal after partial
  // progress) continues from where it stopped, so the record is never interleaved with
  // our own later appends.
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = retry_eintr([&] { return ::write(file, bytes + done, length - done); });
    if (n < 0) return posix::errno_failure(errno, "write");
    done += static_cast<std::size_t>(n);
  }
  return length;
}

Status sync_handle(NativeHandle handle) { return os::full_sync(handle); }

Status unlink_file(NativeHandle dir, std::string_view name) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string n(name);
  if (retry_eintr([&] { return ::unlinkat(dir, n.c_str(), 0); }) != 0) {
    return posix::errno_failure(errno, "unlinkat");
  }
  return success();
}

Status set_file_times(NativeHandle file, std::int64_t atime_ns, std::int64_t mtime_ns) {
  auto spec = [](std::int64_t ns) {
    struct timespec t {};
    // Floor division: a time before 1970 keeps a non-negative nanosecond part.
    std::int64_t sec = ns / 1000000000;
    std::int64_t rem = ns % 1000000000;
    if (rem < 0) {
      rem += 1000000000;
      --sec;
    }
    t.tv_sec = static_cast<time_t>(sec);
    t.tv_nsec = static_cast<long>(rem);
    return t;
  };
  const struct timespec times[2] = {spec(atime_ns), spec(mtime_ns)};
  if (retry_eintr([&] { return ::futimens(file, times); }) != 0) return posix::errno_failure(errno, "futimens");
  return success();
}

}  // namespace gjc
