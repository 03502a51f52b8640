#include "acl_bytes.h"

#include <cerrno>
#include <cstdint>

namespace gjc {
namespace {

constexpr std::uint32_t kAclVersion = 2;
constexpr std::size_t kHeaderBytes = 4;
constexpr std::size_t kEntryBytes = 8;

enum Tag : std::uint16_t {
  kUserObj = 0x01,
  kUser = 0x02,
  kGroupObj = 0x04,
  kGroup = 0x08,
  kMask = 0x10,
  kOther = 0x20
};

std::uint16_t le16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// The ordering states of the kernel's posix_acl_valid, as a small machine: each tag may
// only appear once the previous section is done.
enum class Stage { user_obj, users, groups, mask_or_other, done };

}  // namespace

AclContent parse_posix_acl(const unsigned char* bytes, std::size_t length) noexcept {
  if (bytes == nullptr || length < kHeaderBytes || (length - kHeaderBytes) % kEntryBytes != 0) {
    return AclContent::malformed;
  }
  if (le32(bytes) != kAclVersion) return AclContent::malformed;
  const std::size_t count = (length - kHeaderBytes) / kEntryBytes;
  if (count < 3) return AclContent::malformed;

  Stage stage = Stage::user_obj;
  bool named = false;
  bool mask = false;
  std::uint32_t last_id = 0;
  bool have_last_id = false;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned char* entry = bytes + kHeaderBytes + i * kEntryBytes;
    const std::uint16_t tag = le16(entry);
    const std::uint16_t perm = le16(entry + 2);
    const std::uint32_t id = le32(entry + 4);
    if ((perm & ~7u) != 0) return AclContent::malformed;
    switch (tag) {
      case kUserObj:
        if (stage != Stage::user_obj) return AclContent::malformed;
        stage = Stage::users;
        have_last_id = false;
        break;
      case kUser:
      case kGroup: {
        const Stage wanted = tag == kUser ? Stage::users : Stage::groups;
        if (stage != wanted || (have_last_id && id <= last_id)) return AclContent::malformed;
        last_id = id;
        have_last_id = true;
        named = true;
        break;
      }
      case kGroupObj:
        if (stage != Stage::users) return AclContent::malformed;
        stage = Stage::groups;
        have_last_id = false;
        break;
      case kMask:
        if (stage != Stage::groups) return AclContent::malformed;
        stage = Stage::mask_or_other;
        mask = true;
        break;
      case kOther:
        if (stage != Stage::groups && stage != Stage::mask_or_other) return AclContent::malformed;
        stage = Stage::done;
        break;
      default:
        return AclContent::malformed;
    }
    if (stage == Stage::done && i + 1 != count) return AclContent::malformed;
  }
  if (stage != Stage::done || (named && !mask)) return AclContent::malformed;
  return named || mask ? AclContent::extended : AclContent::minimal;
}

AclAnswer classify_acl_read(long result, int error, const unsigned char* bytes) noexcept {
  if (result >= 0) {
    return parse_posix_acl(bytes, static_cast<std::size_t>(result)) == AclContent::malformed ? AclAnswer::malformed
                                                                                             : AclAnswer::present;
  }
  if (error == ENODATA) return AclAnswer::absent;
  if (error == ENOTSUP || error == EOPNOTSUPP) return AclAnswer::unsupported;
  if (error == EACCES || error == EPERM) return AclAnswer::denied;
  if (error == EIO) return AclAnswer::io_error;
  return AclAnswer::unknown;
}

namespace {

// The failure for one answer that is neither absent nor unsupported.
Failure answer_failure(AclAnswer answer, int error, Attribute attribute) {
  switch (answer) {
    case AclAnswer::present:
      return fail(Code::acl_present, 0, "fgetxattr", attribute);
    case AclAnswer::malformed:
      return fail(Code::acl_malformed, 0, "fgetxattr", attribute);
    case AclAnswer::denied:
      return fail(Code::acl_denied, error, "fgetxattr", attribute);
    case AclAnswer::io_error:
      return fail(Code::acl_io_error, error, "fgetxattr", attribute);
    default:
      return fail(Code::acl_unknown, error, "fgetxattr", attribute);
  }
}

bool passes(AclAnswer answer) { return answer == AclAnswer::absent || answer == AclAnswer::unsupported; }

Evidence evidence_of(AclAnswer answer) {
  return answer == AclAnswer::unsupported ? Evidence::unsupported : Evidence::absent;
}

}  // namespace

Result<VerifyEvidence> acl_verdict(AclAnswer access, int access_errno, const AclAnswer* dflt,
                                   int default_errno) noexcept {
  if (!passes(access)) return answer_failure(access, access_errno, Attribute::access_acl);
  VerifyEvidence evidence;
  evidence.access_acl = evidence_of(access);
  if (dflt == nullptr) return evidence;
  if (!passes(*dflt)) return answer_failure(*dflt, default_errno, Attribute::default_acl);
  // One filesystem cannot both store and not store ACLs on the same directory: answers
  // that disagree about support mean something else is going on, so refuse.
  if ((access == AclAnswer::unsupported) != (*dflt == AclAnswer::unsupported)) {
    const bool access_odd = access == AclAnswer::unsupported;
    return fail(Code::acl_unknown, access_odd ? default_errno : access_errno, "fgetxattr", Attribute::default_acl);
  }
  evidence.default_acl = evidence_of(*dflt);
  return evidence;
}

}  // namespace gjc
