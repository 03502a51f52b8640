// Names: entry-name and UTF-8 validation, and the staging name of an atomic write. Pure
// functions: they run before any syscall, on every platform, so the Windows rules are
// testable on Linux and the reverse. names.cc also holds the public spellings of the core's
// enums (declared in result.h and platform.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gjc {

// The longest component we accept, in UTF-8 bytes (Linux NAME_MAX and macOS; Windows allows
// 255 UTF-16 units, which this bound never exceeds).
constexpr std::size_t kMaxNameBytes = 255;

// True when `name` is one safe directory entry under POSIX rules: not empty, not "." or
// "..", no '/', no NUL, at most kMaxNameBytes.
bool is_valid_name_posix(std::string_view name) noexcept;

// The POSIX rules plus Windows': no '\\', no ':*?"<>|' or control characters, no trailing
// dot or space, and no reserved DOS device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9 and the
// superscript-digit forms), with or without an extension, in any letter case.
bool is_valid_name_windows(std::string_view name) noexcept;

bool is_valid_name(std::string_view name) noexcept;  // the rules of this build's platform

// True for well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. A
// path the OS hands back must pass, since JS strings cannot hold arbitrary bytes and a
// non-UTF-8 path is refused rather than mangled.
bool is_valid_utf8(std::string_view text) noexcept;

// The temporary name of an atomic write of `target`: ".gjc-tmp-" and 16 hex digits, the first
// 8 the FNV-1a digest of the target's name and the last 8 from `random`. A fixed length, so a
// 255-byte target still gets one; the digest lets the next writer of that file find the
// temporaries a killed rewrite of it left (the TypeScript `stagingPrefixOf` computes the same).
std::string staging_name(std::string_view target, std::uint64_t random);

}  // namespace gjc
