#include "posix_util.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "../eintr.h"
#include "../portable.h"

namespace gjc::posix {
namespace {

EntryType entry_type_of(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return EntryType::file;
    case S_IFDIR:
      return EntryType::directory;
    case S_IFLNK:
      return EntryType::symlink;
    case S_IFIFO:
      return EntryType::fifo;
    case S_IFSOCK:
      return EntryType::socket;
    case S_IFCHR:
      return EntryType::char_device;
    case S_IFBLK:
      return EntryType::block_device;
    default:
      return EntryType::unknown;
  }
}

std::int64_t ns_of(const struct timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};

}  // namespace

Failure errno_failure(int error, const char* syscall) { return fail(code_of_errno(error), error, syscall); }

Status link_then_unlink(int dirfd, const char* from, const char* to) {
  if (retry_eintr([&] { return ::linkat(dirfd, from, dirfd, to, 0); }) != 0) {
    const int error = errno;
    if (error == EEXIST) return fail(Code::already_exists, error, "linkat");
    if (error == ENOENT) return fail(Code::not_found, error, "linkat");
    return fail(Code::io_error, error, "linkat");
  }
  if (retry_eintr([&] { return ::unlinkat(dirfd, from, 0); }) != 0) return errno_failure(errno, "unlinkat");
  return success();
}

Result<struct stat> fstat_of(int fd) {
  struct stat st {};
  if (retry_eintr([&] { return ::fstat(fd, &st); }) != 0) return errno_failure(errno, "fstat");
  return st;
}

Status check_stat(const struct stat& st, bool directory, ModeRule rule) {
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    if (S_ISLNK(st.st_mode)) return fail(Code::symlink_refused, 0, "fstat");
    return fail(directory ? Code::not_directory : Code::not_regular_file, 0, "fstat");
  }
  if (st.st_uid != ::geteuid()) return fail(Code::owner_mismatch, 0, "fstat");
  const mode_t mode = st.st_mode & 07777;
  if ((rule == ModeRule::exact && mode != (directory ? 0700 : 0600)) ||
      (rule == ModeRule::no_foreign_write && (mode & (S_IWGRP | S_IWOTH)) != 0)) {
    return fail(Code::mode_mismatch, 0, "fstat");
  }
  if (!directory && st.st_nlink != 1) {
    // Zero links means the file was removed while we held it: it is no longer the object
    // the name leads to.
    return fail(st.st_nlink == 0 ? Code::identity_mismatch : Code::hardlink_refused, 0, "fstat");
  }
  return success();
}

Status check_fd(int fd, bool directory, ModeRule rule) {
  auto st = fstat_of(fd);
  if (!st.ok()) return st.failure();
  return check_stat(st.value(), directory, rule);
}

Status check_same_entry(int dir, const char* name, int fd) {
  struct stat named {};
  if (retry_eintr([&] { return ::fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW); }) != 0) {
    return errno_failure(errno, "fstatat");
  }
  auto held = fstat_of(fd);
  if (!held.ok()) return held.failure();
  if (named.st_dev != held.value().st_dev || named.st_ino != held.value().st_ino) {
    return fail(Code::identity_mismatch, 0, "fstatat");
  }
  return success();
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
  info.atime_ns = ns_of(st.st_atimespec);
  info.mtime_ns = ns_of(st.st_mtimespec);
  info.ctime_ns = ns_of(st.st_ctimespec);
#else
  info.atime_ns = ns_of(st.st_atim);
  info.mtime_ns = ns_of(st.st_mtim);
  info.ctime_ns = ns_of(st.st_ctim);
#endif
  return info;
}

}  // namespace gjc::posix

namespace gjc {

Result<std::vector<DirEntry>> read_entries(NativeHandle dir) {
  // "." never names a link.
  OwnedHandle own(retry_eintr([&] { return ::openat(dir, ".", O_RDONLY | O_DIRECTORY | posix::kBaseOpenFlags); }));
  if (!own.valid()) return posix::errno_failure(errno, "openat");
  std::unique_ptr<DIR, posix::DirCloser> stream(::fdopendir(own.get()));
  if (!stream) return posix::errno_failure(errno, "fdopendir");
  own.release();  // now owned by the DIR stream
  std::vector<DirEntry> entries;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(stream.get());
    if (entry == nullptr) {
      if (errno != 0) return posix::errno_failure(errno, "readdir");
      return entries;
    }
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    // DTTOIF turns a d_type into its S_IFMT bits; DT_UNKNOWN (0) gives unknown.
    entries.push_back(DirEntry{entry->d_name, posix::entry_type_of(DTTOIF(entry->d_type))});
  }
}

}  // namespace gjc
