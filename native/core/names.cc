#include "names.h"

#include <cctype>
#include <cstdio>
#include <cstring>

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
    if ((equals_ignore_case(prefix, "com") || equals_ignore_case(prefix, "lpt")) &&
        is_device_digit(stem.substr(3))) {
      return true;
    }
  }
  return false;
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

}  // namespace gjc
