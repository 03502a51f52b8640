// A Windows executable over native/core (no Node). scripts/check-windows.sh links it with
// mingw, so every symbol of the Windows platform files must resolve; scripts/test-win32.sh
// runs it under wine. Each check prints one line:
//   "ok <name>", "FAIL <name>: <detail>" or "unsupported <name>: <what the OS lacks>".
// The exit code is the number of failures.
//
// Usage: win32_core_check.exe <scratch dir> [<alias of the scratch dir>]
// The scratch directory may hold "dir-link" and "file-link", links made by the caller
// (wine's CreateSymbolicLinkW creates nothing, so test-win32.sh makes them from Linux).
#include <windows.h>
#include <sddl.h>
#include <winioctl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../../native/core/platform.h"
#include "../../native/core/result.h"
#include "../../native/core/win32/win_util.h"

namespace {

using gjc::Code;
int failures = 0;

void line(const char* kind, const std::string& name, const std::string& detail) {
  std::printf("%s %s%s%s\n", kind, name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
}

void report(bool passed, const std::string& name, const std::string& detail = "") {
  if (!passed) ++failures;
  line(passed ? "ok" : "FAIL", name, passed ? "" : detail);
}

void unsupported(const std::string& name, const std::string& why) { line("unsupported", name, why); }

template <class T>
std::string describe(const gjc::Result<T>& r) {
  if (r.ok()) return "ok";
  const gjc::Failure& f = r.failure();
  return std::string(gjc::code_name(f.code)) + " errno=" + std::to_string(f.sys_errno) + " " + f.syscall;
}

template <class T>
bool expect_ok(const gjc::Result<T>& r, const std::string& name) {
  report(r.ok(), name, describe(r));
  return r.ok();
}

template <class T>
void expect_code(const gjc::Result<T>& r, Code code, const std::string& name) {
  report(!r.ok() && r.failure().code == code, name,
         std::string("want ") + gjc::code_name(code) + ", got " + describe(r));
}

bool under_wine() {
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  return ntdll != nullptr && ::GetProcAddress(ntdll, "wine_get_version") != nullptr;
}

std::wstring wide(const std::string& s) { return gjc::win::to_wide(s, Code::invalid_argument).value(); }

bool exists(const std::string& path) { return ::GetFileAttributesW(wide(path).c_str()) != INVALID_FILE_ATTRIBUTES; }

const gjc::DirOpenOptions kCreate{gjc::DirPolicy::create};

gjc::FileOpenOptions writing(gjc::CreateMode create) {
  gjc::FileOpenOptions o;
  o.write = true;
  o.create = create;
  return o;
}

bool inheritable(HANDLE h) {
  DWORD flags = 0;
  return !::GetHandleInformation(h, &flags) || (flags & HANDLE_FLAG_INHERIT) != 0;
}

// Makes `link` (an empty directory) a junction to `target` with FSCTL_SET_REPARSE_POINT;
// returns 0 or the Win32 error.
DWORD make_junction(const std::string& link, const std::string& target) {
  ::CreateDirectoryW(wide(link).c_str(), nullptr);
  gjc::OwnedHandle h(::CreateFileW(wide(link).c_str(), GENERIC_WRITE, 0, nullptr, OPEN_EXISTING,
                                   FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!h.valid()) return ::GetLastError();
  const std::wstring substitute = L"\\??\\" + wide(target);
  const std::wstring print = wide(target);
  // REPARSE_DATA_BUFFER, mount-point form: tag, data length, reserved, then four name
  // offsets/lengths and the two NUL-terminated names.
  std::vector<unsigned char> buffer(16 + (substitute.size() + print.size() + 2) * sizeof(wchar_t));
  auto put16 = [&](std::size_t at, std::size_t v) {
    buffer[at] = static_cast<unsigned char>(v & 0xFF);
    buffer[at + 1] = static_cast<unsigned char>(v >> 8);
  };
  const DWORD tag = IO_REPARSE_TAG_MOUNT_POINT;
  std::memcpy(buffer.data(), &tag, sizeof tag);
  put16(4, buffer.size() - 8);
  put16(8, 0);
  put16(10, substitute.size() * sizeof(wchar_t));
  put16(12, (substitute.size() + 1) * sizeof(wchar_t));
  put16(14, print.size() * sizeof(wchar_t));
  std::memcpy(buffer.data() + 16, substitute.c_str(), (substitute.size() + 1) * sizeof(wchar_t));
  std::memcpy(buffer.data() + 16 + (substitute.size() + 1) * sizeof(wchar_t), print.c_str(),
              (print.size() + 1) * sizeof(wchar_t));
  DWORD returned = 0;
  if (!::DeviceIoControl(h.get(), FSCTL_SET_REPARSE_POINT, buffer.data(), static_cast<DWORD>(buffer.size()), nullptr,
                         0, &returned, nullptr)) {
    return ::GetLastError();
  }
  return 0;
}

// The DACL rule on descriptors built from SDDL: no file system involved.
void dacl_policy_checks() {
  auto user = gjc::win::current_user_sid();
  if (!expect_ok(user, "current user SID")) return;
  LPWSTR sid_text = nullptr;
  ::ConvertSidToStringSidW(user.value().data(), &sid_text);
  const std::wstring u = sid_text;
  ::LocalFree(sid_text);
  struct Case {
    const char* name;
    std::wstring sddl;
    bool passes;
  };
  const Case cases[] = {
      {"protected DACL, one allow ACE for the user", L"D:P(A;;FA;;;" + u + L")", true},
      {"inheritable flags on the one ACE", L"D:PAI(A;OICI;FA;;;" + u + L")", true},
      {"unprotected DACL", L"D:(A;;FA;;;" + u + L")", false},
      {"a second allow ACE (SYSTEM)", L"D:P(A;;FA;;;" + u + L")(A;;FA;;;SY)", false},
      {"a deny ACE beside the allow ACE", L"D:P(A;;FA;;;" + u + L")(D;;FA;;;WD)", false},
      {"the one ACE is for Everyone", L"D:P(A;;FA;;;WD)", false},
      {"the one ACE denies the user", L"D:P(D;;FA;;;" + u + L")", false},
      {"an empty DACL", L"D:P", false},
      {"a NULL DACL", L"D:NO_ACCESS_CONTROL", false},
  };
  for (const Case& c : cases) {
    PSECURITY_DESCRIPTOR sd = nullptr;
    if (!::ConvertStringSecurityDescriptorToSecurityDescriptorW(c.sddl.c_str(), SDDL_REVISION_1, &sd, nullptr)) {
      report(false, std::string("dacl rule: ") + c.name, "SDDL rejected, error " + std::to_string(::GetLastError()));
      continue;
    }
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = nullptr;
    SECURITY_DESCRIPTOR_CONTROL control = 0;
    DWORD revision = 0;
    ::GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted);
    ::GetSecurityDescriptorControl(sd, &control, &revision);
    auto verdict = gjc::win::check_owner_only_dacl(present ? dacl : nullptr, control, user.value());
    if (c.passes) {
      expect_ok(verdict, std::string("dacl rule accepts: ") + c.name);
    } else {
      expect_code(verdict, Code::acl_present, std::string("dacl rule refuses: ") + c.name);
    }
    ::LocalFree(sd);
  }
  for (bool directory : {true, false}) {
    auto own = gjc::win::owner_only_security(directory);
    if (!expect_ok(own, "owner-only descriptor builds")) continue;
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = nullptr;
    SECURITY_DESCRIPTOR_CONTROL control = 0;
    DWORD revision = 0;
    ::GetSecurityDescriptorDacl(&own.value()->descriptor, &present, &dacl, &defaulted);
    ::GetSecurityDescriptorControl(&own.value()->descriptor, &control, &revision);
    expect_ok(gjc::win::check_owner_only_dacl(dacl, control, user.value()),
              directory ? "the descriptor we create directories with passes the rule"
                        : "the descriptor we create files with passes the rule");
  }
}

// Path forms, decided before any I/O.
void path_checks() {
  struct Case {
    const char* path;
    Code code;  // invalid_argument etc.; io_error stands for "accepted"
    const char* root;
  };
  const Case cases[] = {
      {"C:\\a\\b", Code::io_error, "\\\\?\\C:\\"},
      {"c:/a/b", Code::io_error, "\\\\?\\c:\\"},
      {"\\\\?\\C:\\a", Code::io_error, "\\\\?\\C:\\"},
      {"\\\\.\\C:\\a", Code::io_error, "\\\\?\\C:\\"},
      {"\\\\server\\share\\x", Code::network_unsupported, ""},
      {"//server/share/x", Code::network_unsupported, ""},
      {"\\\\?\\UNC\\server\\share\\x", Code::network_unsupported, ""},
      {"\\\\.\\UNC\\server\\share", Code::network_unsupported, ""},
      {"\\\\?\\unc\\server\\share", Code::network_unsupported, ""},
      {"relative\\x", Code::invalid_argument, ""},
      {"C:relative", Code::invalid_argument, ""},
      {"\\rooted-without-drive", Code::invalid_argument, ""},
      {"\\\\.\\pipe\\x", Code::invalid_argument, ""},
      {"C:\\a\\..\\b", Code::invalid_argument, ""},
      {"C:\\con\\x", Code::invalid_name, ""},
      {"C:\\a:stream", Code::invalid_name, ""},
      {"C:\\trailing.\\x", Code::invalid_name, ""},
  };
  for (const Case& c : cases) {
    auto parsed = gjc::win::parse_local_path(c.path);
    const std::string name = std::string("path ") + c.path;
    if (c.code == Code::io_error) {
      report(parsed.ok() && parsed.value().root == wide(c.root) && parsed.value().components.size() >= 1,
             name + " is accepted", describe(parsed));
    } else {
      expect_code(parsed, c.code, name + " -> " + gjc::code_name(c.code));
    }
  }
  for (const char* unc : {"\\\\server\\share\\x", "\\\\?\\UNC\\server\\share\\x"}) {
    expect_code(gjc::directory_identity(unc), Code::network_unsupported, std::string("directory_identity refuses ") + unc);
    expect_code(gjc::open_root(unc, kCreate), Code::network_unsupported, std::string("open_root refuses ") + unc);
  }
}

// The walk, I/O, publication and refusals below a directory handle opened here: none of
// these needs the DACL gate to pass on the parent.
void handle_checks(const std::string& scratch) {
  const std::string base = scratch + "\\handles";
  ::CreateDirectoryW(wide(base).c_str(), nullptr);
  ::CreateDirectoryW(wide(base + "\\plain-dir").c_str(), nullptr);
  gjc::OwnedHandle seed(::CreateFileW(wide(base + "\\plain-file").c_str(), GENERIC_WRITE, 0, nullptr,
                                      CREATE_ALWAYS, 0, nullptr));
  seed.reset();
  gjc::OwnedHandle parent(::CreateFileW(wide(base).c_str(), gjc::win::kDirAccess,
                                        FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                        OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
  if (!parent.valid()) {
    report(false, "open the handle-check directory", "CreateFileW error " + std::to_string(::GetLastError()));
    return;
  }
  const HANDLE p = parent.get();
  expect_code(gjc::open_dir(p, "plain-file", gjc::DirOpenOptions{}), Code::not_directory, "file where a directory is expected -> not_directory");
  expect_code(gjc::open_file(p, "plain-dir", writing(gjc::CreateMode::none)), Code::not_regular_file,
              "directory where a file is expected -> not_regular_file");
  expect_code(gjc::open_dir(p, "absent", gjc::DirOpenOptions{}), Code::not_found, "missing directory -> not_found");
  for (const char* bad : {"con", "NUL.txt", "com1", "a:b", "a*b", "a?b", "a|b", "dot.", "space ", "a\\b", "..", ""}) {
    expect_code(gjc::open_dir(p, bad, kCreate), Code::invalid_name, std::string("name \"") + bad + "\" -> invalid_name");
  }

  gjc::win::RelativeOpen make;
  make.access = FILE_READ_DATA | FILE_WRITE_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL;
  make.disposition = FILE_CREATE;
  make.options = FILE_NON_DIRECTORY_FILE;
  auto file = gjc::win::open_relative(p, L"io-file", make);
  if (!expect_ok(file, "NtCreateFile relative to a held directory")) return;
  const HANDLE f = file.value().get();
  report(!inheritable(f) && !inheritable(p), "handles are not inheritable");
  expect_code(gjc::win::open_relative(p, L"io-file", make), Code::already_exists, "FILE_CREATE on a taken name -> already_exists");
  expect_ok(gjc::write_at(f, "hello", 5, 0), "write_at");
  gjc::win::RelativeOpen appending;
  appending.access = FILE_APPEND_DATA | FILE_READ_ATTRIBUTES;
  auto appender = gjc::win::open_relative(p, L"io-file", appending);
  if (expect_ok(appender, "open for append")) {
    expect_ok(gjc::write_append(appender.value().get(), " world", 6), "write_append lands at the end");
  }
  char buf[32] = {};
  auto n = gjc::read_at(f, buf, sizeof buf, 0);
  report(n.ok() && n.value() == 11 && std::memcmp(buf, "hello world", 11) == 0, "read_at sees both writes", describe(n));
  auto eof = gjc::read_at(f, buf, sizeof buf, 4096);
  report(eof.ok() && eof.value() == 0, "read_at past the end reads 0", describe(eof));
  expect_ok(gjc::sync_handle(f), "FlushFileBuffers on a written file");
  expect_ok(gjc::sync_handle(p), "directory sync is a no-op");
  auto st = gjc::stat_handle(f);
  report(st.ok() && st.value().type == gjc::EntryType::file && st.value().size == 11 && st.value().nlink == 1,
         "stat_handle: type, size, links", describe(st));

  expect_code(gjc::publish_no_replace(p, "io-file", "plain-file"), Code::already_exists,
              "publish_no_replace onto a taken name -> already_exists");
  expect_ok(gjc::publish_no_replace(p, "io-file", "io-moved"), "publish_no_replace to a free name");
  expect_code(gjc::stat_entry(p, "io-file"), Code::not_found, "the published source name is gone");
  auto moved = gjc::stat_entry(p, "io-moved");
  report(moved.ok() && moved.value().size == 11, "the published name holds the data", describe(moved));

  auto listed = gjc::list_directory(p);
  if (expect_ok(listed, "list_directory")) {
    int seen = 0;
    for (const auto& e : listed.value()) {
      if (e.name == "io-moved" && e.type == gjc::EntryType::file) ++seen;
      if (e.name == "plain-dir" && e.type == gjc::EntryType::directory) ++seen;
      if (e.name == "." || e.name == "..") seen = -100;
    }
    report(seen == 2, "list_directory names and types, without . and ..");
  }
  expect_code(gjc::unlink_file(p, "plain-dir"), Code::not_regular_file, "unlink_file refuses a directory");
  expect_ok(gjc::unlink_file(p, "io-moved"), "unlink_file while other handles hold the file");
  auto after = gjc::stat_entry(p, "io-moved");
  if (after.ok() && under_wine()) {
    unsupported("POSIX delete semantics (FileDispositionInformationEx)",
                "wine keeps the name until the last handle closes, like the pre-1709 classic delete");
  } else {
    expect_code(after, Code::not_found, "the unlinked name is gone at once");
  }
  appender = gjc::Result<gjc::OwnedHandle>(gjc::fail(Code::closed));
  file = gjc::Result<gjc::OwnedHandle>(gjc::fail(Code::closed));
  expect_code(gjc::stat_entry(p, "io-moved"), Code::not_found, "the unlinked name is gone once its handles close");

  // Directories are held without FILE_SHARE_DELETE: nobody can rename one we hold.
  gjc::win::RelativeOpen pin;
  pin.access = gjc::win::kDirAccess;
  pin.share = gjc::win::kDirShare;
  pin.options = FILE_DIRECTORY_FILE;
  auto pinned = gjc::win::open_relative(p, L"plain-dir", pin);
  if (expect_ok(pinned, "hold a directory")) {
    const BOOL moved_away = ::MoveFileExW(wide(base + "\\plain-dir").c_str(), wide(base + "\\elsewhere").c_str(), 0);
    report(!moved_away, "a held directory cannot be renamed under us");
  }

  // A created object that cannot be made owner-only must not stay behind.
  auto fresh = gjc::open_file(p, "fresh", writing(gjc::CreateMode::exclusive));
  if (fresh.ok()) {
    report(exists(base + "\\fresh"), "open_file creates an owner-only file");
  } else {
    report(!exists(base + "\\fresh"), "a created file that failed owner-only is removed", describe(fresh));
  }

  // Reparse points: made here if the OS can, else by the caller ("dir-link", "file-link").
  const bool made = ::CreateSymbolicLinkW(wide(base + "\\made-link").c_str(), wide(base + "\\plain-dir").c_str(),
                                          SYMBOLIC_LINK_FLAG_DIRECTORY | 0x2 /* unprivileged */) != 0;
  if (!made || !exists(base + "\\made-link")) {
    unsupported("CreateSymbolicLinkW", made ? "returned TRUE but created nothing" : "error " + std::to_string(::GetLastError()));
  }
  const DWORD junction_error = make_junction(base + "\\junction", base + "\\plain-dir");
  if (junction_error != 0 || (::GetFileAttributesW(wide(base + "\\junction").c_str()) & FILE_ATTRIBUTE_REPARSE_POINT) == 0) {
    unsupported("junctions (FSCTL_SET_REPARSE_POINT)", "error " + std::to_string(junction_error));
    ::RemoveDirectoryW(wide(base + "\\junction").c_str());
  }
  int links = 0;
  for (const char* name : {"made-link", "junction", "dir-link", "file-link"}) {
    if (!exists(scratch + "\\" + name) && !exists(base + "\\" + name)) continue;
    const std::string where = exists(base + "\\" + name) ? base : scratch;
    gjc::OwnedHandle holder(::CreateFileW(wide(where).c_str(), gjc::win::kDirAccess,
                                          FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                          OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
    ++links;
    expect_code(gjc::open_dir(holder.get(), name, gjc::DirOpenOptions{}), Code::symlink_refused, std::string("open_dir refuses reparse point ") + name);
    expect_code(gjc::open_file(holder.get(), name, gjc::FileOpenOptions{}), Code::symlink_refused,
                std::string("open_file refuses reparse point ") + name);
    auto ls = gjc::stat_entry(holder.get(), name);
    if (under_wine()) {
      // wine opens the target of a unix symlink even with FILE_OPEN_REPARSE_POINT; the
      // final-path check then refuses the open instead of describing the link.
      expect_code(ls, Code::symlink_refused, std::string("stat_entry refuses ") + name + " (wine follows unix links)");
    } else {
      report(ls.ok() && ls.value().type == gjc::EntryType::symlink, std::string("stat_entry reports ") + name + " as a link",
             describe(ls));
    }
  }
  if (links == 0) unsupported("reparse-point refusal", "no link could be made");
  if (exists(scratch + "\\file-link") && exists(scratch + "\\outside\\secret.txt")) {
    gjc::OwnedHandle holder(::CreateFileW(wide(scratch).c_str(), gjc::win::kDirAccess,
                                          FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                          OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
    auto removed = gjc::unlink_file(holder.get(), "file-link");
    report(exists(scratch + "\\outside\\secret.txt"), "unlink_file of a link never removes its target", describe(removed));
  }
}

// The full owner-only API, which needs the DACL gate to pass on objects we create.
void owner_only_checks(const std::string& scratch) {
  auto root = gjc::open_root(scratch + "\\store\\nested", kCreate);
  if (!root.ok() && under_wine() && root.failure().code == Code::acl_present) {
    unsupported("owner-only DACL on created objects",
                "wine keeps no DACL: NtCreateFile's descriptor and SetKernelObjectSecurity map onto unix mode bits, "
                "and GetSecurityInfo returns a synthesized DACL (SYSTEM + owner ACEs, never SE_DACL_PROTECTED)");
    report(true, "under wine the DACL gate refuses as acl_present (GetSecurityInfo), failing closed");
    return;
  }
  if (!expect_ok(root, "open_root creates missing components owner-only")) return;
  const HANDLE dir = root.value().get();
  expect_ok(gjc::verify_directory(dir), "created root verifies");
  expect_ok(gjc::repair_directory(dir), "repair of our own directory");
  auto file = gjc::open_file(dir, "a.jsonl", writing(gjc::CreateMode::exclusive));
  if (expect_ok(file, "open_file exclusive create")) expect_ok(gjc::verify_file(file.value().get()), "created file verifies");
  expect_code(gjc::open_file(dir, "a.jsonl", writing(gjc::CreateMode::exclusive)), Code::already_exists,
              "exclusive create on a taken name -> already_exists");
  expect_ok(gjc::write_file_atomic(dir, "b.json", "{}", 2, false), "write_file_atomic");
  expect_ok(gjc::write_file_atomic(dir, "b.json", "{\"x\":1}", 7, false), "write_file_atomic replaces");
  expect_code(gjc::write_file_atomic(dir, "b.json", "{}", 2, true), Code::already_exists, "write_file_atomic no_replace -> already_exists");
  const char record[] = "{\"pid\":1}";
  auto held = gjc::try_lock(dir, "x.lock", record, sizeof record - 1);
  expect_ok(held, "try_lock");
  expect_code(gjc::try_lock(dir, "x.lock", record, sizeof record - 1), Code::lock_busy, "second try_lock -> lock_busy");
  if (held.ok()) expect_ok(gjc::unlock(held.value().get()), "unlock");
  report(!inheritable(dir), "open_root's handle is not inheritable");
}

void identity_checks(const std::string& scratch, const std::string& alias) {
  ::CreateDirectoryW(wide(scratch + "\\Ident").c_str(), nullptr);
  std::vector<std::string> spellings = {scratch + "\\Ident", scratch + "/IDENT", scratch + "\\ident",
                                        "\\\\?\\" + scratch + "\\Ident"};
  if (!alias.empty()) spellings.push_back(alias + "\\Ident");
  auto first = gjc::directory_identity(spellings[0]);
  if (!expect_ok(first, "directory_identity")) return;
  std::printf("# identity %s dev=%s ino=%s\n", first.value().canonical_path.c_str(), first.value().dev.c_str(),
              first.value().ino.c_str());
  report(first.value().platform == "win32" && first.value().canonical_path.rfind("\\\\?\\Volume{", 0) == 0 &&
             first.value().ino.size() == 32,
         "identity: win32, VOLUME_NAME_GUID path, 128-bit file id");
  for (std::size_t i = 1; i < spellings.size(); ++i) {
    auto other = gjc::directory_identity(spellings[i]);
    report(other.ok() && other.value().canonical_path == first.value().canonical_path &&
               other.value().dev == first.value().dev && other.value().ino == first.value().ino,
           "one identity for " + spellings[i], other.ok() ? other.value().canonical_path : describe(other));
  }
  for (const char* link : {"dir-link", "handles\\junction"}) {
    if (!exists(scratch + "\\" + link)) continue;
    // A link is followed here on purpose: the identity is that of the directory it leads to.
    const std::string target = std::string(link) == "dir-link" ? scratch + "\\outside" : scratch + "\\handles\\plain-dir";
    auto through = gjc::directory_identity(scratch + "\\" + link);
    auto direct = gjc::directory_identity(target);
    report(through.ok() && direct.ok() && through.value().canonical_path == direct.value().canonical_path &&
               through.value().ino == direct.value().ino,
           std::string("identity through ") + link + " is its target's", describe(through));
  }
  gjc::OwnedHandle(::CreateFileW(wide(scratch + "\\ident-file").c_str(), GENERIC_WRITE, 0, nullptr, CREATE_ALWAYS, 0, nullptr));
  expect_code(gjc::directory_identity(scratch + "\\ident-file"), Code::not_directory, "identity of a file -> not_directory");
  expect_code(gjc::directory_identity(scratch + "\\no-such-dir"), Code::not_found, "identity of nothing -> not_found");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <scratch dir> [<alias of the scratch dir>]\n", argv[0]);
    return 100;
  }
  const std::string scratch = argv[1];
  const std::string alias = argc > 2 ? argv[2] : "";
  std::printf("# %s\n", under_wine() ? "running under wine" : "running on Windows");
  dacl_policy_checks();
  path_checks();
  handle_checks(scratch);
  owner_only_checks(scratch);
  identity_checks(scratch, alias);
  std::printf("# %d failed\n", failures);
  return failures;
}
