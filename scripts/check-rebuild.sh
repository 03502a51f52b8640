#!/bin/sh
# `npm rebuild gjc-session-store` in the consumer project it is started in, with whichever `node`
# and `npm` PATH gives and no compiler on it: the package's install script must run, find the
# prebuild for this runtime and compile nothing (with no compiler a compile could only fail, and
# would leave a build/). POSIX sh, so it also runs inside the Debian 11 root
# (scripts/smoke-old-glibc.sh) besides under the musl runtime (scripts/smoke-musl.sh).
# Prints "check npm rebuild: passed", or npm's output and "check npm rebuild: FAILED: <why>"
# (scripts/runtimes.sh counts these lines); exits non-zero on failure.
log="${TMPDIR:-/tmp}/gjc-rebuild.$$.log"
for tool in cc gcc g++ c++ clang make python3 python; do
  if command -v "$tool" >/dev/null 2>&1; then
    echo "check npm rebuild: FAILED: $tool is on PATH, so a compile would not show"
    exit 1
  fi
done
if ! npm rebuild gjc-session-store --foreground-scripts --no-audit --no-fund >"$log" 2>&1; then
  why="the install script failed"
elif ! grep -q '^> gjc-session-store@.* install$' "$log"; then
  why="the install script did not run"
elif [ -e node_modules/gjc-session-store/build ]; then
  why="the install script compiled a build/"
else
  rm -f "$log"
  echo "check npm rebuild: passed (the install script ran and compiled nothing)"
  exit 0
fi
cat "$log"
rm -f "$log"
echo "check npm rebuild: FAILED: $why"
exit 1
