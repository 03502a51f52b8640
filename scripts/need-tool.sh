# Sourced by the build scripts: checks that a tool is on PATH, never installs it (`.ci/run`
# installs what CI needs; a script run by `npm pack` or a test must not change the system).
# need_tool <command> <package>...: returns 0 when <command> is on PATH; otherwise says which
# Debian packages provide it and returns 1, and the caller decides whether that is an error or
# a reason to skip.
need_tool() {
  local command="$1"
  shift
  command -v "$command" >/dev/null 2>&1 && return 0
  echo "$command is missing (Debian packages: $*; .ci/run installs them)" >&2
  return 1
}
