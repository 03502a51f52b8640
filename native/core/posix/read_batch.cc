// The batch read of one directory on POSIX: list, stat, open owner-only, read whole and
// close every regular file in one call, so a walk over thousands of small files pays one
// crossing into the addon per directory instead of several per file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "../read_batch_sink.h"
#include "posix_util.h"

namespace gjc {
namespace {

// Opens, verifies and reads the file named by a regular-file directory entry, appending
// its content to `sink`. Sets the outcome (and failure) of `out`. The name is not stat'ed
// first: the open never follows a link nor waits on a FIFO, and the verdict (type included)
// is made on the fstat of the descriptor, the object actually read, so a stat of the name
// would cost a syscall per file and decide nothing.
void read_one(int dir, uid_t euid, std::size_t max_file_bytes, BatchEntry& out, BatchSink& sink) {
  auto refuse = [&](Failure failure) {
    out.outcome = BatchOutcome::refused;
    out.failure = failure;
  };
  // O_NONBLOCK: had the entry been replaced by a FIFO since the listing, the open must not
  // wait for a writer. The descriptor is closed here, so the flag never needs clearing.
  OwnedHandle fd(retry_eintr([&] {
    return ::openat(dir, out.name.c_str(), O_RDONLY | O_NONBLOCK | posix::kBaseOpenFlags);
  }));
  if (!fd.valid()) return refuse(posix::errno_failure(errno, "openat"));
  auto held = posix::fstat_of(fd.get());
  if (!held.ok()) return refuse(held.failure());
  const struct stat& st = held.value();
  out.stated = true;
  out.stat = posix::stat_info_of(st);
  auto verdict = posix::verify_with_stat(fd.get(), st, false, euid);
  if (!verdict.ok()) return refuse(verdict.failure());
  read_whole_into(fd.get(), static_cast<std::uint64_t>(st.st_size), max_file_bytes, out, sink);
}

}  // namespace

Result<std::vector<BatchEntry>> read_directory_batch(NativeHandle dir, std::size_t max_file_bytes,
                                                     unsigned char* buffer, std::size_t capacity) {
  auto listed = list_directory(dir);
  if (!listed.ok()) return listed.failure();
  // Once per batch: the owner every file must have.
  const uid_t euid = ::geteuid();
  BatchSink sink{buffer, capacity};
  std::vector<BatchEntry> entries;
  entries.reserve(listed.value().size());
  for (DirEntry& entry : listed.value()) {
    BatchEntry& out = entries.emplace_back();
    out.name = std::move(entry.name);
    out.type = entry.type;
    if (!is_valid_name(out.name)) {
      out.outcome = BatchOutcome::refused;
      out.failure = fail(Code::invalid_name);
      continue;
    }
    if (out.type == EntryType::file) {
      read_one(dir, euid, max_file_bytes, out, sink);
      continue;
    }
    struct stat named {};
    if (retry_eintr([&] { return ::fstatat(dir, out.name.c_str(), &named, AT_SYMLINK_NOFOLLOW); }) != 0) {
      out.outcome = BatchOutcome::refused;
      out.failure = posix::errno_failure(errno, "fstatat");
      continue;
    }
    out.stated = true;
    out.stat = posix::stat_info_of(named);
  }
  return entries;
}

}  // namespace gjc
