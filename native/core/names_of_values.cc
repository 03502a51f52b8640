// The public spellings of the core's enums. They are API: TypeScript unions, the README
// table and the tests use exactly these strings.
#include "platform.h"
#include "result.h"

namespace gjc {

const char* code_name(Code code) noexcept {
  switch (code) {
    case Code::invalid_name: return "invalid_name";
    case Code::invalid_argument: return "invalid_argument";
    case Code::not_found: return "not_found";
    case Code::already_exists: return "already_exists";
    case Code::symlink_refused: return "symlink_refused";
    case Code::not_directory: return "not_directory";
    case Code::not_regular_file: return "not_regular_file";
    case Code::hardlink_refused: return "hardlink_refused";
    case Code::owner_mismatch: return "owner_mismatch";
    case Code::mode_mismatch: return "mode_mismatch";
    case Code::acl_present: return "acl_present";
    case Code::acl_malformed: return "acl_malformed";
    case Code::acl_denied: return "acl_denied";
    case Code::acl_io_error: return "acl_io_error";
    case Code::acl_unknown: return "acl_unknown";
    case Code::identity_mismatch: return "identity_mismatch";
    case Code::permission_denied: return "permission_denied";
    case Code::lock_busy: return "lock_busy";
    case Code::not_utf8: return "not_utf8";
    case Code::network_unsupported: return "network_unsupported";
    case Code::insecure_ancestor: return "insecure_ancestor";
    case Code::identity_unavailable: return "identity_unavailable";
    case Code::too_large: return "too_large";
    case Code::closed: return "closed";
    case Code::io_error: return "io_error";
  }
  return "io_error";
}

const char* attribute_name(Attribute attribute) noexcept {
  switch (attribute) {
    case Attribute::access_acl: return "access_acl";
    case Attribute::default_acl: return "default_acl";
    case Attribute::none: return "";
  }
  return "";
}

const char* evidence_name(Evidence evidence) noexcept {
  switch (evidence) {
    case Evidence::absent: return "absent";
    case Evidence::unsupported: return "unsupported";
    case Evidence::not_applicable: return "not_applicable";
  }
  return "not_applicable";
}

const char* entry_type_name(EntryType type) noexcept {
  switch (type) {
    case EntryType::file: return "file";
    case EntryType::directory: return "directory";
    case EntryType::symlink: return "symlink";
    case EntryType::fifo: return "fifo";
    case EntryType::socket: return "socket";
    case EntryType::char_device: return "char_device";
    case EntryType::block_device: return "block_device";
    case EntryType::unknown: return "unknown";
  }
  return "unknown";
}

}  // namespace gjc
