// What the shared POSIX implementation (posix/*.cc) needs from the operating system it runs
// on: Linux implements these in linux/, macOS in darwin/.
#pragma once

#include <cstdint>
#include <string>

#include "../platform.h"
#include "../result.h"

namespace gjc::os {

// The ACL gate on an open, type-checked, non-O_PATH descriptor (owner/mode already passed).
Result<VerifyEvidence> acl_check(int fd, bool directory);

// Removes every ACL from an open descriptor we own; "no ACL" and "cannot store ACLs" are
// both success.
Status acl_strip(int fd, bool directory);

// Renames `from` to `to` in `dirfd` without ever replacing `to` (no directory sync).
Status rename_noreplace(int dirfd, const char* from, const char* to);

// The strongest data+metadata flush the OS offers for one descriptor.
Status full_sync(int fd);

// The canonical absolute path of an open directory descriptor, reached originally by
// `opened_path`; identity_unavailable when the OS cannot say.
Result<std::string> canonical_path(int fd, const std::string& opened_path);

// True on a network filesystem, whose identity and ACL answers we do not trust.
Result<bool> is_network_fs(int fd);

const char* platform_name() noexcept;  // "linux" or "darwin"

}  // namespace gjc::os
