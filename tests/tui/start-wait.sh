#!/bin/sh
# A session starting on a large project is a state, not a wait (issue 16): while its start snapshot runs,
# another session's pane still echoes what is typed and its proxy still answers; keys typed into the starting
# pane are kept for its command; the tab bar says "starting" until the command runs.
set -u
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }

cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[policy]
on_unknown = deny
CONF

# A project of 10,000 files (as bench/loop-wait.sh), never snapshotted: its first snapshot hashes them all.
B=$T/big
mkdir -p "$B"
(cd "$B" && git init -q . && python3 -c '
import os
for d in range(100):
    os.mkdir("d%02d" % d)
    for f in range(100):
        open("d%02d/f%03d.txt" % (d, f), "w").write("file %d %d\n" % (d, f) * 20)
') || fail "cannot make the large project"
# On a fast machine that is quick (agentmux's own writer hashes the files, without git): every git in that
# project is slowed by 5 s, so that the start outlasts the checks below (this wrapper is the test's; agentmux runs whatever git is first on PATH).
# PATH is set in the command: tmux gives a new pane the client's PATH whatever -e says, so -e PATH never reached agentmux.
REAL_GIT=$(command -v git)
mkdir -p "$T/bin"
cat >"$T/bin/git" <<WRAP
#!/bin/sh
case "\$(pwd) \${GIT_WORK_TREE:-} \$*" in *"$B"*) sleep 5 ;; esac
exec "$REAL_GIT" "\$@"
WRAP
chmod 755 "$T/bin/git"

tmux -L "$SOCK" -u -f /dev/null new-session -d -x 160 -y 45 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "TERM=xterm-256color" \
	"PATH='$T/bin':\$PATH $AGENTMUX; echo DASHBOARD-EXITED-\$?; sleep 60" || fail "tmux could not start agentmux"
wait_for '1:shell\* (working|needs you)' 30 || fail "the first session did not start"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the first session"

# The second session, on the large project.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s Enter
wait_for 'project directory' || fail "no project dir step"
keys C-u "$B" Enter
wait_for '2:shell\* starting' 10 || fail "the new session's tab does not say it is starting"
wait_for 'starting' || fail "the starting pane does not say so"
# Typed while it starts: kept for its shell.
keys 'echo kept-$((5+6))' Enter

# Back to the first: it echoes, and its proxy answers, while the second still starts.
prefix 1
wait_for '1:shell\* (working|needs you)' 10 || fail "the first session did not come back into view"
keys 'echo echoed-$((3+4))' Enter
wait_for 'echoed-7' 10 || fail "the first pane did not echo while the second session started"
keys "curl -s -o /dev/null -w 'code-%{http_code}\\n' http://nowhere.test/" Enter
wait_for 'code-403' 10 || fail "the first session's proxy did not answer while the second started"
scr | grep -q '2:shell starting' ||
	fail "the second session was no longer starting when the first answered (the check proves nothing)"

# The second starts in the end, with what was typed into it.
wait_for '2:shell (working|needs you)' 120 || fail "the second session did not start"
prefix 2
wait_for 'kept-11' 20 || fail "the keys typed while the session started were lost"
exit 0
