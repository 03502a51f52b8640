#include "read_batch_sink.h"

namespace gjc {

void read_whole_into(NativeHandle file, std::uint64_t size, std::size_t max_file_bytes,
                     BatchEntry& out, BatchSink& sink) {
  if (size > max_file_bytes) {
    out.outcome = BatchOutcome::too_large;
    return;
  }
  // One byte more than the size: a read that fills it shows the file grew and its end was
  // not seen; the caller then reads it the ordinary way.
  const std::size_t want = static_cast<std::size_t>(size) + 1;
  if (want > sink.capacity - sink.used) {
    out.outcome = BatchOutcome::deferred;
    return;
  }
  auto n = read_to_end(file, sink.buffer + sink.used, static_cast<std::size_t>(size), 0);
  if (!n.ok()) {
    out.outcome = BatchOutcome::refused;
    out.failure = n.failure();
    return;
  }
  const std::size_t got = n.value();
  if (got == want) {
    out.outcome = BatchOutcome::too_large;
    return;
  }
  out.outcome = BatchOutcome::read;
  out.data_offset = sink.used;
  out.data_length = got;
  sink.used += got;
}

}  // namespace gjc
