// Windows absolute paths: the accepted forms, and the network checks before and after I/O.
#include "win_util.h"

#include <cerrno>
#include <cwctype>

#include "../names.h"

namespace gjc::win {
namespace {

bool starts_with_ci(const std::wstring& text, const wchar_t* prefix) {
  std::size_t i = 0;
  for (; prefix[i] != L'\0'; ++i) {
    if (i >= text.size() || std::towlower(text[i]) != std::towlower(prefix[i])) return false;
  }
  return true;
}

bool is_drive_spec(const std::wstring& text, std::size_t at) {
  if (text.size() < at + 2 || text[at + 1] != L':') return false;
  const wchar_t letter = text[at];
  return (letter >= L'A' && letter <= L'Z') || (letter >= L'a' && letter <= L'z');
}

// "\\?\Volume{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}" is 4 + 7 + 36 + 1 characters.
constexpr std::size_t kVolumeGuidRootLength = 48;

bool is_volume_guid_root(const std::wstring& text) {
  return starts_with_ci(text, L"\\\\?\\Volume{") && text.size() >= kVolumeGuidRootLength &&
         text[kVolumeGuidRootLength - 1] == L'}';
}

Failure network(const char* call) { return fail(Code::network_unsupported, 0, call); }

// The volume root as GetDriveTypeW wants it.
std::wstring drive_type_root(const LocalPath& path) {
  if (starts_with_ci(path.root, L"\\\\?\\Volume{")) return path.root;
  return path.root.substr(4);  // "C:\"
}

}  // namespace

Result<LocalPath> parse_local_path(const std::string& utf8_path) {
  if (utf8_path.find('\0') != std::string::npos) return fail(Code::invalid_argument, EINVAL);
  auto wide = to_wide(utf8_path, Code::invalid_argument);
  if (!wide.ok()) return wide.failure();
  std::wstring p = std::move(wide).value();
  for (auto& c : p) {
    if (c == L'/') c = L'\\';
  }
  LocalPath out;
  std::size_t rest = 0;
  // Every UNC spelling is refused by its shape alone, so no network I/O is ever started.
  if (starts_with_ci(p, L"\\\\?\\UNC\\") || starts_with_ci(p, L"\\\\.\\UNC\\")) return network("parse_path");
  if (starts_with_ci(p, L"\\\\?\\") || starts_with_ci(p, L"\\\\.\\")) {
    p[2] = L'?';  // \\.\C: and \\?\C: name the same volume; keep the form that skips rewriting
    if (is_drive_spec(p, 4) && (p.size() == 6 || p[6] == L'\\')) {
      out.root = p.substr(0, 6) + L"\\";
      rest = 6;
    } else if (is_volume_guid_root(p)) {
      out.root = p.substr(0, kVolumeGuidRootLength) + L"\\";
      rest = kVolumeGuidRootLength;
    } else {
      return fail(Code::invalid_argument, EINVAL, "parse_path");  // pipes, GLOBALROOT, devices
    }
  } else if (p.size() >= 2 && p[0] == L'\\' && p[1] == L'\\') {
    return network("parse_path");
  } else if (is_drive_spec(p, 0) && p.size() >= 3 && p[2] == L'\\') {
    out.root = L"\\\\?\\" + p.substr(0, 2) + L"\\";
    rest = 2;
  } else {
    return fail(Code::invalid_argument, EINVAL, "parse_path");
  }
  for (std::size_t start = rest; start < p.size();) {
    std::size_t end = p.find(L'\\', start);
    if (end == std::wstring::npos) end = p.size();
    if (end > start) {
      std::wstring part = p.substr(start, end - start);
      if (part == L"." || part == L"..") return fail(Code::invalid_argument, EINVAL, "parse_path");
      auto utf8 = to_utf8(part.data(), part.size());
      if (!utf8.ok() || !is_valid_name_windows(utf8.value())) return fail(Code::invalid_name);
      out.components.push_back(std::move(part));
    }
    start = end + 1;
  }
  // A drive letter mapped to a share looks local; the drive type says otherwise, and asking
  // it touches only the local mount table.
  switch (::GetDriveTypeW(drive_type_root(out).c_str())) {
    case DRIVE_REMOTE:
      return network("GetDriveTypeW");
    case DRIVE_NO_ROOT_DIR:
      return fail(Code::not_found, ENOENT, "GetDriveTypeW");
    default:
      break;
  }
  return out;
}

std::wstring join_prefix(const LocalPath& path, std::size_t count) {
  std::wstring joined = path.root;
  for (std::size_t i = 0; i < count && i < path.components.size(); ++i) {
    if (i > 0) joined += L'\\';
    joined += path.components[i];
  }
  return joined;
}

Status check_local_dir(HANDLE handle) {
  auto facts = facts_of(handle);
  if (!facts.ok()) return facts.failure();
  if (!facts.value().directory) return fail(Code::not_directory, ENOTDIR, "CreateFileW");
  auto dos = final_path(handle, VOLUME_NAME_DOS);
  if (dos.ok()) {
    const std::wstring& p = dos.value();
    if (starts_with_ci(p, L"\\\\?\\UNC\\")) return network("GetFinalPathNameByHandleW");
    if (is_drive_spec(p, 4) && ::GetDriveTypeW((p.substr(4, 2) + L"\\").c_str()) == DRIVE_REMOTE) {
      return network("GetDriveTypeW");
    }
  }
  // Only remote files answer this class; local file systems reject it.
  FILE_REMOTE_PROTOCOL_INFO remote{};
  remote.StructureVersion = 1;
  remote.StructureSize = sizeof remote;
  if (::GetFileInformationByHandleEx(handle, FileRemoteProtocolInfo, &remote, sizeof remote)) {
    return network("GetFileInformationByHandleEx");
  }
  return success();
}

}  // namespace gjc::win
