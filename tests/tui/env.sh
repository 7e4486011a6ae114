#!/bin/sh
# Sessions of the server take their environment and secrets from the
# client that asks for them (issue 17): two `new -d` with a different TZ,
# LANG and [secret] from_env value each see their own, not those of the
# client that started the server; a client without the secret's variable
# gets no secret even though the server's starter had it.
set -u
. "$(dirname "$0")/lib.sh"

cat >"$XDG_CONFIG_HOME/agentmux/config" <<'CONF'
[secret k]
env = AMX_K
from_env = AMX_ENV_SECRET
host = 127.0.0.1

[agent envtest]
command = sh
secret = k
CONF

for p in a b c; do
	mkdir -p "$T/$p" &&
	(cd "$T/$p" && git init -q . && git config user.email t@x &&
		git config user.name t && echo hi >README && git add README &&
		git commit -qm init) || fail "git init $p"
done
# new_env DIR ENV...: `agentmux new -d` in DIR with ENV; the session writes
# what it sees to DIR/env.out.
new_env() {
	_d=$1
	shift
	(cd "$_d" && env "$@" timeout 20 "$AGENTMUX" new -d -a envtest -- sh -c \
		'echo "TZ=${TZ-unset} LANG=${LANG-unset} K=${AMX_K:+set}" >env.out; sleep 60' \
		>/dev/null) || fail "new -d in $_d failed"
}
wait_file() {
	_i=0
	while [ ! -s "$1" ] && [ $_i -lt 200 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	[ -s "$1" ] || fail "$1 was not written"
}

# The first client starts the server: its environment is the server's.
new_env "$T/a" TZ=Zone/A LANG=C.UTF-8 AMX_ENV_SECRET=sk-A AMX_OTHER_KEY=sk-other
new_env "$T/b" TZ=Zone/B LANG=POSIX AMX_ENV_SECRET=sk-B
new_env "$T/c" -u AMX_ENV_SECRET TZ=Zone/C LANG=POSIX
for p in a b c; do wait_file "$T/$p/env.out"; done

grep -qx 'TZ=Zone/A LANG=C.UTF-8 K=set' "$T/a/env.out" ||
	fail "session a does not see its client's environment: $(cat "$T/a/env.out")"
grep -qx 'TZ=Zone/B LANG=POSIX K=set' "$T/b/env.out" ||
	fail "session b sees the first client's environment, not its own: $(cat "$T/b/env.out")"
grep -qx 'TZ=Zone/C LANG=POSIX K=' "$T/c/env.out" ||
	fail "session c (no secret variable) got the first client's secret: $(cat "$T/c/env.out")"
echo "env: each session has its own client's TZ, LANG and secret"

# The server's own environment (its first client's) keeps only what it
# needs: not the other variables of that client, which may hold secrets.
# (A [secret]'s from_env variable stays for now: the dashboard's diffs
# redact its value from the environment.)
sp=$(server_pid)
[ -n "$sp" ] || fail "no server pid"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q '^AMX_OTHER_KEY=' &&
	fail "the server's environment keeps its first client's variables"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q 'sk-other' &&
	fail "the server's environment memory still shows its first client's variable"
echo "env: the server's own environment keeps no variable of its first client it does not need"

# ---- reload: the config file read again for new sessions ----
cfg="$XDG_CONFIG_HOME/agentmux/config"
cat >>"$cfg" <<'CONF'

[agent rl]
command = sh
env = AMX_V=one
CONF
# new_rl DIR: a session of agent rl in DIR writes its AMX_V to DIR/rl.out.
new_rl() {
	(cd "$1" && timeout 20 "$AGENTMUX" new -d --shared -a rl -- sh -c \
		'echo "V=${AMX_V-unset}" >rl.out; sleep 60' >/dev/null) ||
		fail "new -d -a rl in $1 failed"
	wait_file "$1/rl.out"
}
out=$(timeout 10 "$AGENTMUX" new -d -a rl -- true 2>&1) &&
	fail "the server knew agent rl before a reload: $out"
out=$(timeout 10 "$AGENTMUX" reload 2>&1) || fail "reload failed: $out"
new_rl "$T/a"
grep -qx 'V=one' "$T/a/rl.out" || fail "after reload: $(cat "$T/a/rl.out")"
sed -i 's/^env = AMX_V=one$/env = AMX_V=two/' "$cfg"
out=$(timeout 10 "$AGENTMUX" reload 2>&1) || fail "reload failed: $out"
new_rl "$T/b"
grep -qx 'V=two' "$T/b/rl.out" || fail "a value changed and reloaded: $(cat "$T/b/rl.out")"
echo "env: reload reads the config again for new sessions"

sed -i 's/^env = AMX_V=two$/env = AMX_V=three/' "$cfg"
printf '[agent broken\n' >>"$cfg"
line=$(wc -l <"$cfg")
out=$(timeout 10 "$AGENTMUX" reload 2>&1) && fail "a malformed config was reloaded: $out"
echo "$out" | grep -q "config:$line" ||
	fail "the refused reload does not name FILE:LINE ($line): $out"
echo "$out" | grep -q "keeps the config it has" || fail "the refusal does not say the old one is kept: $out"
# The file fixed but not reloaded: the server still has the one before.
sed -i '$d' "$cfg"
new_rl "$T/c"
grep -qx 'V=two' "$T/c/rl.out" || fail "after a refused reload: $(cat "$T/c/rl.out")"
echo "env: a malformed config is refused by reload with FILE:LINE, the old one kept"

# ---- config check: does the running server have the file as it is now ----
out=$(timeout 10 "$AGENTMUX" config check 2>&1) || fail "config check failed: $out"
echo "$out" | grep -q "the server runs the config of .*'agentmux reload' to use the file as it is now" ||
	fail "config check does not say the server's config is older than the file: $out"
out=$(timeout 10 "$AGENTMUX" reload 2>&1) || fail "reload failed: $out"
out=$(timeout 10 "$AGENTMUX" config check 2>&1) || fail "config check failed: $out"
echo "$out" | grep -q "the server runs this file as it is now" ||
	fail "config check after reload: $out"
echo "env: config check says whether the server has the file as it is now"

timeout 10 "$AGENTMUX" kill-server >/dev/null 2>&1
exit 0
