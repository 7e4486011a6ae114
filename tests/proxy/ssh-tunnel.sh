#!/usr/bin/env bash
# git over ssh through a `tunnel HOST:PORT` rule (issue 20), for real: a local
# OpenSSH server (pubkey only, a throwaway user and key, a bare repository),
# and in a real jail `git clone` and `git push` over ssh://git.test:PORT,
# which reach sshd only through agentmux's resolver, redirect and tunnel.
# Without the rule the clone fails and the record names the rule that would
# allow it. Run as root and, when it can, as an ordinary user.
# Exit 77 (skip) with the reason when something this needs is missing.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
SSHD=/usr/sbin/sshd
[ "$(id -u)" = 0 ] || { echo "SKIP: starting sshd for a throwaway user needs root"; exit 77; }
for t in "$SSHD" ssh ssh-keygen git python3 useradd userdel setpriv; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

T=$(mktemp -d /tmp/amx-sshtun.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/sshd" "$T/proj"
chmod 700 "$XDG_RUNTIME_DIR"
SSHD_PID="" GUSER="" JUSER="" MADE_PRIVSEP=""
cleanup() {
	[ -n "$SSHD_PID" ] && { kill "$SSHD_PID" 2>/dev/null; wait "$SSHD_PID" 2>/dev/null; }
	[ -n "$GUSER" ] && userdel "$GUSER" 2>/dev/null
	[ -n "$JUSER" ] && userdel "$JUSER" 2>/dev/null
	[ -n "$MADE_PRIVSEP" ] && rmdir /run/sshd 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -q -- "$2" <<<"$1"; }

# The ssh user: a throwaway account that can log in by key only ('*' is no
# password but not a locked account, which sshd without PAM would refuse).
GUSER=amxgit$$
useradd -M -d "$T/ghome" -s /bin/sh -p '*' "$GUSER" || { GUSER=""; echo "SKIP: useradd failed"; exit 77; }
mkdir -p "$T/ghome"
git init -q --bare "$T/ghome/repo.git" || exit 1
seed=$T/seed
git init -q "$seed" && git -C "$seed" -c user.name=t -c user.email=t@t commit -q --allow-empty -m seed &&
	git -C "$seed" push -q "$T/ghome/repo.git" HEAD:refs/heads/main || exit 1
git -C "$T/ghome/repo.git" symbolic-ref HEAD refs/heads/main
chown -R "$GUSER:" "$T/ghome"
# The repository as the host reads it (it belongs to the ssh user).
head_of() { git -c safe.directory="$T/ghome/repo.git" -C "$T/ghome/repo.git" log --format="$1" -1 main 2>&1; }

ssh-keygen -q -t ed25519 -N '' -C amx-hostkey -f "$T/sshd/hostkey" || exit 1
ssh-keygen -q -t ed25519 -N '' -C amx-client -f "$T/proj/id_test" || exit 1
cp "$T/proj/id_test.pub" "$T/sshd/authorized_keys"
chmod 644 "$T/sshd/authorized_keys"
# sshd's privilege separation directory (the package makes it at boot).
[ -d /run/sshd ] || { mkdir -m 755 /run/sshd && MADE_PRIVSEP=1; }

# sshd on a free high port (asked of the kernel; retried if taken meanwhile).
. "$(dirname "$0")/../lib/sshd.sh"
sshd_start "$T/sshd/config" "$T/sshd/hostkey" "$GUSER" "$T/sshd/authorized_keys" "$T/sshd.log"
[ -n "$SSHD_PID" ] || { echo "FAIL: sshd did not start: $(tail -n 5 "$T/sshd.log")"; exit 1; }

# The host reaches it directly: the setup itself works.
HOSTSSH="ssh -F /dev/null -i $T/proj/id_test -o BatchMode=yes -o UserKnownHostsFile=$T/known -o StrictHostKeyChecking=accept-new"
if ! GIT_SSH_COMMAND=$HOSTSSH timeout 60 git ls-remote "ssh://$GUSER@127.0.0.1:$SP/$T/ghome/repo.git" >"$T/ls.out" 2>&1; then
	echo "FAIL: git over ssh does not work even outside a jail: $(cat "$T/ls.out"; tail -n 5 "$T/sshd.log")"
	exit 1
fi

write_config() { # config dir, then policy lines
	local d=$1; shift
	mkdir -p "$d/agentmux"
	{
		printf '[proxy]\nconnect_to = git.test:%s:127.0.0.1:%s\n[policy]\n' "$SP" "$SP"
		printf '%s\n' "$@"
	} >"$d/agentmux/config"
}
write_config "$XDG_CONFIG_HOME" "tunnel = git.test:$SP"

cd "$T/proj" || exit 1
if ! timeout 30 "$AMX" run -- true >"$T/jail.err" 2>&1; then
	echo "SKIP: jails cannot start here: $(tail -n 1 "$T/jail.err")"
	exit 77
fi
lastreq() { "$AMX" requests --json | python3 -c "
import json, sys
want = sys.argv[1:]
for r in json.load(sys.stdin):
    if all(w in json.dumps(r) for w in want):
        print(json.dumps(r)); break
" "$@"; }

# What the jail runs: the key copied to the jail's /tmp (ssh wants it private),
# a known_hosts there too, clone, commit, push. $1 names the commit.
JAILSCRIPT='
set -e
cp id_test /tmp/id && chmod 600 /tmp/id
export GIT_SSH_COMMAND="ssh -F /dev/null -i /tmp/id -o BatchMode=yes -o UserKnownHostsFile=/tmp/known -o StrictHostKeyChecking=accept-new -o ConnectTimeout=20"
rm -rf /tmp/w
git clone -q "$URL" /tmp/w
echo "cloned: $(git -C /tmp/w log --format=%s -1)"
git -C /tmp/w -c user.name=jail -c user.email=jail@test commit -q --allow-empty -m "$MSG"
git -C /tmp/w push -q origin HEAD:main
echo "pushed"'
URL="ssh://$GUSER@git.test:$SP/$T/ghome/repo.git"

# ---- root: clone and push through the tunnel rule ----
out=$(timeout 180 "$AMX" run --on-unknown deny -- \
	env URL="$URL" MSG=from-root-jail sh -c "$JAILSCRIPT" 2>&1)
has "$out" "cloned: seed" && has "$out" "pushed" && ok "git clone and push over ssh through a tunnel rule" ||
	bad "clone/push in a jail: $out / $(tail -n 5 "$T/sshd.log")"
[ "$(head_of %s)" = from-root-jail ] &&
	ok "the bare repository on the host has the jail's commit" || bad "host repo: $(head_of '%h %s')"
r=$(lastreq '"host": "git.test"' '"decision": "tunnel"')
python3 -c '
import json, sys
r = json.loads(sys.argv[1]); sp = int(sys.argv[2])
ok = (r["scheme"] == "tunnel" and r["port"] == sp and r["bytes_up"] > 1000 and r["bytes_down"] > 1000
      and r["duration_us"] > 0 and ("tunnel git.test:%d" % sp) in json.dumps(r))
sys.exit(0 if ok else 1)' "$r" "$SP" 2>/dev/null &&
	ok "the tunnel is recorded with its rule, bytes both ways and duration" || bad "tunnel record: $r"
out=$("$AMX" requests 2>&1)
has "$out" "git.test" && has "$out" "tunnel" && ok "agentmux requests lists the tunnel" || bad "requests: $out"

# ---- without the rule, and with a deny: refused, naming the rule ----
write_config "$XDG_CONFIG_HOME" "allow = example.test"
before=$(head_of %H)
out=$(timeout 180 "$AMX" run --on-unknown deny -- env URL="$URL" MSG=no-rule sh -c "$JAILSCRIPT" 2>&1)
r=$(lastreq '"host": "git.test"' '"decision": "deny"')
! has "$out" "cloned:" && has "$r" "tunnel git.test:$SP" &&
	ok "without a tunnel rule the clone fails; the record names tunnel git.test:$SP" || bad "no rule: $out / $r"
write_config "$XDG_CONFIG_HOME" "deny = git.test"
out=$(timeout 180 "$AMX" run --on-unknown deny -- env URL="$URL" MSG=denied sh -c "$JAILSCRIPT" 2>&1)
! has "$out" "cloned:" && [ "$(head_of %H)" = "$before" ] &&
	ok "with deny git.test the clone fails and nothing is pushed" || bad "deny: $out"
out=$("$AMX" requests 2>&1)
has "$out" "tunnel git.test:$SP" && ok "agentmux requests shows the rule that would allow it" || bad "requests (refused): $out"

# ---- an ordinary user: its own jail, the same clone and push ----
JUSER=amxsj$$
if useradd -M -d "$T/jhome" "$JUSER" 2>/dev/null; then
	write_config "$T/jhome/config" "tunnel = git.test:$SP"
	mkdir -p "$T/uproj" && cp "$T/proj/id_test" "$T/uproj/" &&
		chown -R "$JUSER:" "$T/jhome" "$T/uproj"
	mkdir -p "$T/stage/bin" && cp "$AMX" "$T/stage/bin/agentmux" &&
		cp "${AMX%/*}/agentmux-full" "$T/stage/bin/agentmux-full" &&
		cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share" && chmod -R a+rX "$T/stage"
	uamx() {
		(cd "$T/uproj" && env -i PATH="$PATH" HOME="$T/jhome" XDG_DATA_HOME="$T/jhome/data" \
			XDG_CONFIG_HOME="$T/jhome/config" AGENTMUX_SHARE="$T/stage/share" \
			timeout 180 setpriv --reuid="$(id -u "$JUSER")" --regid="$(id -g "$JUSER")" --init-groups \
			"$T/stage/bin/agentmux" "$@")
	}
	out=$(uamx run --on-unknown deny -- env URL="$URL" MSG=from-user-jail sh -c "$JAILSCRIPT" 2>&1)
	if has "$out" "user namespace"; then
		echo "skip: unprivileged user namespaces are not available: $out"
	else
		has "$out" "cloned: from-root-jail" && has "$out" "pushed" &&
			[ "$(head_of %s)" = from-user-jail ] &&
			ok "ordinary user: git clone and push over ssh through a tunnel rule" || bad "ordinary user: $out"
		r=$(uamx requests --json 2>&1 | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["host"] == "git.test" and r["decision"] == "tunnel":
        print(r["bytes_up"], r["bytes_down"], r["duration_us"]); break' 2>&1)
		read -r up down us <<<"$r"
		[ "${up:-0}" -gt 1000 ] 2>/dev/null && [ "${down:-0}" -gt 1000 ] && [ "${us:-0}" -gt 0 ] &&
			ok "ordinary user: the tunnel is recorded with bytes and duration" || bad "ordinary user record: $r"
		write_config "$T/jhome/config" "allow = example.test"
		chown -R "$JUSER:" "$T/jhome/config"
		out=$(uamx run --on-unknown deny -- env URL="$URL" MSG=user-no-rule sh -c "$JAILSCRIPT" 2>&1)
		r=$(uamx requests 2>&1)
		! has "$out" "cloned:" && has "$r" "tunnel git.test:$SP" &&
			ok "ordinary user: without the rule the clone fails, naming the rule" || bad "ordinary user, no rule: $out / $r"
	fi
else
	JUSER=""
	echo "skip: useradd failed for the ordinary-user run"
fi

[ $fails = 0 ] && { echo "all passed"; exit 0; }
echo "$fails failed"
exit 1
