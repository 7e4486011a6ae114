# Sourced by the tests that need an ssh server of their own on loopback (tests/proxy/ssh-tunnel.sh,
# tests/tui/ssh.sh); SSHD (default /usr/sbin/sshd) and the privilege separation dir are the caller's.

# sshd_start CONFIG HOSTKEY USER AUTHORIZED_KEYS LOG: sshd on a free loopback port ($SP), public-key logins
# for USER only, no forwarding, its config written to CONFIG and its output appended to LOG; its pid in
# $SSHD_PID. The port is asked of the kernel and tried three times (taken between the pick and the bind);
# 1 (SSHD_PID empty) if it never listened.
sshd_start() {
	for _try in 1 2 3; do
		SP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		cat >"$1" <<EOF
Port $SP
ListenAddress 127.0.0.1
HostKey $2
PidFile none
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile $4
StrictModes no
AllowUsers $3
PermitRootLogin no
X11Forwarding no
AllowTcpForwarding no
LogLevel VERBOSE
EOF
		"${SSHD:-/usr/sbin/sshd}" -D -e -f "$1" </dev/null >>"$5" 2>&1 &
		SSHD_PID=$!
		for _ in $(seq 50); do
			python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' "$SP" 2>/dev/null &&
				return 0
			kill -0 "$SSHD_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$SSHD_PID" 2>/dev/null
		wait "$SSHD_PID" 2>/dev/null
		SSHD_PID=""
	done
	return 1
}
