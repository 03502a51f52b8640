// Windows absolute paths: which forms we accept, and the network checks that run before
// (lexically) and after (on the handle) any I/O.
#pragma once

#include <string>
#include <vector>

#include "win_util.h"

namespace gjc::win {

// A local absolute path split for a walk: `root` is the volume root in the \\?\ form
// ("\\?\C:\" or "\\?\Volume{guid}\"), `components` the validated names below it.
struct LocalPath {
  std::wstring root;
  std::vector<std::wstring> components;
};

// Accepts "C:\a\b", "C:/a/b", "\\?\C:\a", "\\.\C:\a" and "\\?\Volume{guid}\a".
// Refuses, before any I/O: every UNC spelling ("\\server\share", "//server/share",
// "\\?\UNC\...", "\\.\UNC\...") and a drive letter the OS maps to a network share
// (network_unsupported); relative, drive-relative and device paths, "." and ".."
// (invalid_argument); a component that is not a valid Windows name (invalid_name).
Result<LocalPath> parse_local_path(const std::string& utf8_path);

// The path of a prefix: root plus the first `count` components, in the \\?\ form that
// bypasses Win32 name rewriting (trailing dots, MAX_PATH).
std::wstring join_prefix(const LocalPath& path, std::size_t count);

// not_directory unless `handle` is a directory; network_unsupported when it lives on a
// network volume (the DOS form of its final path is \\?\UNC\..., or its volume root is a
// remote drive).
Status check_local_dir(HANDLE handle);

}  // namespace gjc::win
