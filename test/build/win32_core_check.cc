// A Windows executable over native/core (no Node): scripts/check-windows.sh links it with
// mingw so every symbol of the Windows platform files must resolve, and runs it under wine
// when wine is installed. Each check prints "ok <name>" or "FAIL <name>: <detail>"; the
// exit code is the number of failures.
//
// Usage: win32_core_check.exe <scratch directory, absolute Windows path>
#include <windows.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../../native/core/platform.h"
#include "../../native/core/result.h"

namespace {

int failures = 0;

void report(bool passed, const char* name, const std::string& detail = "") {
  if (passed) {
    std::printf("ok %s\n", name);
  } else {
    ++failures;
    std::printf("FAIL %s: %s\n", name, detail.c_str());
  }
  std::fflush(stdout);
}

template <class T>
std::string describe(const gjc::Result<T>& r) {
  if (r.ok()) return "ok";
  const gjc::Failure& f = r.failure();
  return std::string(gjc::code_name(f.code)) + " errno=" + std::to_string(f.sys_errno) + " " + f.syscall;
}

template <class T>
void expect_ok(const gjc::Result<T>& r, const char* name) { report(r.ok(), name, describe(r)); }

template <class T>
void expect_code(const gjc::Result<T>& r, gjc::Code code, const char* name) {
  report(!r.ok() && r.failure().code == code, name,
         std::string("want ") + gjc::code_name(code) + ", got " + describe(r));
}

gjc::FileOpenOptions writing(gjc::CreateMode create) {
  gjc::FileOpenOptions o;
  o.write = true;
  o.create = create;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 100;
  }
  const std::string base = argv[1];
  using gjc::Code;

  auto root = gjc::open_root(base + "\\store\\nested", true);
  expect_ok(root, "open_root creates missing components owner-only");
  if (!root.ok()) return failures;
  const gjc::NativeHandle dir = root.value().get();
  expect_ok(gjc::verify_directory(dir), "created root verifies");
  expect_ok(gjc::open_root(base + "/store/nested", false), "open_root accepts forward slashes");
  expect_code(gjc::open_root(base + "\\missing-root", false), Code::not_found, "open_root missing -> not_found");

  for (const char* bad : {"con", "nul.txt", "a:b", "a*b", "trailing.", "trailing ", "a\\b", "..", ""}) {
    expect_code(gjc::open_dir(dir, bad, true), Code::invalid_name, (std::string("invalid name ") + bad).c_str());
  }
  for (const char* unc : {"\\\\server\\share\\x", "//server/share/x", "\\\\?\\UNC\\server\\share\\x",
                          "\\\\.\\UNC\\server\\share"}) {
    expect_code(gjc::directory_identity(unc), Code::network_unsupported,
                (std::string("identity refuses ") + unc).c_str());
    expect_code(gjc::open_root(unc, false), Code::network_unsupported,
                (std::string("open_root refuses ") + unc).c_str());
  }

  auto sub = gjc::open_dir(dir, "sessions", true);
  expect_ok(sub, "open_dir create");
  expect_ok(gjc::open_dir(dir, "sessions", false), "open_dir existing verifies");
  expect_ok(gjc::open_dir(dir, "SESSIONS", false), "open_dir is case-insensitive like Win32");

  auto file = gjc::open_file(dir, "a.jsonl", writing(gjc::CreateMode::exclusive));
  expect_ok(file, "open_file exclusive create");
  expect_code(gjc::open_file(dir, "a.jsonl", writing(gjc::CreateMode::exclusive)), Code::already_exists,
              "open_file exclusive on existing -> already_exists");
  expect_ok(gjc::open_file(dir, "a.jsonl", writing(gjc::CreateMode::if_missing)), "open_file if_missing existing");
  expect_code(gjc::open_file(dir, "sessions", writing(gjc::CreateMode::none)), Code::not_regular_file,
              "directory where a file is expected -> not_regular_file");
  expect_code(gjc::open_dir(dir, "a.jsonl", false), Code::not_directory,
              "file where a directory is expected -> not_directory");
  if (file.ok()) {
    const gjc::NativeHandle f = file.value().get();
    expect_ok(gjc::write_at(f, "hello", 5, 0), "write_at");
    gjc::FileOpenOptions append;
    append.append = true;
    auto appender = gjc::open_file(dir, "a.jsonl", append);
    expect_ok(appender, "open_file append");
    if (appender.ok()) expect_ok(gjc::write_append(appender.value().get(), " world", 6), "write_append");
    char buf[32] = {};
    auto n = gjc::read_at(f, buf, sizeof buf, 0);
    report(n.ok() && n.value() == 11 && std::memcmp(buf, "hello world", 11) == 0, "read_at sees appended bytes",
           describe(n));
    auto eof = gjc::read_at(f, buf, sizeof buf, 100);
    report(eof.ok() && eof.value() == 0, "read_at past the end is 0", describe(eof));
    expect_ok(gjc::sync_handle(f), "sync file");
    expect_ok(gjc::sync_handle(dir), "sync directory (no-op)");
    auto st = gjc::stat_handle(f);
    report(st.ok() && st.value().type == gjc::EntryType::file && st.value().size == 11 && st.value().nlink == 1,
           "stat_handle", describe(st));
    expect_ok(gjc::verify_file(f), "created file verifies");
    expect_ok(gjc::repair_file(f), "repair of our own file");
  }

