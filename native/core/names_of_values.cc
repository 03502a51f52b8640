// The public spellings of the core's enums. They are API: TypeScript unions, the README
// table and the tests use exactly these strings.
#include <cerrno>

#include "platform.h"
#include "result.h"

namespace gjc {

namespace {
// In the order of enum class Code (result.h).
constexpr const char* kCodeNames[] = {
    "invalid_name",     "invalid_argument",  "not_found",         "already_exists",
    "symlink_refused",  "not_directory",     "not_regular_file",  "hardlink_refused",
    "owner_mismatch",   "mode_mismatch",     "acl_present",       "acl_malformed",
    "acl_denied",       "acl_io_error",      "acl_unknown",       "identity_mismatch",
    "permission_denied", "lock_busy",        "not_utf8",          "network_unsupported",
    "insecure_ancestor", "identity_unavailable", "too_large",     "closed",
    "io_error",
};
static_assert(sizeof kCodeNames / sizeof kCodeNames[0] == static_cast<std::size_t>(Code::io_error) + 1,
              "kCodeNames names every Code");

// In the order of enum class EntryType (platform.h).
constexpr const char* kEntryTypeNames[] = {"file",   "directory",   "symlink",      "fifo",
                                           "socket", "char_device", "block_device", "unknown"};
static_assert(sizeof kEntryTypeNames / sizeof kEntryTypeNames[0] ==
                  static_cast<std::size_t>(EntryType::unknown) + 1,
              "kEntryTypeNames names every EntryType");
}  // namespace

const char* code_name(Code code) noexcept {
  const auto index = static_cast<std::size_t>(code);
  return index < sizeof kCodeNames / sizeof kCodeNames[0] ? kCodeNames[index] : "io_error";
}

Code code_of_errno(int error) noexcept {
  switch (error) {
    case ENOENT: return Code::not_found;
    case EEXIST: return Code::already_exists;
    case ELOOP: return Code::symlink_refused;
    case ENOTDIR: return Code::not_directory;
    case EISDIR:
    case ENXIO: return Code::not_regular_file;
    case EACCES:
    case EPERM: return Code::permission_denied;
    case ENAMETOOLONG: return Code::invalid_name;
    default: return Code::io_error;
  }
}

const char* attribute_name(Attribute attribute) noexcept {
  switch (attribute) {
    case Attribute::access_acl: return "access_acl";
    case Attribute::default_acl: return "default_acl";
    case Attribute::none: return "";
  }
  return "";
}

const char* entry_type_name(EntryType type) noexcept {
  const auto index = static_cast<std::size_t>(type);
  return index < sizeof kEntryTypeNames / sizeof kEntryTypeNames[0] ? kEntryTypeNames[index] : "unknown";
}

}  // namespace gjc
