// The Linux ACL gate: POSIX ACL xattrs read straight into a buffer on the held descriptor.
// Calls go through glibc's fgetxattr/fremovexattr (not raw syscalls) so an LD_PRELOAD
// shim can inject every errno and byte pattern in tests.
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>

#include <cerrno>
#include <memory>
#include <new>
#include <string>

#include "../acl_bytes.h"
#include "../eintr.h"
#include "../names.h"
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
  const long n = static_cast<long>(retry_eintr([&] { return ::fgetxattr(fd, attribute, buffer, size); }));
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

// One attribute's value by path (getxattr follows the /proc/self/fd link to the object an
// O_PATH descriptor holds, which fgetxattr cannot read): bytes when present, nothing when
// absent or unsupported, else the failure.
Result<std::vector<unsigned char>> value_at(const std::string& path, const char* attribute, Attribute which) {
  std::vector<unsigned char> buffer(kSmallAclBytes);
  long n =
      static_cast<long>(retry_eintr([&] { return ::getxattr(path.c_str(), attribute, buffer.data(), buffer.size()); }));
  if (n < 0 && errno == ERANGE) {
    buffer.resize(kMaxAclBytes);
    n = static_cast<long>(
        retry_eintr([&] { return ::getxattr(path.c_str(), attribute, buffer.data(), buffer.size()); }));
  }
  const int error = n < 0 ? errno : 0;
  switch (classify_acl_read(n, error, buffer.data())) {
    case AclAnswer::present:
      buffer.resize(static_cast<std::size_t>(n));
      return buffer;
    case AclAnswer::absent:
    case AclAnswer::unsupported:
      return std::vector<unsigned char>{};
    case AclAnswer::malformed:
      return fail(Code::acl_malformed, 0, "getxattr", which);
    case AclAnswer::denied:
      return fail(Code::acl_denied, error, "getxattr", which);
    case AclAnswer::io_error:
      return fail(Code::acl_io_error, error, "getxattr", which);
    default:
      return fail(Code::acl_unknown, error, "getxattr", which);
  }
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
    if (retry_eintr([&] { return ::fremovexattr(fd, attribute); }) != 0 && errno != ENODATA && errno != ENOTSUP &&
        errno != EOPNOTSUPP) {
      return posix::errno_failure(errno, "fremovexattr");
    }
  }
  return success();
}

}  // namespace gjc::os

namespace gjc {

Result<AclValues> read_acl_values(NativeHandle dir, std::string_view name, bool directory) {
  if (!is_valid_name(name)) return fail(Code::invalid_name);
  const std::string entry(name);
  OwnedHandle fd(retry_eintr([&] { return ::openat(dir, entry.c_str(), O_PATH | posix::kBaseOpenFlags); }));
  if (!fd.valid()) return posix::errno_failure(errno, "openat");
  auto st = posix::fstat_of(fd.get());
  if (!st.ok()) return st.failure();
  const mode_t type = st.value().st_mode & S_IFMT;
  if (type == S_IFLNK) return fail(Code::symlink_refused, 0, "openat");
  if (directory && type != S_IFDIR) return fail(Code::not_directory, 0, "openat");
  if (!directory && type != S_IFREG) return fail(Code::not_regular_file, 0, "openat");
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  AclValues values;
  auto access = os::value_at(path, os::kAccess, Attribute::access_acl);
  if (!access.ok()) return access.failure();
  values.access = std::move(access.value());
  if (directory) {
    auto dflt = os::value_at(path, os::kDefault, Attribute::default_acl);
    if (!dflt.ok()) return dflt.failure();
    values.dflt = std::move(dflt.value());
  }
  return values;
}

}  // namespace gjc
