// Whole reads, and writes proven by reading them back, on every platform: the copies a
// migration makes are hashed from the buffer they are written from, so the bytes on the
// other side must be shown to be exactly those bytes.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "platform.h"

namespace gjc {
namespace {

// Read back in slices this large: a small scratch comes from the allocator's pool, where
// one as large as the chunk would be mapped and faulted in afresh on every call.
constexpr std::size_t kSliceBytes = 64 * 1024;

// Write in pieces this large, each read back before the next: the piece is still in the
// CPU cache when it is compared, and the page cache is built from small folios. One write
// of a whole 4 MiB chunk lets the kernel use folios of up to 2 MiB, and such writes cost
// several times more per byte on a virtual machine whose host reclaims free memory (150 MB
// written and read back in 4 MiB writes: 52 to 469 ms, median about 240; in 256 KiB
// pieces: 52 to 229 ms, median 58, alternating runs on this project's machines).
constexpr std::size_t kPieceBytes = 256 * 1024;

}  // namespace

Result<std::size_t> read_fully(NativeHandle file, void* buffer, std::size_t length,
                               std::uint64_t offset) {
  auto* into = static_cast<unsigned char*>(buffer);
  std::size_t done = 0;
  while (done < length) {
    auto n = read_at(file, into + done, length - done, offset + done);
    if (!n.ok()) return n.failure();
    if (n.value() == 0) break;
    done += n.value();
  }
  return done;
}

Result<std::size_t> read_to_end(NativeHandle file, void* buffer, std::size_t size,
                                std::uint64_t offset) {
  auto* into = static_cast<unsigned char*>(buffer);
  std::size_t done = 0;
  while (done <= size) {
    auto n = read_at(file, into + done, size + 1 - done, offset + done);
    if (!n.ok()) return n.failure();
    if (n.value() == 0) break;
    done += n.value();
    // A read that ends exactly at the expected size is the end: asking once more would
    // cost a syscall per file for what the first answer already said.
    if (done == size) break;
  }
  return done;
}

Result<bool> write_verified(NativeHandle file, const void* data, std::size_t length,
                            std::uint64_t offset, Writeback writeback, Sha256* digest) {
  std::unique_ptr<unsigned char[]> scratch(new (std::nothrow) unsigned char[kSliceBytes + 1]);
  if (!scratch) return fail(Code::io_error, ENOMEM, "new");
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t written = 0;
  std::size_t done = 0;
  for (;;) {
    if (done == written && written < length) {
      const std::size_t piece = std::min(kPieceBytes, length - written);
      auto wrote = write_at(file, bytes + written, piece, offset + written);
      if (!wrote.ok()) return wrote.failure();
      written += piece;
    }
    // The last slice asks for one byte more than was written: a file longer than the copy
    // is a mismatch too.
    const std::size_t slice = std::min(kSliceBytes, written - done);
    const bool last = done + slice == length;
    auto back = last ? read_to_end(file, scratch.get(), slice, offset + done)
                     : read_fully(file, scratch.get(), slice, offset + done);
    if (!back.ok()) return back.failure();
    if (back.value() != slice || std::memcmp(scratch.get(), bytes + done, slice) != 0) return false;
    if (digest != nullptr && !digest->update(bytes + done, slice)) return fail(Code::io_error, 0, "sha256");
    done += slice;
    if (last) break;
  }
  if (writeback == Writeback::now && length > 0) {
    auto started = start_writeback(file, offset, length);
    if (!started.ok()) return started.failure();
  }
  return true;
}

}  // namespace gjc
