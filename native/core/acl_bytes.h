// Pure logic of the Linux ACL gate: parsing system.posix_acl_* xattr bytes and turning the
// answers of fgetxattr into a verdict. No syscalls here, so every errno and every
// malformed byte pattern is unit-testable.
#pragma once

#include <cstddef>

#include "platform.h"
#include "result.h"

namespace gjc {

// The shape of a stored POSIX ACL (kernel posix_acl_xattr format, little-endian).
enum class AclContent { minimal, extended, malformed };

// Parses one xattr value: version 2 header, then 8-byte entries in the order the kernel
// accepts (USER_OBJ, USER ascending, GROUP_OBJ, GROUP ascending, MASK, OTHER), perms <= 7.
AclContent parse_posix_acl(const unsigned char* bytes, std::size_t length) noexcept;

// One fgetxattr answer, classified.
enum class AclAnswer { absent, unsupported, present, malformed, denied, io_error, unknown };

// `result` is fgetxattr's return value, `error` the errno when it is -1, and `bytes` the
// buffer it filled when it is >= 0. ENODATA is absent; only ENOTSUP/EOPNOTSUPP is
// unsupported; EACCES/EPERM denied; EIO io_error; every other errno unknown. Any value
// that parses (minimal or extended) is present; one that does not is malformed.
AclAnswer classify_acl_read(long result, int error, const unsigned char* bytes) noexcept;

// Combines the answers for one object into evidence or the failure to report. For a
// directory pass both answers; the two must agree on "unsupported" (acl_unknown otherwise).
// `read_errno` values are reported as the failure's errno.
Result<VerifyEvidence> acl_verdict(AclAnswer access, int access_errno, const AclAnswer* dflt,
                                   int default_errno) noexcept;

}  // namespace gjc
