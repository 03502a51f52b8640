// The Windows owner-only policy: the check of an object's security, and the descriptor we
// create objects with.
#pragma once

#include <memory>
#include <vector>

#include "win_util.h"

namespace gjc::win {

// An absolute security descriptor: owner = the current user, a protected DACL holding one
// ACCESS_ALLOWED ACE (full access) for that user, inheritable on directories. The SID and
// the ACL live inside, so `descriptor` stays valid for the life of the object.
struct OwnerOnlySecurity {
  std::vector<unsigned char> user_sid;
  std::vector<std::uint64_t> acl;  // 8-byte words keep the ACL aligned
  SECURITY_DESCRIPTOR descriptor{};
};
Result<std::unique_ptr<OwnerOnlySecurity>> owner_only_security(bool directory);

// The DACL half of owner-only (testable on descriptors built in memory): present, protected,
// exactly one ACE, and that ACE is ACCESS_ALLOWED for `user`. Anything else is acl_present.
Status check_owner_only_dacl(PACL dacl, SECURITY_DESCRIPTOR_CONTROL control,
                             const std::vector<unsigned char>& user);

// The legacy-source check (platform.h open_source): type, owner SID == the effective user,
// and for a file one link; the DACL need not be owner-only.
Status check_source(HANDLE handle, bool directory);

// The SID of the effective user: the thread's impersonation token if it has one, else the
// process token (the analogue of geteuid()).
Result<std::vector<unsigned char>> current_user_sid();

}  // namespace gjc::win
