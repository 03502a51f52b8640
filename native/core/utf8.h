// UTF-8 validation for paths the OS hands back (identity, canonical paths): JS strings
// cannot hold arbitrary bytes, so a non-UTF-8 path must be refused rather than mangled.
#pragma once

#include <string_view>

namespace gjc {

// True for well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view text) noexcept;

}  // namespace gjc
