#!/usr/bin/env bash
# Cross-compiles native/core for Windows with Debian's mingw-w64 so the Windows code at
# least compiles (warnings are errors) and links on every change. The file list is the
# win branch of binding.gyp (through scripts/gyp-sources.cjs), minus native/binding/,
# which needs the Node headers (scripts/build-win32.sh builds the whole addon). The link
# target is test/build/win32_core_check.cc, so every core symbol must resolve.
#
# Needs g++-mingw-w64-x86-64 (.ci/run installs it; this script installs nothing). Exits
# non-zero, loudly, on any compile or link error or a missing compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh
# The posix-threads flavour: node-addon-api's headers need std::mutex (scripts/build-win32.sh
# uses the same compiler, so both see one toolchain).
CXX=x86_64-w64-mingw32-g++-posix
if ! need_tool "$CXX" g++-mingw-w64-x86-64; then
  echo "check-windows: FAILED: no mingw-w64 compiler" >&2
  exit 1
fi

mapfile -t sources < <(node scripts/gyp-sources.cjs win sources | grep '^native/core/')
if [ "${#sources[@]}" -eq 0 ]; then
  echo "check-windows: binding.gyp lists no native/core sources for win" >&2
  exit 1
fi
for required in native/core/win32/walk.cc native/core/win32/security.cc; do
  if ! printf '%s\n' "${sources[@]}" | grep -qx "$required"; then
    echo "check-windows: binding.gyp's win sources lack $required" >&2
    exit 1
  fi
done

if [ -n "${CHECK_WINDOWS_OUT:-}" ]; then
  out="$CHECK_WINDOWS_OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
flags=(-std=c++17 -Wall -Wextra -Werror -O1 -DUNICODE -D_UNICODE)
objects=()
status=0
for src in "${sources[@]}" test/build/win32_core_check.cc; do
  obj="$out/$(echo "$src" | tr '/' '_').o"
  if ! "$CXX" "${flags[@]}" -c "$src" -o "$obj"; then
    echo "check-windows: FAILED to compile $src" >&2
    status=1
  fi
  objects+=("$obj")
done
if [ "$status" -ne 0 ]; then
  echo "check-windows: Windows compile FAILED" >&2
  exit 1
fi
if ! "$CXX" -static -o "$out/win32_core_check.exe" "${objects[@]}" -ladvapi32; then
  echo "check-windows: Windows link FAILED" >&2
  exit 1
fi
echo "check-windows: ${#sources[@]} native/core files compiled and linked for win32-x64"
