#include "names.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "platform.h"
#include "result.h"

namespace gjc {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool equals_ignore_case(std::string_view a, const char* b) {
  const std::size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != b[i]) return false;
  }
  return true;
}

// Windows treats "COM¹".."COM³" and "LPT¹".."LPT³" (superscript digits, UTF-8 encoded) as
// device names as well as the ASCII digits.
bool is_device_digit(std::string_view rest) {
  if (rest.size() == 1) return rest[0] >= '0' && rest[0] <= '9';
  return rest == "\xC2\xB9" || rest == "\xC2\xB2" || rest == "\xC2\xB3";
}

// A DOS device name stays reserved with any extension and with trailing spaces before it:
// "nul.txt" and "CON .log" both open the device.
bool is_reserved_dos_name(std::string_view name) {
  std::string_view stem = name.substr(0, name.find('.'));
  while (!stem.empty() && stem.back() == ' ') stem.remove_suffix(1);
  for (const char* device : {"con", "prn", "aux", "nul", "conin$", "conout$"}) {
    if (equals_ignore_case(stem, device)) return true;
  }
  if (stem.size() >= 4) {
    const std::string_view prefix = stem.substr(0, 3);
    if ((equals_ignore_case(prefix, "com") || equals_ignore_case(prefix, "lpt")) && is_device_digit(stem.substr(3))) {
      return true;
    }
  }
  return false;
}

// The public spellings of the core's enums are API: TypeScript unions, the README table and
// the tests use exactly these strings. In the order of enum class Code (result.h).
constexpr const char* kCodeNames[] = {
    "invalid_name",      "invalid_argument",     "not_found",        "already_exists", "symlink_refused",
    "not_directory",     "not_regular_file",     "hardlink_refused", "owner_mismatch", "mode_mismatch",
    "acl_present",       "acl_malformed",        "acl_denied",       "acl_io_error",   "acl_unknown",
    "identity_mismatch", "permission_denied",    "lock_busy",        "not_utf8",       "network_unsupported",
    "insecure_ancestor", "identity_unavailable", "too_large",        "closed",         "io_error",
};
static_assert(std::size(kCodeNames) == static_cast<std::size_t>(Code::io_error) + 1, "kCodeNames names every Code");

// In the order of enum class EntryType (platform.h).
constexpr const char* kEntryTypeNames[] = {"file",   "directory",   "symlink",      "fifo",
                                           "socket", "char_device", "block_device", "unknown"};
static_assert(std::size(kEntryTypeNames) == static_cast<std::size_t>(EntryType::unknown) + 1,
              "kEntryTypeNames names every EntryType");

// In the order of enum class Attribute (result.h).
constexpr const char* kAttributeNames[] = {"", "access_acl", "default_acl"};

template <class Enum, std::size_t N>
const char* name_in(const char* const (&names)[N], Enum value, const char* fallback) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : fallback;
}
}  // namespace

bool is_valid_name_posix(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

bool is_valid_name_windows(std::string_view name) noexcept {
  if (!is_valid_name_posix(name)) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || std::strchr("\\:*?\"<>|", c) != nullptr) return false;
  }
  if (name.back() == '.' || name.back() == ' ') return false;
  return !is_reserved_dos_name(name);
}

bool is_valid_name(std::string_view name) noexcept {
#if defined(_WIN32)
  return is_valid_name_windows(name);
#else
  return is_valid_name_posix(name);
#endif
}

bool is_valid_utf8(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    unsigned int min = 0;
    unsigned int cp = 0;
    if ((lead & 0xE0) == 0xC0) {
      extra = 1, min = 0x80, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, min = 0x800, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, min = 0x10000, cp = lead & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

std::string staging_name(std::string_view target, std::uint64_t random) {
  std::uint32_t digest = 2166136261u;
  for (char c : target) {
    digest ^= static_cast<unsigned char>(c);
    digest *= 16777619u;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, ".gjc-tmp-%08lx%08lx", static_cast<unsigned long>(digest),
                static_cast<unsigned long>(random & 0xffffffffu));
  return buf;
}

const char* code_name(Code code) noexcept { return name_in(kCodeNames, code, "io_error"); }

Code code_of_errno(int error) noexcept {
  switch (error) {
    case ENOENT:
      return Code::not_found;
    case EEXIST:
      return Code::already_exists;
    case ELOOP:
      return Code::symlink_refused;
    case ENOTDIR:
      return Code::not_directory;
    case EISDIR:
    case ENXIO:
      return Code::not_regular_file;
    case EACCES:
    case EPERM:
      return Code::permission_denied;
    case ENAMETOOLONG:
      return Code::invalid_name;
    default:
      return Code::io_error;
  }
}

const char* attribute_name(Attribute attribute) noexcept { return name_in(kAttributeNames, attribute, ""); }

const char* entry_type_name(EntryType type) noexcept { return name_in(kEntryTypeNames, type, "unknown"); }

}  // namespace gjc
