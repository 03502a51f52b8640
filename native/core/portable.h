// The primitives portable.cc composes into lock files, atomic writes and tree removal, so
// those exist once for every platform; each platform implements these in its own files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform.h"

namespace gjc {

Status truncate_file(NativeHandle file);  // empties an open file

// Takes the kernel lock of an open lock file without waiting (lock_busy when another open
// file description holds it); the kernel drops it when the handle closes or the holder dies.
Status lock_file(NativeHandle file);
Status unlock_file(NativeHandle file);

std::uint64_t random_u64() noexcept;  // for temporary names; the exclusive create refuses a collision

// Publishes the written, synced and verified temporary `tmp`, open as `file`, under `name`
// in `dir` (replacing, or never with `no_replace`), and checks `name` then leads to `file`.
Status publish_staged(NativeHandle dir, NativeHandle file, const std::string& tmp, std::string_view name,
                      bool no_replace);

// Removes the temporary of a failed atomic write, and never the published file.
void discard_staged(NativeHandle dir, NativeHandle file, const std::string& tmp, std::string_view name);

struct TreeBudget {
  std::uint32_t max_depth;
  std::size_t max_entries;
  std::size_t met = 0;
};

// A directory's entries as the OS spells them (a tree is removed whatever its names), from a
// fresh enumeration that leaves the held handle's position alone.
Result<std::vector<DirEntry>> read_entries(NativeHandle dir);

// Removes entry `name` of `dir`, a directory by verifying and emptying it first (it sits at
// `depth`), and counts it against `budget`.
Status remove_entry(NativeHandle dir, const std::string& name, std::uint32_t depth, TreeBudget& budget);

// The platform call that removes an entry, named in the failure of a directory that keeps filling.
extern const char* const kRemoveEntryCall;

// Removes every entry of the verified directory `dir`, which sits at `depth`.
Status empty_dir(NativeHandle dir, std::uint32_t depth, TreeBudget& budget);

}  // namespace gjc
