// Helpers shared by the POSIX platform files.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "../platform.h"
#include "../result.h"

namespace gjc::posix {

// Maps an errno from a call on a managed path to its reason code. Callers that know a
// more specific meaning for an errno (ENOTDIR after an O_DIRECTORY open) decide first.
Failure errno_failure(int error, const char* syscall);

// fstat with EINTR retry, as a Result.
Result<struct stat> fstat_of(int fd);

// Explains a failed O_NOFOLLOW|O_DIRECTORY open of `name` (relative to `parent`, or a path
// with AT_FDCWD): both a link and a non-directory give ENOTDIR or ELOOP, so the entry is
// looked at without following it to tell symlink_refused from not_directory. Any other
// errno is mapped as errno_failure does, naming `syscall`.
Failure explain_dir_open_failure(int parent, const char* name, int error, const char* syscall);

// Opens the canonical absolute directory `real` from "/" one component at a time without
// following a link, refusing (insecure_ancestor) any directory on the chain that another
// user could replace. With `for_writes` the result is readable, so it can be synced.
Result<OwnedHandle> open_safe_ancestors(const std::string& real, bool for_writes);

// Converts a struct stat to the platform-neutral StatInfo.
StatInfo stat_info_of(const struct stat& st);

// The entry type a mode describes.
EntryType entry_type_of(mode_t mode);

// The no-replace fallback where the OS or file system has no exclusive rename: linkat
// (which itself refuses an existing `to`: already_exists), then unlinkat of `from`. Any
// other linkat answer fails closed; it never falls back to check-then-rename.
Status link_then_unlink(int dirfd, const char* from, const char* to);

// Flags on every descriptor we open by name: close-on-exec from birth, and
// never follow a final link.
constexpr int kBaseOpenFlags = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;

}  // namespace gjc::posix
