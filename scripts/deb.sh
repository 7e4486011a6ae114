#!/bin/sh
# Builds the Debian package from the committed tree in a scratch copy (so
# nothing lands beside the checkout), then runs lintian: any error fails.
# Usage: scripts/deb.sh OUTDIR   (the .deb and lintian's report go there)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/deb.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/agentmux-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/agentmux"
# The tree as committed plus what is changed but not yet committed.
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
	(cd "$src" && xargs -0 cp --parents -t "$work/agentmux")
(cd "$work/agentmux" && dpkg-buildpackage -us -uc -b >"$out/dpkg-buildpackage.log" 2>&1) ||
	{ tail -40 "$out/dpkg-buildpackage.log"; echo "deb: dpkg-buildpackage failed (see $out/dpkg-buildpackage.log)"; exit 1; }
rm -f "$out"/agentmux_*.deb
mv "$work"/agentmux_*.deb "$out"/
lintian --fail-on error "$out"/agentmux_*.deb >"$out/lintian.log" 2>&1 ||
	{ cat "$out/lintian.log"; echo "deb: lintian reports errors"; exit 1; }
cat "$out/lintian.log"
echo "deb: $(ls "$out"/agentmux_*.deb)"
