// Sha256 on Windows through CNG (bcrypt.dll), the system's own implementation. One
// algorithm provider per digest keeps the object free of process-wide state.
#include <windows.h>
#include <bcrypt.h>

#include <new>

#include "../sha256.h"

namespace gjc {
namespace {

bool succeeded(NTSTATUS status) noexcept { return status >= 0; }

}  // namespace

struct Sha256::State {
  BCRYPT_ALG_HANDLE algorithm = nullptr;
  BCRYPT_HASH_HANDLE hash = nullptr;
  ~State() {
    if (hash != nullptr) BCryptDestroyHash(hash);
    if (algorithm != nullptr) BCryptCloseAlgorithmProvider(algorithm, 0);
  }
  bool restart() noexcept {
    if (hash != nullptr) BCryptDestroyHash(hash);
    hash = nullptr;
    return succeeded(BCryptCreateHash(algorithm, &hash, nullptr, 0, nullptr, 0, 0));
  }
};

Sha256::Sha256(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Sha256::~Sha256() = default;

Result<std::unique_ptr<Sha256>> Sha256::create() {
  std::unique_ptr<State> state(new (std::nothrow) State());
  if (!state) return fail(Code::io_error, ERROR_NOT_ENOUGH_MEMORY, "new");
  if (!succeeded(BCryptOpenAlgorithmProvider(&state->algorithm, BCRYPT_SHA256_ALGORITHM, nullptr, 0))) {
    state->algorithm = nullptr;
    return fail(Code::io_error, 0, "BCryptOpenAlgorithmProvider");
  }
  if (!state->restart()) return fail(Code::io_error, 0, "BCryptCreateHash");
  std::unique_ptr<Sha256> hasher(new (std::nothrow) Sha256(std::move(state)));
  if (!hasher) return fail(Code::io_error, ERROR_NOT_ENOUGH_MEMORY, "new");
  return hasher;
}

bool Sha256::update(const void* data, std::size_t length) noexcept {
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
  // CNG takes a ULONG length: feed larger spans in parts.
  while (length > 0) {
    const ULONG part = length > 0x40000000 ? 0x40000000UL : static_cast<ULONG>(length);
    if (!succeeded(BCryptHashData(state_->hash, bytes, part, 0))) return false;
    bytes += part;
    length -= part;
  }
  return true;
}

Result<Sha256Digest> Sha256::finish() noexcept {
  Sha256Digest digest{};
  if (!succeeded(BCryptFinishHash(state_->hash, digest.data(), static_cast<ULONG>(digest.size()), 0))) {
    return fail(Code::io_error, 0, "BCryptFinishHash");
  }
  if (!state_->restart()) return fail(Code::io_error, 0, "BCryptCreateHash");
  return digest;
}

}  // namespace gjc
