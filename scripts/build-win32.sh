#!/usr/bin/env bash
# Cross-compiles the whole addon for win32-x64 with mingw-w64 and writes it where
# node-gyp-build looks for it: prebuilds/win32-x64/gjc-session-store.node.
#
# Same CMakeLists.txt (and so the same binding.gyp source list) as `npm run build:cmake`,
# configured by hand because cmake-js only targets the machine it runs on: the Node-API
# headers come from node-api-headers, node-addon-api from its package, and the import
# library for node.exe is made from node-api-headers' node_api.def with dlltool.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/need-tool.sh
. scripts/need-tool.sh
need_tool x86_64-w64-mingw32-g++-posix g++-mingw-w64-x86-64 || { echo "build-win32: FAILED: no mingw-w64" >&2; exit 1; }
need_tool cmake cmake || { echo "build-win32: FAILED: no cmake" >&2; exit 1; }

out="${BUILD_WIN32_DIR:-build-win32}"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
napi_include="$(node -p "require('node-api-headers').include_dir")"
addon_api_include="$(node -p "require('path').resolve(require('node-addon-api').include_dir)")"
node_api_def="$(node -p "require('node-api-headers').def_paths.node_api_def")"
mkdir -p "$out"
implib="$(cd "$out" && pwd)/libnode_api.a"

cmake -S . -B "$out" "${generator[@]}" \
  -DCMAKE_SYSTEM_NAME=Windows \
  -DCMAKE_SYSTEM_PROCESSOR=x86_64 \
  -DCMAKE_CXX_COMPILER=x86_64-w64-mingw32-g++-posix \
  -DCMAKE_RC_COMPILER=x86_64-w64-mingw32-windres \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$(cd "$out" && pwd)/Release" \
  -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$(cd "$out" && pwd)/Release" \
  "-DCMAKE_JS_INC=$napi_include;$addon_api_include" \
  -DCMAKE_JS_NODELIB_DEF="$node_api_def" \
  -DCMAKE_JS_NODELIB_TARGET="$implib" \
  -DCMAKE_JS_LIB="$implib" \
  -DCMAKE_CXX_FLAGS="-Werror"
cmake --build "$out"

built="$out/Release/gjc_session_store.node"
[ -f "$built" ] || { echo "build-win32: FAILED: $built was not produced" >&2; exit 1; }
x86_64-w64-mingw32-strip "$built"
mkdir -p prebuilds/win32-x64
cp "$built" prebuilds/win32-x64/gjc-session-store.node
# Only Windows system DLLs and node.exe may be imported; a mingw runtime DLL would be
# missing on every user's machine.
imports="$(x86_64-w64-mingw32-objdump -p prebuilds/win32-x64/gjc-session-store.node | sed -n 's/^\s*DLL Name: //p' | sort -u)"
echo "build-win32: imports: $(echo "$imports" | tr '\n' ' ')"
if echo "$imports" | grep -qiE 'libstdc|libgcc|winpthread'; then
  echo "build-win32: FAILED: the addon imports a mingw runtime DLL" >&2
  exit 1
fi
echo "build-win32: wrote prebuilds/win32-x64/gjc-session-store.node"
