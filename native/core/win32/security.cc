// Owner-only verify and repair on Windows. The owner SID stands in for st_uid and a
// protected one-ACE DACL for "mode 0700/0600 with no ACL": anything the DACL grants to
// another trustee, or could inherit from a parent, fails closed.
#include "win_util.h"

#include <aclapi.h>

#include <cerrno>
#include <cstring>

namespace gjc {
namespace win {
namespace {

// The security of an object, owned in LocalAlloc'd memory as GetSecurityInfo returns it.
struct StoredSecurity {
  PSID owner = nullptr;
  PACL dacl = nullptr;
  SECURITY_DESCRIPTOR_CONTROL control = 0;
  std::unique_ptr<void, decltype(&::LocalFree)> descriptor{nullptr, &::LocalFree};
};

Result<StoredSecurity> read_security(HANDLE handle) {
  StoredSecurity stored;
  PSECURITY_DESCRIPTOR raw = nullptr;
  const DWORD rc = ::GetSecurityInfo(handle, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                     &stored.owner, nullptr, &stored.dacl, nullptr, &raw);
  if (rc != ERROR_SUCCESS) {
    // The same split as the Linux ACL gate: refusal, I/O failure, anything else.
    const int e = errno_of(rc);
    if (e == EACCES || e == EPERM) return fail(Code::acl_denied, e, "GetSecurityInfo", Attribute::access_acl);
    if (e == EIO && rc == ERROR_IO_DEVICE)
      return fail(Code::acl_io_error, EIO, "GetSecurityInfo", Attribute::access_acl);
    return fail(Code::acl_unknown, e, "GetSecurityInfo", Attribute::access_acl);
  }
  stored.descriptor.reset(raw);
  DWORD revision = 0;
  if (!::GetSecurityDescriptorControl(raw, &stored.control, &revision)) {
    return fail(Code::acl_malformed, EINVAL, "GetSecurityDescriptorControl", Attribute::access_acl);
  }
  return stored;
}

bool same_sid(PSID a, const std::vector<unsigned char>& b) {
  return a != nullptr && ::IsValidSid(a) && ::EqualSid(a, const_cast<unsigned char*>(b.data())) != FALSE;
}

// Everything but the DACL: type, owner and links, in the order POSIX checks them. The
// user and the stored security come back for the DACL step that follows.
struct OwnedObject {
  std::vector<unsigned char> user;
  StoredSecurity stored;
};

Result<OwnedObject> check_owned(HANDLE handle, bool directory) {
  auto facts = facts_of(handle);
  if (!facts.ok()) return facts.failure();
  const HandleFacts& f = facts.value();
  const char* call = "GetFileInformationByHandleEx";
  if (f.reparse_point) return fail(Code::symlink_refused, ELOOP, call);
  if (directory && !f.directory) return fail(Code::not_directory, ENOTDIR, call);
  if (!directory && (f.directory || f.file_type != FILE_TYPE_DISK)) {
    return fail(Code::not_regular_file, f.directory ? EISDIR : 0, call);
  }
  auto user = current_user_sid();
  if (!user.ok()) return user.failure();
  auto stored = read_security(handle);
  if (!stored.ok()) return stored.failure();
  if (!same_sid(stored.value().owner, user.value())) return fail(Code::owner_mismatch, 0, "GetSecurityInfo");
  // Zero links: the file was deleted while we held it, so it is no longer what the name
  // leads to.
  if (!directory && f.links != 1) return fail(f.links == 0 ? Code::identity_mismatch : Code::hardlink_refused, 0, call);
  return OwnedObject{std::move(user).value(), std::move(stored).value()};
}

Result<VerifyEvidence> verify(HANDLE handle, bool directory) {
  auto owned = check_owned(handle, directory);
  if (!owned.ok()) return owned.failure();
  const StoredSecurity& stored = owned.value().stored;
  auto dacl = check_owner_only_dacl(stored.dacl, stored.control, owned.value().user);
  if (!dacl.ok()) return dacl.failure();
  return VerifyEvidence{};  // access absent, default not_applicable
}

Result<VerifyEvidence> repair(HANDLE handle, bool directory) {
  // Only an object of the right type that the user already owns is repaired.
  auto owned = check_owned(handle, directory);
  if (!owned.ok()) return owned.failure();
  auto security = owner_only_security(directory);
  if (!security.ok()) return security.failure();
  // Writing the DACL needs WRITE_DAC (and WRITE_OWNER to restate the owner) on a handle to
  // this very object; the held handle stays minimal, so a second one is opened from it.
  auto writable = reopen(handle, READ_CONTROL | WRITE_DAC | WRITE_OWNER, directory);
  if (!writable.ok()) return writable.failure();
  // SetKernelObjectSecurity, not SetSecurityInfo: the latter walks existing children to
  // propagate inheritable ACEs, which is neither wanted nor bounded here. Protection rides
  // on the descriptor's SE_DACL_PROTECTED control bit (as Cygwin sets it for
  // NtSetSecurityObject); PROTECTED_DACL_SECURITY_INFORMATION is a SetSecurityInfo flag.
  const SECURITY_INFORMATION what = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
  if (!::SetKernelObjectSecurity(writable.value().get(), what, &security.value()->descriptor)) {
    return win32_failure(::GetLastError(), "SetKernelObjectSecurity");
  }
  return verify(handle, directory);
}

}  // namespace

Status check_source(HANDLE handle, bool directory) {
  auto owned = check_owned(handle, directory);
  if (!owned.ok()) return owned.failure();
  return success();
}

// A missing (NULL) DACL grants everyone everything; an unprotected one takes in whatever
// inheritable ACEs a parent gains later; any second ACE grants or denies someone else.
Status check_owner_only_dacl(PACL dacl, SECURITY_DESCRIPTOR_CONTROL control, const std::vector<unsigned char>& user) {
  const Failure present = fail(Code::acl_present, 0, "GetSecurityInfo", Attribute::access_acl);
  if ((control & SE_DACL_PRESENT) == 0 || (control & SE_DACL_PROTECTED) == 0 || dacl == nullptr ||
      dacl->AceCount != 1) {
    return present;
  }
  void* ace = nullptr;
  if (!::GetAce(dacl, 0, &ace) || ace == nullptr)
    return fail(Code::acl_malformed, EINVAL, "GetAce", Attribute::access_acl);
  auto* allowed = static_cast<ACCESS_ALLOWED_ACE*>(ace);
  if (allowed->Header.AceType != ACCESS_ALLOWED_ACE_TYPE) return present;
  if (!same_sid(reinterpret_cast<PSID>(&allowed->SidStart), user)) return present;
  return success();
}

Result<std::vector<unsigned char>> current_user_sid() {
  HANDLE token = nullptr;
  if (!::OpenThreadToken(::GetCurrentThread(), TOKEN_QUERY, TRUE, &token)) {
    if (::GetLastError() != ERROR_NO_TOKEN) return win32_failure(::GetLastError(), "OpenThreadToken");
    if (!::OpenProcessToken(::GetCurrentProcess(), TOKEN_QUERY, &token)) {
      return win32_failure(::GetLastError(), "OpenProcessToken");
    }
  }
  OwnedHandle held(token);
  DWORD size = 0;
  ::GetTokenInformation(token, TokenUser, nullptr, 0, &size);
  if (size == 0) return win32_failure(::GetLastError(), "GetTokenInformation");
  std::vector<std::uint64_t> buffer(size / sizeof(std::uint64_t) + 1);
  if (!::GetTokenInformation(token, TokenUser, buffer.data(), size, &size)) {
    return win32_failure(::GetLastError(), "GetTokenInformation");
  }
  const PSID sid = reinterpret_cast<TOKEN_USER*>(buffer.data())->User.Sid;
  if (!::IsValidSid(sid)) return fail(Code::io_error, EINVAL, "GetTokenInformation");
  const auto* bytes = static_cast<const unsigned char*>(sid);
  return std::vector<unsigned char>(bytes, bytes + ::GetLengthSid(sid));
}

Result<std::unique_ptr<OwnerOnlySecurity>> owner_only_security(bool directory) {
  auto user = current_user_sid();
  if (!user.ok()) return user.failure();
  auto security = std::make_unique<OwnerOnlySecurity>();
  security->user_sid = std::move(user).value();
  PSID sid = security->user_sid.data();
  const DWORD acl_bytes = sizeof(ACL) + sizeof(ACCESS_ALLOWED_ACE) - sizeof(DWORD) + ::GetLengthSid(sid);
  security->acl.assign(acl_bytes / sizeof(std::uint64_t) + 1, 0);
  auto* acl = reinterpret_cast<PACL>(security->acl.data());
  // Children of a directory inherit the same single grant, so a file someone else creates
  // in it starts out owner-only too (ours are created with this descriptor explicitly).
  const DWORD inherit = directory ? (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) : 0;
  if (!::InitializeAcl(acl, acl_bytes, ACL_REVISION) ||
      !::AddAccessAllowedAceEx(acl, ACL_REVISION, inherit, FILE_ALL_ACCESS, sid)) {
    return win32_failure(::GetLastError(), "AddAccessAllowedAceEx");
  }
  SECURITY_DESCRIPTOR* sd = &security->descriptor;
  if (!::InitializeSecurityDescriptor(sd, SECURITY_DESCRIPTOR_REVISION) ||
      !::SetSecurityDescriptorOwner(sd, sid, FALSE) || !::SetSecurityDescriptorDacl(sd, TRUE, acl, FALSE) ||
      !::SetSecurityDescriptorControl(sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED)) {
    return win32_failure(::GetLastError(), "InitializeSecurityDescriptor");
  }
  return security;
}

}  // namespace win

Result<VerifyEvidence> verify_directory(NativeHandle dir) { return win::verify(dir, true); }
Result<VerifyEvidence> verify_file(NativeHandle file) { return win::verify(file, false); }
Result<VerifyEvidence> repair_directory(NativeHandle dir) { return win::repair(dir, true); }
Result<VerifyEvidence> repair_file(NativeHandle file) { return win::repair(file, false); }

}  // namespace gjc
