// Lock files, atomic writes and tree removal, composed from platform.h and portable.h
// primitives: one implementation for every platform.
#include "portable.h"

#include <cerrno>

#include "names.h"

namespace gjc {

Result<OwnedHandle> try_lock(NativeHandle dir, std::string_view name, const void* record, std::size_t record_length) {
  FileOpenOptions options;
  options.write = true;
  options.create = CreateMode::if_missing;
  auto file = open_file(dir, name, options);
  if (!file.ok()) return file.failure();
  const NativeHandle h = file.value().get();
  auto locked = lock_file(h);
  if (locked.ok()) locked = truncate_file(h);
  if (!locked.ok()) return locked.failure();
  auto written = write_at(h, record, record_length, 0);
  if (!written.ok()) return written.failure();
  return std::move(file).value();
}

Status unlock(NativeHandle lock) {
  // Empty first, so a reader never sees a record of a holder that has let go.
  auto emptied = truncate_file(lock);
  if (!emptied.ok()) return emptied;
  return unlock_file(lock);
}

Status write_file_atomic(NativeHandle dir, std::string_view name, const void* data, std::size_t length,
                         bool no_replace) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string tmp = staging_name(name, random_u64());
  FileOpenOptions options;
  options.write = true;
  options.create = CreateMode::exclusive;
  auto file = open_file(dir, tmp, options);
  if (!file.ok()) return file.failure();
  const NativeHandle h = file.value().get();
  Status status = [&]() -> Status {
    auto written = write_at(h, data, length, 0);
    if (!written.ok()) return written.failure();
    auto synced = sync_handle(h);
    if (!synced.ok()) return synced;
    auto verified = verify_file(h);
    if (!verified.ok()) return verified.failure();
    return publish_staged(dir, h, tmp, name, no_replace);
  }();
  if (!status.ok()) discard_staged(dir, h, tmp, name);
  return status;
}

Status empty_dir(NativeHandle dir, std::uint32_t depth, TreeBudget& budget) {
  // Rounds of listing and removing before giving up on entries that keep appearing
  // (somebody else is writing into the directory).
  for (int pass = 0; pass < 3; ++pass) {
    auto entries = read_entries(dir);
    if (!entries.ok()) return entries.failure();
    if (entries.value().empty()) return success();
    for (const DirEntry& entry : entries.value()) {
      auto removed = remove_entry(dir, entry.name, depth, budget);
      if (!removed.ok()) return removed;
    }
  }
  auto left = read_entries(dir);
  if (!left.ok()) return left.failure();
  return left.value().empty() ? success() : fail(Code::io_error, ENOTEMPTY, kRemoveEntryCall);
}

}  // namespace gjc
