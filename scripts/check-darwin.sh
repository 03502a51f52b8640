#!/usr/bin/env bash
# Syntax- and type-checks native/core/darwin/ on Linux with -Wall -Wextra -Werror. The few
# macOS-only declarations come from test/build/darwin-shim/ (transcribed from Apple's
# headers), so this catches C++ mistakes, not a mismatch with the real SDK: macOS stays
# "compiled by review only" until a macOS machine builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(node scripts/gyp-sources.cjs mac sources | grep '^native/core/darwin/')
if [ "${#sources[@]}" -eq 0 ]; then
  echo "check-darwin: binding.gyp lists no native/core/darwin sources for mac" >&2
  exit 1
fi
status=0
for src in "${sources[@]}"; do
  if ! g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -isystem test/build/darwin-shim \
      -include test/build/darwin-shim/darwin_shim.h "$src"; then
    echo "check-darwin: FAILED: $src" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || { echo "check-darwin: macOS syntax check FAILED" >&2; exit 1; }
echo "check-darwin: ${#sources[@]} native/core/darwin files pass the syntax check"