  expect_ok(gjc::write_file_atomic(dir, "b.json", "{}", 2, false), "write_file_atomic replace (new)");
  expect_ok(gjc::write_file_atomic(dir, "b.json", "{\"x\":1}", 7, false), "write_file_atomic replaces");
  expect_code(gjc::write_file_atomic(dir, "b.json", "{}", 2, true), Code::already_exists,
              "write_file_atomic no_replace on existing -> already_exists");
  {
    auto b = gjc::open_file(dir, "b.json", gjc::FileOpenOptions{});
    char buf[16] = {};
    auto n = b.ok() ? gjc::read_at(b.value().get(), buf, sizeof buf, 0) : gjc::Result<std::size_t>(b.failure());
    report(n.ok() && n.value() == 7 && std::memcmp(buf, "{\"x\":1}", 7) == 0, "no-replace left the target intact",
           describe(n));
  }
  {
    auto t = gjc::open_file(dir, "c.tmp", writing(gjc::CreateMode::exclusive));
    expect_ok(t, "temp for publish");
    expect_code(gjc::publish_no_replace(dir, "c.tmp", "b.json"), Code::already_exists,
                "publish_no_replace onto existing -> already_exists");
    expect_ok(gjc::publish_no_replace(dir, "c.tmp", "c.json"), "publish_no_replace to a free name");
  }

  auto listed = gjc::list_directory(dir);
  expect_ok(listed, "list_directory");
  if (listed.ok()) {
    bool saw_a = false, saw_sessions = false, saw_tmp = false;
    for (const auto& e : listed.value()) {
      saw_a |= e.name == "a.jsonl" && e.type == gjc::EntryType::file;
      saw_sessions |= e.name == "sessions" && e.type == gjc::EntryType::directory;
      saw_tmp |= e.name.rfind(".gjc-tmp-", 0) == 0;
    }
    report(saw_a && saw_sessions && !saw_tmp, "list_directory types, no leftover temporaries");
  }
  auto st = gjc::stat_entry(dir, "sessions");
  report(st.ok() && st.value().type == gjc::EntryType::directory, "stat_entry directory", describe(st));
  expect_code(gjc::stat_entry(dir, "nope"), Code::not_found, "stat_entry missing -> not_found");

  {
    const char record[] = "{\"pid\":1}";
    auto held = gjc::try_lock(dir, "x.lock", record, sizeof record - 1);
    expect_ok(held, "try_lock takes a free lock");
    expect_code(gjc::try_lock(dir, "x.lock", record, sizeof record - 1), Code::lock_busy,
                "second try_lock -> lock_busy");
    auto reader = gjc::open_file(dir, "x.lock", gjc::FileOpenOptions{});
    char buf[32] = {};
    auto n = reader.ok() ? gjc::read_at(reader.value().get(), buf, sizeof buf, 0)
                         : gjc::Result<std::size_t>(reader.failure());
    report(n.ok() && n.value() == sizeof record - 1, "lock record readable while locked", describe(n));
    if (held.ok()) expect_ok(gjc::unlock(held.value().get()), "unlock");
    expect_ok(gjc::try_lock(dir, "x.lock", record, sizeof record - 1), "try_lock after unlock");
  }

  expect_code(gjc::unlink_file(dir, "sessions"), Code::not_regular_file, "unlink_file refuses a directory");
  expect_ok(gjc::unlink_file(dir, "c.json"), "unlink_file");
  expect_code(gjc::stat_entry(dir, "c.json"), Code::not_found, "unlinked name is gone");

  auto a = gjc::directory_identity(base + "\\store\\nested");
  auto b = gjc::directory_identity(base + "/STORE/Nested");
  auto c = gjc::directory_identity("\\\\?\\" + base + "\\store\\nested");
  expect_ok(a, "directory_identity");
  report(a.ok() && b.ok() && c.ok() && a.value().canonical_path == b.value().canonical_path &&
             a.value().canonical_path == c.value().canonical_path && a.value().ino == b.value().ino &&
             a.value().dev == c.value().dev,
         "identity is one for case, separator and \\\\?\\ spellings",
         a.ok() && b.ok() ? a.value().canonical_path + " | " + b.value().canonical_path : describe(b));
  if (a.ok()) std::printf("# identity %s dev=%s ino=%s\n", a.value().canonical_path.c_str(), a.value().dev.c_str(),
                          a.value().ino.c_str());
  expect_code(gjc::directory_identity(base + "\\store\\nested\\a.jsonl"), Code::not_directory,
              "identity of a file -> not_directory");
  expect_code(gjc::directory_identity(base + "\\nope"), Code::not_found, "identity of nothing -> not_found");

  // Handles are never inheritable: ask the OS about a handle the core returned.
  DWORD flags = 0;
  report(::GetHandleInformation(dir, &flags) && (flags & HANDLE_FLAG_INHERIT) == 0,
         "handles are not inheritable");

  std::printf("%d failed\n", failures);
  return failures;
}
