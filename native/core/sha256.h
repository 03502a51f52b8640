// SHA-256 computed where the bytes already are, on the thread that copies them: migrations
// hash every byte they copy, and doing it on the thread pool keeps the JS thread free to
// drive the copy. The implementation is the platform's own (POSIX: the OpenSSL that Node
// carries and exports to addons; Windows: CNG), never a hand-written one.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "result.h"

namespace gjc {

using Sha256Digest = std::array<unsigned char, 32>;

class Sha256 {
 public:
  // A digest ready for its first bytes, or io_error when the library cannot make one.
  static Result<std::unique_ptr<Sha256>> create();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Adds bytes; false when the library reports a failure (the digest is then unusable).
  bool update(const void* data, std::size_t length) noexcept;
  // The digest of everything added since create() or the last finish(), which also starts
  // the next digest afresh; io_error when the library fails.
  Result<Sha256Digest> finish() noexcept;

 private:
  struct State;
  explicit Sha256(std::unique_ptr<State> state) noexcept;
  std::unique_ptr<State> state_;
};

}  // namespace gjc
