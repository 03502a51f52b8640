// The batch read of one directory on Windows, built from the verified primitives: each
// regular file goes through open_file (the owner-only open and verdict) and is read whole,
// and every other entry is stat'ed without following a reparse point. Windows pays per-file
// handle costs either way; the point here is the same contract as POSIX in one crossing.
#include <string>
#include <vector>

#include "../platform.h"
#include "../read_batch_sink.h"

namespace gjc {
namespace {

// The file of a regular-file directory entry: open_file makes the owner-only verdict on
// the handle, whose stat is then the one reported.
void read_one(NativeHandle dir, std::size_t max_file_bytes, BatchEntry& out, BatchSink& sink) {
  auto refuse = [&](Failure failure) {
    out.outcome = BatchOutcome::refused;
    out.failure = failure;
  };
  auto opened = open_file(dir, out.name, FileOpenOptions{});
  if (!opened.ok()) return refuse(opened.failure());
  const OwnedHandle file = std::move(opened).value();
  auto held = stat_handle(file.get());
  if (!held.ok()) return refuse(held.failure());
  out.stated = true;
  out.stat = held.value();
  read_whole_into(file.get(), out.stat.size, max_file_bytes, out, sink);
}

}  // namespace

Result<std::vector<BatchEntry>> read_directory_batch(NativeHandle dir, std::size_t max_file_bytes,
                                                     unsigned char* buffer, std::size_t capacity) {
  auto listed = list_directory(dir);
  if (!listed.ok()) return listed.failure();
  BatchSink sink{buffer, capacity};
  std::vector<BatchEntry> entries;
  entries.reserve(listed.value().size());
  for (DirEntry& entry : listed.value()) {
    BatchEntry& out = entries.emplace_back();
    out.name = std::move(entry.name);
    out.type = entry.type;
    if (out.type == EntryType::file) {
      read_one(dir, max_file_bytes, out, sink);
      continue;
    }
    auto named = stat_entry(dir, out.name);
    if (!named.ok()) {
      out.outcome = BatchOutcome::refused;
      out.failure = named.failure();
      continue;
    }
    out.stated = true;
    out.stat = named.value();
  }
  return entries;
}

}  // namespace gjc
