// Helpers shared by the POSIX platform files, and the hooks each POSIX OS implements.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../platform.h"
#include "../result.h"

namespace gjc::posix {

// On every descriptor opened by name: close-on-exec from birth, never following a final link.
constexpr int kBaseOpenFlags = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;

// Maps an errno from a call on a managed path to its reason code. Callers that know a
// more specific meaning for an errno (ENOTDIR after an O_DIRECTORY open) decide first.
Failure errno_failure(int error, const char* syscall);

Result<struct stat> fstat_of(int fd);

// What check_stat asks of the permission bits: exactly 0700 / 0600 (owner-only), no write
// for group or other (a legacy source), or nothing (an object about to be repaired).
enum class ModeRule { exact, no_foreign_write, any };

// Type, owner == the effective user, mode as `rule` says and, for a file, exactly one link:
// everything but the ACL gate, in that order.
Status check_stat(const struct stat& st, bool directory, ModeRule rule);

// check_stat on the fstat of an open descriptor.
Status check_fd(int fd, bool directory, ModeRule rule);

// `name` of `dir` must still lead to the inode open as `fd` (identity_mismatch otherwise).
Status check_same_entry(int dir, const char* name, int fd);

// Explains a failed O_NOFOLLOW|O_DIRECTORY open of `name` below `parent`: a link and a
// non-directory both give ENOTDIR or ELOOP, so the entry is looked at without following it
// to tell symlink_refused from not_directory. Any other errno is mapped by errno_failure.
Failure explain_dir_open_failure(int parent, const char* name, int error, const char* syscall);

StatInfo stat_info_of(const struct stat& st);

// The no-replace fallback where the OS or file system has no exclusive rename: linkat
// (which itself refuses an existing `to`: already_exists), then unlinkat of `from`. Any
// other linkat answer fails closed; it never falls back to check-then-rename.
Status link_then_unlink(int dirfd, const char* from, const char* to);

}  // namespace gjc::posix

// What the shared POSIX code needs from the OS it runs on: Linux implements these in linux/,
// macOS in darwin/.
namespace gjc::os {

// The ACL gate on an open, type-checked, non-O_PATH descriptor (owner/mode already passed).
Result<VerifyEvidence> acl_check(int fd, bool directory);

// Removes every ACL from a descriptor we own ("cannot store ACLs" is success too).
Status acl_strip(int fd, bool directory);

// Renames `from` to `to` in `dirfd` without ever replacing `to` (no directory sync).
Status rename_noreplace(int dirfd, const char* from, const char* to);

// The canonical absolute path of an open directory descriptor, reached originally by
// `opened_path`; identity_unavailable when the OS cannot say.
Result<std::string> canonical_path(int fd, const std::string& opened_path);

// True on a network filesystem, whose identity and ACL answers we do not trust.
Result<bool> is_network_fs(int fd);

const char* platform_name() noexcept;  // "linux" or "darwin"

// The open flag for a directory that is only passed through and fstat()ed: one needing no read
// permission (a 0711 home stays passable) where the running OS has it, else O_RDONLY.
int ancestor_access() noexcept;

}  // namespace gjc::os
