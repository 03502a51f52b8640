// No-replace publication, and the publish step of an atomic write, in a held Windows directory.
// Renames go through a handle to the source and the held directory handle as the target
// root, so no path is resolved twice.
#include <cerrno>
#include <cstring>
#include <string>

#include "../names.h"
#include "../portable.h"
#include "win_util.h"

#include <ntsecapi.h>  // RtlGenRandom (SystemFunction036 in advapi32)

namespace gjc {

std::uint64_t random_u64() noexcept {
  std::uint64_t value = 0;
  if (!RtlGenRandom(&value, sizeof value)) {
    // The exclusive create refuses a collision, so a weaker source is still safe here.
    LARGE_INTEGER ticks{};
    ::QueryPerformanceCounter(&ticks);
    value = static_cast<std::uint64_t>(ticks.QuadPart) ^
            (static_cast<std::uint64_t>(::GetCurrentProcessId()) << 32);
  }
  return value;
}

namespace {

// The name `name` must now lead to exactly the file we wrote.
Status check_published(HANDLE dir, const std::wstring& name, HANDLE written) {
  auto named = win::open_relative(dir, name, {FILE_READ_ATTRIBUTES});
  if (!named.ok()) return named.failure();
  auto a = win::file_id_of(named.value().get());
  if (!a.ok()) return a.failure();
  auto b = win::file_id_of(written);
  if (!b.ok()) return b.failure();
  // Both names are in `dir`, so both objects are on its volume and the FileId alone decides.
  // (Comparing serials would also trip over wine, whose handles report serial 0 once the
  // file they name has been renamed.)
  if (std::memcmp(&a.value().FileId, &b.value().FileId, sizeof(FILE_ID_128)) != 0) {
    return fail(Code::identity_mismatch, 0, "GetFileInformationByHandleEx");
  }
  return success();
}

}  // namespace

Status publish_no_replace(NativeHandle dir, std::string_view from, std::string_view to) {
  auto source = win::wide_name(from);
  if (!source.ok()) return source.failure();
  auto target = win::wide_name(to);
  if (!target.ok()) return target.failure();
  auto moving = win::open_relative(dir, source.value(), {DELETE | FILE_READ_ATTRIBUTES});
  if (!moving.ok()) return moving.failure();
  // The held directory needs no sync on Windows (see sync_handle).
  return win::rename_handle(moving.value().get(), dir, target.value(), false);
}

Status publish_staged(NativeHandle dir, NativeHandle file, const std::string&, std::string_view name,
                      bool no_replace) {
  auto target = win::wide_name(name);
  if (!target.ok()) return target.failure();
  auto mover = win::reopen(file, DELETE | FILE_READ_ATTRIBUTES, false);
  if (!mover.ok()) return mover.failure();
  auto renamed = win::rename_handle(mover.value().get(), dir, target.value(), !no_replace);
  if (!renamed.ok()) return renamed;
  return check_published(dir, target.value(), file);
}

void discard_staged(NativeHandle dir, NativeHandle file, const std::string&, std::string_view name) {
  // Removed through its own handle: whatever the names lead to now, only our temporary
  // (if it was not published) is deleted.
  auto doomed = win::reopen(file, DELETE, false);
  auto target = win::wide_name(name);
  if (doomed.ok() && target.ok() && !check_published(dir, target.value(), file).ok()) {
    win::delete_handle(doomed.value().get());
  }
}

}  // namespace gjc
