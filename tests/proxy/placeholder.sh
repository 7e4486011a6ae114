#!/usr/bin/env bash
# Issue 23 item 1: a secret's placeholder is the same in every session of
# one user (agents remember a key they were told to trust by its value),
# different for another secret and for another user, never the real value;
# its key lives 0600 in the data dir, and a link, FIFO, open mode or
# another user's file there is refused and named. Real jails, real binary.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-placeholder.XXXXXX)
chmod 755 "$T"
export HOME=$T/home
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$HOME" "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/proj"
chmod 700 "$XDG_RUNTIME_DIR"
cleanup() {
	[ -n "${TUSER:-}" ] && userdel "$TUSER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" <<<"$1"; }

(cd "$T/proj" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hi >README && git add README && git commit -qm init) || exit 1
# Two secrets with the same value: each its own placeholder.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<'CONF'
[secret one]
env = K1
from_env = AMX_PH_KEY
host = api.example.com
header = x-api-key

[secret two]
env = K2
from_env = AMX_PH_KEY
host = api.example.com
header = x-api-key

[agent ph]
command = sh
secret = one
secret = two
CONF
export AMX_PH_KEY=sk-ant-api03-Real0Value1That2Stays3Outside4TheJail5
KEYFILE=$XDG_DATA_HOME/agentmux/placeholder.key

# Prints "K1 K2" as the jail sees them; RC and the whole output in OUT.
jail_keys() {
	OUT=$(cd "$T/proj" && timeout 120 "$AMX" run --on-unknown deny -a ph -- \
		sh -c 'printf "%s %s\n" "$K1" "$K2"; cat "$0" 2>&1 | head -c 200' "$KEYFILE" </dev/null 2>&1)
	RC=$?
}

jail_keys
first=$(head -n 1 <<<"$OUT")
read -r a1 b1 <<<"$first"
[ "$RC" = 0 ] && [ -n "$a1" ] && [ -n "$b1" ] && ok "a session gets placeholders" ||
	{ bad "first session: exit $RC: $OUT"; exit 1; }
has "$OUT" "$AMX_PH_KEY" && bad "the real value reached the jail: $OUT"
has "$OUT" "${AMX_PH_KEY:13:20}" && bad "part of the real value reached the jail: $OUT"
case $a1 in sk-ant-api03-*) ok "the placeholder keeps the key's harmless prefix" ;;
*) bad "placeholder shape: $a1" ;; esac
[ "$a1" != "$b1" ] && ok "another secret gets another placeholder" || bad "two secrets, one placeholder: $a1"
key=$(cat "$KEYFILE" 2>/dev/null)
[ -n "$key" ] && ! has "$OUT" "$key" && ok "the jail cannot read the placeholder key" ||
	bad "the key file is missing or the jail read it: $OUT"
[ "$(stat -c %a:%u:%F "$KEYFILE")" = "600:$(id -u):regular file" ] &&
	ok "the key file is a 0600 regular file of the user's" || bad "key file: $(stat -c %a:%u:%F "$KEYFILE")"

jail_keys
read -r a2 b2 <<<"$(head -n 1 <<<"$OUT")"
[ "$a2 $b2" = "$a1 $b1" ] && ok "the next session sees the same placeholders" ||
	bad "placeholders changed between sessions: $a1 $b1 / $a2 $b2"

# Another value of the same secret: another placeholder.
AMX_PH_KEY=sk-ant-api03-Another0Value1That2Stays3Outside4TheJail jail_keys
read -r a3 _ <<<"$(head -n 1 <<<"$OUT")"
[ -n "$a3" ] && [ "$a3" != "$a1" ] && ok "another value gets another placeholder" || bad "new value: $a3 / $a1"

# Hostile files in the key's place: refused, named, and nothing runs.
refused() { # WHAT EXPECTED-TEXT
	jail_keys
	if [ "$RC" != 0 ] && has "$OUT" "$KEYFILE" && has "$OUT" "$2" && ! has "$OUT" "sk-ant-"; then
		ok "refused: $1"
	else
		bad "$1 was not refused: exit $RC: $OUT"
	fi
}
mv "$KEYFILE" "$T/key.saved"
ln -s "$T/key.saved" "$KEYFILE"
refused "a symlink in the key's place" "symbolic link"
rm -f "$KEYFILE"
mkfifo -m 600 "$KEYFILE"
refused "a FIFO in the key's place" "not a regular file"
rm -f "$KEYFILE"
cp "$T/key.saved" "$KEYFILE" && chmod 644 "$KEYFILE"
refused "a key open to others" "mode 0644"
if [ "$(id -u)" = 0 ]; then
	chmod 600 "$KEYFILE" && chown 65534 "$KEYFILE"
	refused "another user's key file" "owned by uid 65534"
fi
rm -f "$KEYFILE"
cp "$T/key.saved" "$KEYFILE" && chmod 600 "$KEYFILE"
jail_keys
read -r a4 _ <<<"$(head -n 1 <<<"$OUT")"
[ "$a4" = "$a1" ] && ok "the restored key gives the same placeholder" || bad "restored key: $a4 / $a1"

# Another user, the same secret and value: another placeholder.
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	TUSER="amxph$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	if useradd -M -N -d "$T/uhome" -s /bin/sh "$TUSER"; then
		U=$T/u
		mkdir -p "$T/uhome" "$U/config/agentmux" "$U/data" "$U/run" "$U/proj" "$T/stage/bin"
		cp "$XDG_CONFIG_HOME/agentmux/config" "$U/config/agentmux/config"
		(cd "$U/proj" && git init -q . && git config user.email t@x && git config user.name t &&
			echo hi >README && git add README && git commit -qm init)
		chown -R "$TUSER" "$T/uhome" "$U"
		chmod 700 "$U/run"
		# (the whole program the front runs goes beside it)
		cp "$AMX" "$T/stage/bin/agentmux" &&
			cp "${AMX%/*}/agentmux-full" "$T/stage/bin/agentmux-full" &&
			cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share" &&
			chmod -R a+rX "$T/stage"
		uout=$(cd "$U/proj" && env -i PATH="$PATH" HOME="$T/uhome" XDG_CONFIG_HOME="$U/config" \
			XDG_DATA_HOME="$U/data" XDG_RUNTIME_DIR="$U/run" AGENTMUX_SHARE="$T/stage/share" \
			AMX_PH_KEY="$AMX_PH_KEY" timeout 120 setpriv --reuid="$TUSER" --regid="$(id -g "$TUSER")" \
			--init-groups "$T/stage/bin/agentmux" run --on-unknown deny -a ph -- \
			sh -c 'printf "%s\n" "$K1"' </dev/null 2>&1)
		u1=$(head -n 1 <<<"$uout")
		if has "$uout" "user namespace"; then
			echo "skip: unprivileged user namespaces are not available: $uout"
		elif case $u1 in sk-ant-api03-*) true ;; *) false ;; esac && [ "$u1" != "$a1" ] &&
			! has "$uout" "$AMX_PH_KEY"; then
			ok "another user gets another placeholder"
			[ "$(stat -c %U:%a "$U/data/agentmux/placeholder.key")" = "$TUSER:600" ] &&
				ok "another user's key is its own, 0600" ||
				bad "another user's key: $(stat -c %U:%a "$U/data/agentmux/placeholder.key")"
		else
			bad "another user: $uout (root's: $a1)"
		fi
	fi
fi

echo "$fails failed"
[ "$fails" = 0 ]
