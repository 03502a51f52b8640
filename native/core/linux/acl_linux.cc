// The Linux ACL gate: POSIX ACL xattrs read straight into a buffer on the held descriptor.
// Calls go through glibc's fgetxattr/fremovexattr (not raw syscalls) so an LD_PRELOAD
// shim can inject every errno and byte pattern in tests.
#include <sys/vfs.h>
#include <sys/xattr.h>

#include <cerrno>
#include <memory>
#include <new>

#include "../acl_bytes.h"
#include "../eintr.h"
#include "../posix/posix_util.h"

namespace gjc::os {
namespace {

constexpr const char* kAccess = "system.posix_acl_access";
constexpr const char* kDefault = "system.posix_acl_default";

// The kernel allocates and zeroes a buffer of the size we pass for every getxattr, so the
// common read uses a small one; only an answer that does not fit (ERANGE) is read again with
// the largest value the kernel allows. No size probe, so no probe/read race.
constexpr std::size_t kSmallAclBytes = 1024;
constexpr std::size_t kMaxAclBytes = 64 * 1024;

struct Reading {
  AclAnswer answer;
  int error;
};

Reading read_into(int fd, const char* attribute, unsigned char* buffer, std::size_t size) {
  const long n = static_cast<long>(
      retry_eintr([&] { return ::fgetxattr(fd, attribute, buffer, size); }));
  const int error = n < 0 ? errno : 0;
  return Reading{classify_acl_read(n, error, buffer), error};
}

Reading read_acl(int fd, const char* attribute) {
  unsigned char small[kSmallAclBytes];
  Reading reading = read_into(fd, attribute, small, sizeof small);
  if (reading.error != ERANGE) return reading;
  std::unique_ptr<unsigned char[]> large(new (std::nothrow) unsigned char[kMaxAclBytes]);
  if (!large) return Reading{AclAnswer::unknown, ENOMEM};
  return read_into(fd, attribute, large.get(), kMaxAclBytes);
}

// Network filesystems answer EOPNOTSUPP for POSIX ACL names while keeping ACLs of their
// own (system.nfs4_acl, SMB security descriptors): there the answer proves nothing.
constexpr long kNfsMagic = 0x6969;
constexpr long kSmbMagic = 0x517B;
constexpr long kCifsMagic = static_cast<long>(0xFF534D42u);
constexpr long kSmb2Magic = static_cast<long>(0xFE534D42u);

}  // namespace

Result<bool> is_network_fs(int fd) {
  struct statfs fs {};
  if (retry_eintr([&] { return ::fstatfs(fd, &fs); }) != 0) return posix::errno_failure(errno, "fstatfs");
  const long type = static_cast<long>(static_cast<unsigned int>(fs.f_type));
  return type == kNfsMagic || type == kSmbMagic || type == kCifsMagic || type == kSmb2Magic;
}

Result<VerifyEvidence> acl_check(int fd, bool directory) {
  const Reading access = read_acl(fd, kAccess);
  const Reading dflt = directory ? read_acl(fd, kDefault) : Reading{AclAnswer::absent, 0};
  auto verdict = acl_verdict(access.answer, access.error, directory ? &dflt.answer : nullptr, dflt.error);
  if (!verdict.ok() || verdict.value().access_acl != Evidence::unsupported) return verdict;
  auto network = is_network_fs(fd);
  if (!network.ok()) return network.failure();
  if (network.value()) return fail(Code::acl_unknown, ENOTSUP, "fgetxattr", Attribute::access_acl);
  return verdict;
}

Status acl_strip(int fd, bool directory) {
  for (const char* attribute : {kAccess, kDefault}) {
    if (attribute == kDefault && !directory) break;
    if (retry_eintr([&] { return ::fremovexattr(fd, attribute); }) != 0 && errno != ENODATA &&
        errno != ENOTSUP && errno != EOPNOTSUPP) {
      return posix::errno_failure(errno, "fremovexattr");
    }
  }
  return success();
}

}  // namespace gjc::os
