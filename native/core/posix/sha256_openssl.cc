// Sha256 on POSIX through OpenSSL's EVP interface. The symbols are Node's: its binary
// exports the OpenSSL it is built with (or links the system's), and an addon resolves
// them when it is loaded, so nothing is linked here and no second copy is carried.
#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include <cerrno>
#include <new>

#include "../sha256.h"

namespace gjc {
namespace {

// The algorithm to init with. OpenSSL 3 looks EVP_sha256() up in its provider tables (under
// a lock) on every init, and a migration inits once per copied file; a fetched one is used
// as it is. Fetched once and kept for the life of the process on purpose: freeing it at
// exit could pull it from under a thread-pool thread that is still hashing.
const EVP_MD* sha256_algorithm() {
#if OPENSSL_VERSION_MAJOR >= 3
  static EVP_MD* const fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (fetched != nullptr) return fetched;
#endif
  return EVP_sha256();
}

}  // namespace

struct Sha256::State {
  struct Free {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx;
};

Sha256::Sha256(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Sha256::~Sha256() = default;

Result<std::unique_ptr<Sha256>> Sha256::create() {
  std::unique_ptr<State> state(new (std::nothrow) State());
  if (!state) return fail(Code::io_error, ENOMEM, "new");
  state->ctx.reset(EVP_MD_CTX_new());
  if (!state->ctx) return fail(Code::io_error, ENOMEM, "EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(state->ctx.get(), sha256_algorithm(), nullptr) != 1) {
    return fail(Code::io_error, 0, "EVP_DigestInit_ex");
  }
  std::unique_ptr<Sha256> hasher(new (std::nothrow) Sha256(std::move(state)));
  if (!hasher) return fail(Code::io_error, ENOMEM, "new");
  return hasher;
}

bool Sha256::update(const void* data, std::size_t length) noexcept {
  return length == 0 || EVP_DigestUpdate(state_->ctx.get(), data, length) == 1;
}

Result<Sha256Digest> Sha256::finish() noexcept {
  Sha256Digest digest{};
  unsigned int written = 0;
  if (EVP_DigestFinal_ex(state_->ctx.get(), digest.data(), &written) != 1 || written != digest.size()) {
    return fail(Code::io_error, 0, "EVP_DigestFinal_ex");
  }
  if (EVP_DigestInit_ex(state_->ctx.get(), sha256_algorithm(), nullptr) != 1) {
    return fail(Code::io_error, 0, "EVP_DigestInit_ex");
  }
  return digest;
}

}  // namespace gjc
