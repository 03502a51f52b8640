// No-replace publication and atomic replacement of files in a held Windows directory.
// Renames go through a handle to the source and the held directory handle as the target
// root, so no path is resolved twice.
#include <cerrno>
#include <cstring>
#include <string>

#include "../names.h"
#include "../platform.h"
#include "win_util.h"

#include <ntsecapi.h>  // RtlGenRandom (SystemFunction036 in advapi32)

namespace gjc {
namespace {

std::uint64_t random_u64() {
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

Status write_and_publish(HANDLE dir, HANDLE file, const std::wstring& name, const void* data,
                         std::size_t length, bool no_replace) {
  auto written = write_at(file, data, length, 0);
  if (!written.ok()) return written.failure();
  auto synced = sync_handle(file);
  if (!synced.ok()) return synced;
  auto verified = verify_file(file);
  if (!verified.ok()) return verified.failure();
  auto mover = win::reopen(file, DELETE | FILE_READ_ATTRIBUTES, false);
  if (!mover.ok()) return mover.failure();
  auto renamed = win::rename_handle(mover.value().get(), dir, name, !no_replace);
  if (!renamed.ok()) return renamed;
  return check_published(dir, name, file);
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

Status write_file_atomic(NativeHandle dir, std::string_view name, const void* data,
                         std::size_t length, bool no_replace) {
  auto target = win::wide_name(name);
  if (!target.ok()) return target.failure();
  FileOpenOptions options;
  options.write = true;
  options.create = CreateMode::exclusive;
  auto file = open_file(dir, staging_name(name, random_u64()), options);
  if (!file.ok()) return file.failure();
  auto status = write_and_publish(dir, file.value().get(), target.value(), data, length, no_replace);
  if (!status.ok()) {
    // Removed through its own handle: whatever the name leads to now, only our temporary
    // (if it was not published) is deleted.
    auto doomed = win::reopen(file.value().get(), DELETE, false);
    if (doomed.ok()) {
      auto published = check_published(dir, target.value(), file.value().get());
      if (!published.ok()) win::delete_handle(doomed.value().get());
    }
  }
  return status;
}

}  // namespace gjc
