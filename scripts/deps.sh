#!/bin/sh
# Installs the Debian packages agentmux needs to build, run and test; only what is missing.
# Uses sudo when not root. Usage: scripts/deps.sh [--test]
set -eu

build="meson ninja-build pkg-config gcc libc6-dev libncurses-dev libevent-dev
  libssl-dev libseccomp-dev libsqlite3-dev libvterm-dev libhttp-parser-dev
  libinih-dev libjansson-dev libpsl-dev libmnl-dev libnftnl-dev publicsuffix git ca-certificates openssl"
test="libcmocka-dev tmux curl python3 sqlite3 nodejs iproute2 procps util-linux
  clang libclang-rt-14-dev llvm valgrind cppcheck clang-tidy
  mandoc zsh fish bash-completion debhelper dpkg-dev fakeroot lintian vttest
  openssh-server openssh-client hyperfine"

# The agents suite installs the agents with npm; a nodejs that bundles npm
# (NodeSource) has it already, Debian's does not.
command -v npm >/dev/null 2>&1 || test="$test npm"

pkgs=$build
[ "${1:-}" = --test ] && pkgs="$build $test"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "agentmux: installing:$missing" >&2
if [ "$(id -u)" = 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo"
else
	echo "agentmux: need root (or sudo) to install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >&2
# shellcheck disable=SC2086
$sudo apt-get install -y -q $missing >&2
