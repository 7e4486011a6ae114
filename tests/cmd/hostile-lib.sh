# Shared by the hostile-agent tests (sourced): names and requests a hostile
# agent makes, the check that output holds no control character, and
# running a test script again as a throwaway unprivileged user.

# The names: OSC 52 (clipboard) and OSC 2 (title), CSI as a C1 control in
# UTF-8 (U+009B) and as one raw byte (0x9b, not UTF-8), a right-to-left
# override (U+202E).
HOSTILE_OSC=$(printf 'f\033]52;c;cHduZWQ=\007\033]2;PWNED\007')
HOSTILE_C1=$(printf 'c1\302\2332J')
HOSTILE_BIDI=$(printf 'bidi\342\200\256txt.exe')

# What the agent does, as a script for sh inside the jail: hostile file
# names in the project, hostile content in a tracked file, a nested
# repository with a hostile name and a new hook (an event names it), a
# file with a hostile name in its config dir (confdiff), and requests
# with a bidi and a C1 character in the path and a header. Its own output
# goes nowhere: this is about what agentmux prints.
hostile_agent_script() {
	cat <<'EOF'
exec >/dev/null 2>&1
OSC=$(printf 'f\033]52;c;cHduZWQ=\007\033]2;PWNED\007')
: >"$OSC"
: >"$(printf 'c1\302\2332J')"
: >"$(printf 'raw\2332J')"
: >"$(printf 'bidi\342\200\256txt.exe')"
printf 'content \033]2;PWNED\007 \302\233\062J\n' >>README
mkdir -p "n$OSC" && git -C "n$OSC" init -q &&
    printf '#!/bin/sh\n' >"n$OSC/.git/hooks/post-checkout"
[ -d "$HOME/.hostile" ] && printf 'x \033]52;c;Y2xpcA==\007\n' >"$HOME/.hostile/$OSC"
/usr/bin/python3 - <<'PY'
import os, socket
port = int(os.environ["HTTP_PROXY"].rstrip("/").rsplit(":", 1)[1])
for path in (b"/p\xe2\x80\xaeq\xc2\x9b2J", b"/ok\xc2\x85"):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"GET http://evil.test" + path + b" HTTP/1.1\r\nHost: evil.test\r\n"
              b"X-A: v\xc2\x9b2J\xe2\x80\xae\r\nConnection: close\r\n\r\n")
    while s.recv(4096):
        pass
    s.close()
PY
EOF
}

# Fails unless FILE is UTF-8 without a control (C0 but newline and tab, CR
# only before LF, DEL, C1), bidi or invisible character. Prints why.
hostile_clean() {
	python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("not UTF-8: %s" % e)
bad = set(range(0x20)) - {0x09, 0x0a}
bad |= set(range(0x7f, 0xa0))
bad |= set(range(0x200b, 0x2010)) | set(range(0x2028, 0x202f))
bad |= set(range(0x2060, 0x2070)) | {0xfeff}
for i, c in enumerate(text):
    if c == "\r" and text[i + 1:i + 2] == "\n":
        continue
    if ord(c) in bad:
        sys.exit("U+%04X at offset %d: %r" % (ord(c), i, text[max(0, i - 30):i + 30]))
PY
}

# Runs SCRIPT (with HOSTILE_LIB, this file, beside it) with --as-user as a user made for
# the occasion and deleted after, with the binary and share dir staged
# where that user can read them; returns its status, 0 when not root.
as_throwaway_user() {
	if [ -n "${AMX_NO_USER:-}" ]; then
		echo "the unprivileged pass: not run (AMX_NO_USER is set; CI's sanitizer pass runs the root pass alone)"
		return 0
	fi
	if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null ||
	    ! command -v setpriv >/dev/null; then
		echo "SKIP: the unprivileged pass needs root, useradd and setpriv"
		return 0
	fi
	u="amxh$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	stage=$(mktemp -d /tmp/amx-hostile-stage.XXXXXX) || return 1
	mkdir -p "$stage/bin"
	cp "$AGENTMUX" "$stage/bin/agentmux"
	# (and the whole program it runs, beside it)
	cp "${AGENTMUX%/*}/agentmux-full" "$stage/bin/agentmux-full"
	cp -r "${AGENTMUX_SHARE:?}" "$stage/share"
	cp "$1" "${HOSTILE_LIB:?}" "$stage/"
	chmod -R a+rX "$stage"
	chmod 755 "$stage"
	useradd -M -N -d /nonexistent -s /bin/sh "$u" || return 1
	rc=0
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
	    env -i PATH="$PATH" AGENTMUX="$stage/bin/agentmux" \
	    AGENTMUX_SHARE="$stage/share" TMPDIR=/tmp WHO=user \
	    bash "$stage/$(basename "$1")" --as-user || rc=1
	userdel "$u" 2>/dev/null
	rm -rf "$stage"
	return $rc
}
