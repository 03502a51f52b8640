// Where read_directory_batch puts file contents, shared by every platform's batch so the
// buffer accounting (bound, room left, growth detection) is decided in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform.h"

namespace gjc {

// The caller's buffer and how much of it the batch has used so far.
struct BatchSink {
  unsigned char* buffer;
  std::size_t capacity;
  std::size_t used = 0;
};

// Reads the whole content of `file`, already opened and judged owner-only, whose handle
// reported `size` bytes, into `sink`, and sets the outcome of `out`: `too_large` past
// `max_file_bytes` or when the file grew after its stat, `deferred` when it does not fit in
// what is left of the buffer, `refused` when the read fails, else `read`.
void read_whole_into(NativeHandle file, std::uint64_t size, std::size_t max_file_bytes,
                     BatchEntry& out, BatchSink& sink);

}  // namespace gjc
