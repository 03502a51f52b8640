# Sourced by the Windows scripts: installs a missing tool from Debian's mirrors.
# apt_need <command> <package>...: returns 0 when <command> is (now) on PATH, 1 when it is
# missing and cannot be installed (not root, or apt-get failed); the caller decides whether
# that is an error or a reason to skip.
apt_need() {
  local command="$1"
  shift
  command -v "$command" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$* is missing and installing it needs root" >&2
    return 1
  fi
  echo "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "${APT_NEED_UPDATED:-}" ]; then
    apt-get update -qq || return 1
    APT_NEED_UPDATED=1
  fi
  apt-get install -y -qq "$@" >/dev/null || return 1
  command -v "$command" >/dev/null 2>&1
}
