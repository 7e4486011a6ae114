#!/bin/sh
# Sessions of the server take their environment and secrets from the
# client that asks for them (issue 17): two `new -d` with a different TZ,
# LANG and [secret] from_env value each see their own, not those of the
# client that started the server; a client without the secret's variable
# gets no secret even though the server's starter had it. Neither the
# server's environment nor a confdiff of another client's session knows
# the starter's secret; a session's default shell is its client's SHELL;
# NO_COLOR is each terminal's.
set -u
. "$(dirname "$0")/lib.sh"
export HOME="$T/home"
mkdir -p "$HOME/.amxenvcfg"
chmod 755 "$HOME"

cat >"$XDG_CONFIG_HOME/agentmux/config" <<'CONF'
[secret k]
env = AMX_K
from_env = AMX_ENV_SECRET
host = 127.0.0.1

[agent envtest]
command = sh
secret = k
config_dir = ~/.amxenvcfg
CONF

for p in a b c; do
	mkdir -p "$T/$p" &&
	(cd "$T/$p" && git init -q . && git config user.email t@x &&
		git config user.name t && echo hi >README && git add README &&
		git commit -qm init) || fail "git init $p"
done
# new_env DIR ENV...: `agentmux new -d` in DIR with ENV; the session writes
# what it sees to DIR/env.out, its number to DIR/id, and both clients'
# secret values to its config dir (for the confdiff below).
new_env() {
	_d=$1
	shift
	(cd "$_d" && env "$@" timeout 20 "$AGENTMUX" new -d -a envtest -- sh -c \
		'echo "said alpha-client-one and beta-client-two" >~/.amxenvcfg/said
		echo "TZ=${TZ-unset} LANG=${LANG-unset} K=${AMX_K:+set}" >env.out; sleep 60' \
		>"$_d/id") || fail "new -d in $_d failed"
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
new_env "$T/a" NO_COLOR=1 TZ=Zone/A LANG=C.UTF-8 AMX_ENV_SECRET=alpha-client-one AMX_OTHER_KEY=sk-other
new_env "$T/b" TZ=Zone/B LANG=POSIX AMX_ENV_SECRET=beta-client-two
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
# needs: not the other variables of that client, which may hold secrets,
# nor its [secret]'s from_env variable.
sp=$(server_pid)
[ -n "$sp" ] || fail "no server pid"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q '^AMX_OTHER_KEY=' &&
	fail "the server's environment keeps its first client's variables"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q 'sk-other' &&
	fail "the server's environment memory still shows its first client's variable"
tr '\0' '\n' <"/proc/$sp/environ" | grep -q 'AMX_ENV_SECRET\|alpha-client-one' &&
	fail "the server's environment keeps its first client's secret"
echo "env: the server's own environment keeps no variable of its first client it does not need"

# The dashboard's config diff of session b (prefix g), from a terminal
# without the secret's variable: b's value redacted, a's unknown to it.
start_dashboard attach -t "$(cat "$T/b/id")"
wait_for "$(cat "$T/b/id"):envtest\*" || fail "no dashboard on session b"
prefix g
wait_for 'said ' || fail "no config diff of session b"
scr | grep -q 'said alpha-client-one and \[REDACTED\]' ||
	fail "session b's config diff does not redact b's value and only that"
echo "env: a session's config diff redacts its own client's secret, not the server starter's"

# NO_COLOR is the terminal's: the server was started by a client with it;
# a client without it sees colour, and one with it again none.
prefix d
wait_for 'DASHBOARD-EXITED-0' || fail "prefix d did not detach"
# colored: the screen shows a colour of its own (not 39/49, the default).
colored() {
	tmux -L "$SOCK" capture-pane -e -p -t 0 |
		grep -Eq "$(printf '\033')\\[([0-9;]*;)?(3[0-8]|4[0-8])[;m]"
}
# start_dashboard_env ENV...: agentmux attach in this test's tmux pane, respawned with ENV (-e NAME=VALUE).
start_dashboard_env() {
	tmux -L "$SOCK" respawn-pane -k -t 0 -c "$P" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
		-e "TERM=xterm-256color" -e "HOME=$HOME" "$@" \
		"$AGENTMUX attach; echo DASHBOARD-EXITED-\$?; sleep 60" ||
		fail "tmux could not start agentmux"
	wait_for 'envtest' || fail "no dashboard"
	sleep 0.5
}
start_dashboard_env -e NO_COLOR=
colored || fail "a client without NO_COLOR is drawn without colour (the server starter's)"
prefix d
wait_for 'DASHBOARD-EXITED-0' || fail "prefix d did not detach"
start_dashboard_env -e NO_COLOR=1
colored && fail "a client with NO_COLOR is drawn in colour"
prefix d
wait_for 'DASHBOARD-EXITED-0' || fail "prefix d did not detach"
echo "env: NO_COLOR is each client's"

# A session with no command runs its own client's SHELL.
for sh in /bin/bash /bin/sh; do
	d=$T/sh$(basename "$sh")
	mkdir -p "$d" && git -C "$d" init -q || fail "git init $d"
	id=$(cd "$d" && SHELL=$sh timeout 20 "$AGENTMUX" new -d) || fail "new -d with SHELL=$sh failed"
	timeout 10 "$AGENTMUX" send -l "$id" 'readlink /proc/$$/exe >shell.out' >/dev/null ||
		fail "send to $id failed"
	timeout 10 "$AGENTMUX" send "$id" Enter >/dev/null || fail "send Enter to $id failed"
	wait_file "$d/shell.out"
	want=$(readlink -f "$sh")
	[ "$(cat "$d/shell.out")" = "$want" ] ||
		fail "SHELL=$sh: the session runs $(cat "$d/shell.out"), not $want"
done
echo "env: a session's default shell is its own client's SHELL"

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
