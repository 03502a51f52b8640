#include "posix_util.h"

#include <unistd.h>

#include <cerrno>

#include "../eintr.h"

namespace gjc::posix {

Failure errno_failure(int error, const char* syscall) {
  switch (error) {
    case ENOENT: return fail(Code::not_found, error, syscall);
    case EEXIST: return fail(Code::already_exists, error, syscall);
    case ELOOP: return fail(Code::symlink_refused, error, syscall);
    case ENOTDIR: return fail(Code::not_directory, error, syscall);
    case EISDIR:
    case ENXIO: return fail(Code::not_regular_file, error, syscall);
    case EACCES:
    case EPERM: return fail(Code::permission_denied, error, syscall);
    case ENAMETOOLONG: return fail(Code::invalid_name, error, syscall);
    default: return fail(Code::io_error, error, syscall);
  }
}

Status link_then_unlink(int dirfd, const char* from, const char* to) {
  if (retry_eintr([&] { return ::linkat(dirfd, from, dirfd, to, 0); }) != 0) {
    const int error = errno;
    if (error == EEXIST) return fail(Code::already_exists, error, "linkat");
    if (error == ENOENT) return fail(Code::not_found, error, "linkat");
    return fail(Code::io_error, error, "linkat");
  }
  if (retry_eintr([&] { return ::unlinkat(dirfd, from, 0); }) != 0) {
    return errno_failure(errno, "unlinkat");
  }
  return success();
}

Result<struct stat> fstat_of(int fd) {
  struct stat st {};
  if (retry_eintr([&] { return ::fstat(fd, &st); }) != 0) return errno_failure(errno, "fstat");
  return st;
}

EntryType entry_type_of(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return EntryType::file;
    case S_IFDIR: return EntryType::directory;
    case S_IFLNK: return EntryType::symlink;
    case S_IFIFO: return EntryType::fifo;
    case S_IFSOCK: return EntryType::socket;
    case S_IFCHR: return EntryType::char_device;
    case S_IFBLK: return EntryType::block_device;
    default: return EntryType::unknown;
  }
}

Failure explain_dir_open_failure(int parent, const char* name, int error, const char* syscall) {
  if (error != ENOTDIR && error != ELOOP) return errno_failure(error, syscall);
  struct stat st {};
  if (retry_eintr([&] { return ::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW); }) == 0 && !S_ISLNK(st.st_mode)) {
    return fail(Code::not_directory, error, syscall);
  }
  return fail(Code::symlink_refused, error, syscall);
}

StatInfo stat_info_of(const struct stat& st) {
  StatInfo info;
  info.type = entry_type_of(st.st_mode);
  info.dev = static_cast<std::uint64_t>(st.st_dev);
  info.ino = static_cast<std::uint64_t>(st.st_ino);
  info.size = static_cast<std::uint64_t>(st.st_size);
  info.nlink = static_cast<std::uint64_t>(st.st_nlink);
  info.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  info.uid = static_cast<std::uint64_t>(st.st_uid);
#if defined(__APPLE__)
  info.atime_ns = static_cast<std::int64_t>(st.st_atimespec.tv_sec) * 1000000000 + st.st_atimespec.tv_nsec;
  info.mtime_ns = static_cast<std::int64_t>(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
  info.ctime_ns = static_cast<std::int64_t>(st.st_ctimespec.tv_sec) * 1000000000 + st.st_ctimespec.tv_nsec;
#else
  info.atime_ns = static_cast<std::int64_t>(st.st_atim.tv_sec) * 1000000000 + st.st_atim.tv_nsec;
  info.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  info.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
#endif
  return info;
}

}  // namespace gjc::posix
