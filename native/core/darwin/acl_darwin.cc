// The macOS ACL gate: extended ACLs (ACL_TYPE_EXTENDED) read on the held descriptor.
// macOS has no separate default ACL; inheritance flags live on the entries of the one ACL,
// so one reading decides for files and directories alike.
#include <sys/acl.h>
#include <sys/mount.h>
#include <sys/param.h>

#include <cerrno>
#include <memory>
#include <type_traits>

#include "../eintr.h"
#include "../posix/posix_util.h"

namespace gjc::os {
namespace {

struct AclFree {
  void operator()(acl_t acl) const noexcept { ::acl_free(acl); }
};
using OwnedAcl = std::unique_ptr<std::remove_pointer_t<acl_t>, AclFree>;

// ENOTSUP (45) and EOPNOTSUPP (102) differ on macOS; either means "no ACL support here".
bool is_unsupported(int error) { return error == ENOTSUP || error == EOPNOTSUPP; }

Failure acl_failure(int error) {
  const Attribute a = Attribute::access_acl;
  if (error == EACCES || error == EPERM) return fail(Code::acl_denied, error, "acl_get_fd_np", a);
  if (error == EIO) return fail(Code::acl_io_error, error, "acl_get_fd_np", a);
  return fail(Code::acl_unknown, error, "acl_get_fd_np", a);
}

}  // namespace

Result<bool> is_network_fs(int fd) {
  struct statfs fs {};
  if (retry_eintr([&] { return ::fstatfs(fd, &fs); }) != 0) return posix::errno_failure(errno, "fstatfs");
  // MNT_LOCAL is set by every local file system (apfs, hfs, msdos, ...) and by none of the
  // network ones (nfs, smbfs, afpfs, webdav).
  return (fs.f_flags & MNT_LOCAL) == 0;
}

Result<VerifyEvidence> acl_check(int fd, bool) {
  VerifyEvidence evidence;  // default_acl not_applicable: one ACL decides
  errno = 0;
  OwnedAcl acl(::acl_get_fd_np(fd, ACL_TYPE_EXTENDED));
  if (!acl) {
    const int error = errno;
    if (error == ENOENT) {
      evidence.access_acl = Evidence::absent;
      return evidence;
    }
    if (!is_unsupported(error)) return acl_failure(error);
    // As on Linux: "cannot store ACLs" passes only on a local file system, where it is
    // true; a network file system may keep ACLs we cannot see this way.
    auto network = is_network_fs(fd);
    if (!network.ok()) return network.failure();
    if (network.value()) return fail(Code::acl_unknown, error, "acl_get_fd_np", Attribute::access_acl);
    evidence.access_acl = Evidence::unsupported;
    return evidence;
  }
  // An ACL object with no entries grants nothing: absent. Any entry, allow or deny, is an
  // ACL stored on the object and fails.
  acl_entry_t entry = nullptr;
  if (::acl_get_entry(acl.get(), ACL_FIRST_ENTRY, &entry) == 0) {
    return fail(Code::acl_present, 0, "acl_get_entry", Attribute::access_acl);
  }
  if (errno != EINVAL) return fail(Code::acl_malformed, errno, "acl_get_entry", Attribute::access_acl);
  evidence.access_acl = Evidence::absent;
  return evidence;
}

Status acl_strip(int fd, bool) {
  OwnedAcl empty(::acl_init(0));
  if (!empty) return posix::errno_failure(errno, "acl_init");
  if (::acl_set_fd_np(fd, empty.get(), ACL_TYPE_EXTENDED) != 0 && errno != ENOENT && !is_unsupported(errno)) {
    return posix::errno_failure(errno, "acl_set_fd_np");
  }
  return success();
}

}  // namespace gjc::os
