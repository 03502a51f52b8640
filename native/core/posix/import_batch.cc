// Importing files from an unmanaged directory into an owner-only one on POSIX, many files
// per call: a migration of thousands of small artifacts pays one crossing into the addon
// (and one thread-pool job) per batch instead of a dozen calls per file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "../eintr.h"
#include "../names.h"
#include "../platform.h"
#include "os_hooks.h"
#include "posix_util.h"

namespace gjc {
namespace {

bool is_version(const struct stat& st, const ImportRequest& want) {
  const StatInfo info = posix::stat_info_of(st);
  return info.dev == want.dev && info.ino == want.ino && info.size == want.size &&
         info.mtime_ns == want.mtime_ns && info.ctime_ns == want.ctime_ns;
}

// Fills the new copy `copy` from the source `in` through `data` and sets `out`.
void fill_copy(int in, NativeHandle copy, const ImportRequest& want, ImportEntry& out,
               unsigned char* data, Sha256& digest) {
  auto failed = [&](Failure failure) {
    out.outcome = ImportOutcome::failed;
    out.failure = failure;
  };
  const std::size_t size = static_cast<std::size_t>(want.size);
  auto got = read_to_end(in, data, size, 0);
  if (!got.ok()) return failed(got.failure());
  // Shorter, or one byte more: the file shrank or grew since its stat. Other changes while
  // or after it is read are the caller's to find, by checking the source again once all is
  // copied (a stat here as well would cost a syscall per file for a check the caller makes
  // later anyway, and later is stronger).
  if (got.value() != size) {
    out.outcome = ImportOutcome::changed;
    out.change = ImportChange::while_copying;
    return;
  }
  // The digest is of the bytes that read back equal, so it is the copy's (a copy that fails
  // ends the batch, so a half-fed digest is never finished). Small files are left to the
  // caller's one flush: a writeback request each measured slower.
  auto verified = write_verified(copy, data, size, 0, Writeback::later, &digest);
  if (!verified.ok()) return failed(verified.failure());
  if (!verified.value()) {
    out.outcome = ImportOutcome::mismatch;
    return;
  }
  auto sha256 = digest.finish();
  if (!sha256.ok()) return failed(sha256.failure());
  out.sha256 = sha256.value();
  out.outcome = ImportOutcome::copied;
}

// The copy of one source: everything import_files promises for a request, with the open
// source descriptor `in` already proven to be the requested version. A copy this call
// created but could not finish is removed again, so a request that is not copied leaves
// nothing behind.
// `dest_acl_free`: os::acl_check found no ACL on `dest`; `euid`: the caller's geteuid.
void copy_one(int in, NativeHandle dest, bool dest_acl_free, uid_t euid, const ImportRequest& want,
              ImportEntry& out, unsigned char* data, Sha256& digest) {
  auto created = dest_acl_free
                     ? posix::create_file_in_checked_dir(dest, want.name, euid)
                     : open_file(dest, want.name, FileOpenOptions{true, false, CreateMode::exclusive});
  if (!created.ok()) {
    out.outcome = ImportOutcome::failed;
    out.failure = created.failure();
    return;
  }
  const OwnedHandle copy = std::move(created).value();
  fill_copy(in, copy.get(), want, out, data, digest);
  // Best effort: the name was made by this call in the owner-only `dest`, so the unlink
  // fails only if something else already removed it.
  if (out.outcome != ImportOutcome::copied) (void)unlink_file(dest, want.name);
}

// Opens and checks the source of one request; leaves `out` set when it is not copyable.
OwnedHandle open_source(int dir, const ImportRequest& want, ImportEntry& out) {
  auto changed = [&](ImportChange change) {
    out.outcome = ImportOutcome::changed;
    out.change = change;
    return OwnedHandle();
  };
  if (!is_valid_name(want.name)) {
    out.outcome = ImportOutcome::failed;
    out.failure = fail(Code::invalid_name);
    return OwnedHandle();
  }
  // O_NONBLOCK: a FIFO swapped in since the snapshot must not hold the open. The descriptor
  // is only read with pread and closed here, so the flag never needs clearing.
  OwnedHandle in(retry_eintr([&] {
    return ::openat(dir, want.name.c_str(), O_RDONLY | O_NONBLOCK | posix::kBaseOpenFlags);
  }));
  if (!in.valid()) {
    out.failure = posix::errno_failure(errno, "openat");
    return changed(ImportChange::unopenable);
  }
  auto st = posix::fstat_of(in.get());
  if (!st.ok()) {
    out.outcome = ImportOutcome::failed;
    out.failure = st.failure();
    return OwnedHandle();
  }
  if (!S_ISREG(st.value().st_mode)) return changed(ImportChange::not_regular);
  if (st.value().st_nlink != 1) return changed(ImportChange::hardlink);
  if (!is_version(st.value(), want)) return changed(ImportChange::before_copy);
  return in;
}

}  // namespace

Result<ImportBatch> import_files(const std::string& source_dir, std::uint64_t dir_dev,
                                 std::uint64_t dir_ino, NativeHandle dest,
                                 const std::vector<ImportRequest>& requests,
                                 unsigned char* buffer, std::size_t capacity) {
  auto opened = posix::open_identified_dir(source_dir, dir_dev, dir_ino);
  if (!opened.ok()) return opened.failure();
  const OwnedHandle dir = std::move(opened).value();
  auto made = Sha256::create();
  if (!made.ok()) return made.failure();
  Sha256& digest = *made.value();
  // A file created in `dest` can only get an ACL by inheriting one from it: where `dest` has
  // none, one look for the batch replaces a look per copy. Where it has one (given to it
  // while it was held), each copy is checked and repaired in full, as open_file does.
  const bool dest_acl_free = os::acl_check(dest, true).ok();
  const uid_t euid = ::geteuid();

  ImportBatch batch;
  batch.entries.resize(requests.size());
  std::size_t used = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ImportRequest& want = requests[i];
    ImportEntry& out = batch.entries[i];
    // Room for the content and the byte that detects growth.
    if (want.size >= capacity - used) {
      out.outcome = ImportOutcome::deferred;
      continue;
    }
    const OwnedHandle in = open_source(dir.get(), want, out);
    if (in.valid()) copy_one(in.get(), dest, dest_acl_free, euid, want, out, buffer + used, digest);
    if (out.outcome != ImportOutcome::copied) break;
    out.data_offset = used;
    out.data_length = static_cast<std::size_t>(want.size);
    used += out.data_length;
  }
  return batch;
}

}  // namespace gjc
