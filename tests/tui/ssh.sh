#!/bin/sh
# `ssh -t ... agentmux attach` through a real OpenSSH server on a loopback
# port (set up as tests/proxy/ssh-tunnel.sh does: a throwaway user, key
# only), in a real tmux window: the dashboard is drawn on the ssh
# session's terminal, a typed command runs in the jailed pane, prefix d
# detaches, and a lost connection detaches too (the session keeps running).
set -u
. "$(dirname "$0")/lib.sh"
SSHD=/usr/sbin/sshd
[ "$(id -u)" = 0 ] || { echo "SKIP: starting sshd for a throwaway user needs root"; exit 77; }
for t in "$SSHD" ssh ssh-keygen python3 useradd userdel; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

SSHD_PID="" U="" MADE_PRIVSEP=""
cleanup_ssh() {
	[ -n "$SSHD_PID" ] && { kill "$SSHD_PID" 2>/dev/null; wait "$SSHD_PID" 2>/dev/null; }
	cleanup
	[ -n "$U" ] && userdel "$U" 2>/dev/null
	[ -n "$MADE_PRIVSEP" ] && rmdir /run/sshd 2>/dev/null
}
trap cleanup_ssh EXIT

# The user who logs in, with agentmux, its profiles, a project and XDG dirs of its own.
U=amxssh$$
W=$T/user
useradd -M -d "$W/home" -s /bin/sh -p '*' "$U" || { U=""; echo "SKIP: useradd failed"; exit 77; }
mkdir -p "$W/bin" "$W/config/agentmux" "$W/data" "$W/run" "$W/state" "$W/home/.ssh" "$W/proj"
cp "$AGENTMUX" "$W/bin/agentmux"
# (and the whole program it runs, beside it)
cp "${AGENTMUX%/*}/agentmux-full" "$W/bin/agentmux-full"
cp -r "$AGENTMUX_SHARE" "$W/share"
chmod 700 "$W/run"
(cd "$W/proj" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hi >README && git add README && git commit -qm init) || fail "no project for the user"
ssh-keygen -q -t ed25519 -N '' -C amx-hostkey -f "$T/hostkey" || fail "no host key"
ssh-keygen -q -t ed25519 -N '' -C amx-client -f "$T/id_test" || fail "no client key"
cp "$T/id_test.pub" "$W/home/.ssh/authorized_keys"
chown -R "$U:$(id -g "$U")" "$W"
chmod -R a+rX "$W/bin" "$W/share"
[ -d /run/sshd ] || { mkdir -m 755 /run/sshd && MADE_PRIVSEP=1; }

. "$(dirname "$0")/../lib/sshd.sh"
sshd_start "$T/sshd_config" "$T/hostkey" "$U" "$W/home/.ssh/authorized_keys" "$T/sshd.log"
[ -n "$SSHD_PID" ] || fail "sshd did not start: $(tail -n 5 "$T/sshd.log")"

# ssh_attach: a tmux window running ssh -t ... agentmux attach (nothing else set up on the "host").
ssh_attach() {
	tmux -L "$SOCK" kill-server 2>/dev/null && sleep 0.5
	tmux -L "$SOCK" -u -f /dev/null new-session -d -x 120 -y 35 -e TERM=xterm-256color \
		"ssh -t -F /dev/null -i $T/id_test -o BatchMode=yes -o UserKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=no -o LogLevel=ERROR -p $SP $U@127.0.0.1 \
		'cd $W/proj && XDG_CONFIG_HOME=$W/config XDG_DATA_HOME=$W/data XDG_RUNTIME_DIR=$W/run \
		XDG_STATE_HOME=$W/state AGENTMUX_SHARE=$W/share exec $W/bin/agentmux attach'; \
		echo SSH-EXITED-\$?; sleep 60" || fail "tmux could not start ssh"
}

ssh_attach
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "ssh -t ... agentmux attach drew no dashboard: $(tail -n 5 "$T/sshd.log")"
wait_for '[#$] ?$' 20 || fail "no shell prompt over ssh"
keys 'echo over-ssh-$((3*4))' Enter
wait_for '^over-ssh-12$' || fail "a command typed over ssh did not run in the pane"
prefix d
wait_for '^\[detached \(from agentmux, 1 session running\)\]$' || fail "prefix d over ssh did not detach"
wait_for 'SSH-EXITED-0' || fail "ssh did not end with 0 after the detach"
echo "ssh: ssh -t ... agentmux attach draws the dashboard; prefix d detaches"

# The connection dropped (sshd's session for it killed): a detach, the session lives on.
ssh_attach
wait_for '^over-ssh-12$' 30 || fail "reattaching over ssh did not show the pane"
kill "$SSHD_PID" 2>/dev/null
for p in $(pgrep -u "$U" -x sshd); do kill "$p"; done
pkill_ssh=$(pgrep -f "^ssh -t -F /dev/null -i $T/id_test")
[ -n "$pkill_ssh" ] && kill $pkill_ssh
wait_for 'SSH-EXITED-' || fail "ssh did not end when its connection was cut"
sleep 1
spid=$(cat "$W/run/agentmux/default.pid" 2>/dev/null)
[ -n "$spid" ] && kill -0 "$spid" || fail "the user's server ended with the ssh connection"
out=$(setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env -i PATH="$PATH" HOME="$W/home" \
	XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" XDG_RUNTIME_DIR="$W/run" \
	AGENTMUX_SHARE="$W/share" "$W/bin/agentmux" ls 2>&1)
echo "$out" | grep -Eq "^[0-9]*: shell .*, (working|needs you)," || fail "the session did not survive the dropped connection: $out"
echo "ssh: a dropped connection detaches; the session keeps running"
echo "1 passed, 0 failed"
