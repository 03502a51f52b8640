# Sourced by the scripts that run the packed tarball as a user would, under a runtime or in a
# userland that is not this machine's (scripts/smoke-musl.sh, smoke-arm64.sh, smoke-old-glibc.sh).

# consumer_path <dir> <runtime> [<launcher>...]: makes <dir> a PATH folder in which `node` is
# <runtime> (started by <launcher>..., a loader or an emulator, when given; named `node` either
# way, which Bun needs to act as Node), npm runs on it, and besides them only the tools
# scripts/check-*.sh use: no compiler, make or Python.
consumer_path() {
  local dir="$1" runtime="$2"
  shift 2
  mkdir -p "$dir/.runtime"
  ln -s "$runtime" "$dir/.runtime/node"
  if [ "$#" -eq 0 ]; then
    ln -s "$dir/.runtime/node" "$dir/node"
  else
    printf '#!/bin/sh\nexec %s %q "$@"\n' "${*@Q}" "$dir/.runtime/node" >"$dir/node"
    chmod +x "$dir/node"
  fi
  local tool
  for tool in sh grep cat rm mktemp; do ln -s "$(command -v "$tool")" "$dir/$tool"; done
  local npm_cli
  npm_cli="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)/bin/npm-cli.js"
  [ -f "$npm_cli" ] || { echo "no npm-cli.js beside this machine's npm" >&2; return 1; }
  printf '#!/bin/sh\nexec node %q "$@"\n' "$npm_cli" >"$dir/npm"
  chmod +x "$dir/npm"
}

# consumer_project <dir> <tarball>: a consumer project holding the smoke script
# (test/package/smoke.mjs), with the tarball installed by this machine's npm, install scripts
# off; says why and returns 1 when the install fails or compiles a build/.
consumer_project() {
  local dir="$1" tarball="$2"
  mkdir "$dir"
  echo '{ "name": "consumer", "private": true, "type": "module" }' >"$dir/package.json"
  cp test/package/smoke.mjs "$dir/"
  (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --prefer-offline --silent "$tarball") \
    || { echo "npm install of $tarball failed" >&2; return 1; }
  [ ! -e "$dir/node_modules/gjc-session-store/build" ] || { echo "the install compiled a build/" >&2; return 1; }
}
