#!/bin/sh
# The disk a session may take, through agentmux run (nobody to ask: it
# stops, saying why): a write budget ([limits] disk_write) reached by a
# writing loop, by orphans reaped by the jail's init, and by a process
# that hides its counters; a reserve ([limits] disk_reserve, a size or a
# share) reached on a small filesystem holding the project, and a start
# refused below it. As root (the jail in cgroups) and as a throwaway
# user (none: the init counts and stops). The dashboard's questions are
# tests/tui/disk.sh.
set -u
. "$(dirname "$0")/lib.sh"

conf() {
	printf '[limits]\nfile_size = 8M\ntmp_size = 32M\n' \
	    >"$XDG_CONFIG_HOME/agentmux/config"
	printf '%s\n' "$@" >>"$XDG_CONFIG_HOME/agentmux/config"
}

# Bytes in the files under DIR.
bytes() {
	du -sb "$1" 2>/dev/null | cut -f1
}

# stopped NAME NEEDLE: the run was stopped (137) and said NEEDLE on stderr.
stopped() {
	case "$RC:$OUT" in
	137:*"$2"*) ok ;;
	*) bad "$1: exit $RC, expected 137 and '$2': $OUT" ;;
	esac
}

# fill_inodes DIR FS LEFT: empty files in DIR until the filesystem FS has
# LEFT free inodes (or none more can be made). A tmpfs counts exactly: one
# df says how many to make, the next that they were made (a df for each
# file took 10 to 20 s of the test).
fill_inodes() {
	free=$(df --output=iavail "$2" | tail -n 1)
	i=0
	while [ "$free" -gt "$3" ]; do
		n=$((free - $3))
		while [ "$n" -gt 0 ]; do
			i=$((i + 1)) n=$((n - 1))
			: >"$1/h$i" || return 0
		done
		free=$(df --output=iavail "$2" | tail -n 1)
	done
}

# A loop of 1 MiB files goes past a 16 MiB budget: stopped, and told why.
budget() {
	conf "disk_write = 16M" "disk_reserve = 0"
	rm -rf "$P/w"
	mkdir "$P/w"
	jrun -- sh -c 'i=0; while [ $i -lt 400 ]; do i=$((i+1));
	    head -c 1048576 /dev/zero >w/f$i; sleep 0.01; done; echo wrote-all'
	stopped "budget" "past its 16M disk write budget ([limits] disk_write); to let it write more, raise disk_write in $XDG_CONFIG_HOME/agentmux/config"
	n=$(bytes "$P/w")
	[ "$n" -ge $((16 << 20)) ] && [ "$n" -lt $((300 << 20)) ] && ok ||
	    bad "budget: $n bytes were written against a 16 MiB budget"
	rec=$("$AMX" show last 2>&1)
	case $rec in
	*"state     exited 137"*"error     stopped session "*"past its 16M disk write budget"*) ok ;;
	*) bad "budget: the record does not say why it stopped: $rec" ;;
	esac
	rm -rf "$P/w"
}

# Orphans that write and end are reaped by the jail's init: their writes count.
orphans() {
	conf "disk_write = 16M" "disk_reserve = 0"
	rm -rf "$P/w"
	mkdir "$P/w"
	jrun -- sh -c 'i=0; while [ $i -lt 400 ]; do i=$((i+1));
	    sh -c "head -c 1048576 /dev/zero >w/f$i & exit 0"; sleep 0.01;
	    done; echo wrote-all'
	stopped "orphans" "past its 16M disk write budget"
	rm -rf "$P/w"
}

# A process that makes itself undumpable: root's jail still counts it; an
# ordinary user's cannot (root owns its counters), and stops on that.
undumpable() {
	conf "disk_write = 16M" "disk_reserve = 0"
	rm -rf "$P/w"
	mkdir "$P/w"
	jrun -- "$E" undumpable w 400
	case $OUT in *ESCAPED*) bad "undumpable: $OUT" ;; esac
	if [ "$WHO" = root ]; then
		stopped "undumpable" "past its 16M disk write budget"
	else
		stopped "undumpable" "1 of its processes keep what they write from the count (they made themselves undumpable"
	fi
	rm -rf "$P/w"
	cp /bin/sh "$P/xsh"
	chmod 111 "$P/xsh"
	mkdir "$P/w"
	jrun -- ./xsh -c 'i=0; while [ $i -lt 400 ]; do i=$((i+1));
	    head -c 1048576 /dev/zero >w/f$i; sleep 0.01; done; echo wrote-all'
	if [ "$WHO" = root ]; then
		stopped "unreadable exec" "past its 16M disk write budget"
	else
		stopped "unreadable exec" "keep what they write from the count"
	fi
	rm -rf "$P/w" "$P/xsh"
}

# The reserve on a small filesystem holding the project (AMX_SMALLFS, a
# 256 MiB tmpfs the root pass mounts): a size, then a share.
reserve() {
	if [ -z "${AMX_SMALLFS:-}" ]; then
		echo "SKIP [$WHO]: the reserve checks need the small tmpfs the root pass mounts"
		return
	fi
	Q=$(mktemp -d "$AMX_SMALLFS/$WHO.XXXXXX")
	(cd "$Q" && git init -q . && git config user.email t@x &&
	    git config user.name t && echo hi >README && git add README &&
	    git commit -qm init) || { bad "reserve: no project on the small fs"; return; }
	# The reserve is looked at up to ten times a second near it: the
	# loop writes at most 50 MiB/s (slower than a disk could, and the
	# margin of some 90 MiB leaves a second or two for a loaded machine);
	# if nothing stopped it, it would write 200 MiB. A share is of each
	# filesystem watched, so the data dir is on the small one for it.
	for r in 160M 60%; do
		conf "disk_write = 0" "disk_reserve = $r"
		[ "$r" = 60% ] && export XDG_DATA_HOME="$Q.data"
		mkdir "$Q/w"
		OUT=$("$AMX" run -C "$Q" -- sh -c 'i=0; while [ $i -lt 200 ]; do
		    i=$((i+1)); head -c 1048576 /dev/zero >w/f$i || exit 3;
		    sleep 0.02; done; echo wrote-all' </dev/null 2>&1)
		RC=$?
		stopped "reserve $r" "stopped session "
		case $OUT in
		*"the disk of $Q has "*" free, less than the "*" that [limits] disk_reserve keeps free; free some space, or lower disk_reserve in $XDG_CONFIG_HOME/agentmux/config (0 turns it off)"*) ok ;;
		*) bad "reserve $r: no word of the reserve: $OUT" ;;
		esac
		free=$(df --output=avail -B1 "$Q" | tail -n 1)
		[ "$free" -gt $((8 << 20)) ] && ok ||
		    bad "reserve $r: the disk was left with $free bytes"
		rm -rf "$Q/w"
	done
	rm -rf "$XDG_DATA_HOME"
	export XDG_DATA_HOME="$T/xdg/data"
	# Below the reserve already: the session does not start.
	conf "disk_write = 0" "disk_reserve = 160M"
	head -c $((120 << 20)) /dev/zero >"$Q/fill"
	OUT=$("$AMX" run -C "$Q" -- true </dev/null 2>&1)
	RC=$?
	case "$RC:$OUT" in
	"1:agentmux: cannot start a session in $Q: the disk of $Q has "*"free, less than the 160M that [limits] disk_reserve keeps free"*) ok ;;
	*) bad "reserve: a start below the reserve: exit $RC: $OUT" ;;
	esac
	# A project named with an escape sequence: the refusal names it
	# quoted, as git quotes paths, and no control byte reaches the terminal.
	E=$(printf '\033')
	H="$Q/p$E[31m"
	mkdir "$H" && git -C "$H" init -q . || bad "reserve: no hostile project"
	OUT=$("$AMX" run -C "$H" -- true </dev/null 2>&1)
	RC=$?
	case "$RC:$OUT" in
	*"$E"*) bad "reserve: a raw escape in the refusal: $(printf %s "$OUT" | cat -v)" ;;
	"1:agentmux: cannot start a session in \"$Q/p\\033[31m\": the disk of \"$Q/p\\033[31m\" has "*) ok ;;
	*) bad "reserve: the hostile project's refusal: exit $RC: $OUT" ;;
	esac
	rm -rf "$Q"
}

# Inodes on a filesystem of 1000 (AMX_FEWINODES, a tmpfs the root pass
# mounts): empty files take no space, the reserve keeps 100 of them (a
# tenth of so few). The loop would make 2000; it is stopped, told why, and
# the disk keeps inodes. Below the reserve already, no session starts.
inodes() {
	if [ -z "${AMX_FEWINODES:-}" ]; then
		echo "SKIP [$WHO]: the inode checks need the tmpfs of few inodes the root pass mounts"
		return
	fi
	Q=$(mktemp -d "$AMX_FEWINODES/$WHO.XXXXXX")
	(cd "$Q" && git init -q . && echo hi >README) ||
	    { bad "inodes: no project on the small fs"; return; }
	conf "disk_write = 0" "disk_reserve = 1M"
	OUT=$("$AMX" run -C "$Q" -- sh -c 'mkdir w && i=0; while [ $i -lt 400 ];
	    do i=$((i+1)); touch w/a$i w/b$i w/c$i w/d$i w/e$i || exit 3;
	    sleep 0.01; done; echo made-all' </dev/null 2>&1)
	RC=$?
	stopped "inodes" "stopped session "
	case $OUT in
	*"the disk of $Q has "*" free inodes, less than the 100 (1% of its inodes, at least 1000 or a tenth) that [limits] disk_reserve keeps free; remove the files it made that you do not need (many small or empty files take the inodes), or turn the reserve off with disk_reserve = 0 in $XDG_CONFIG_HOME/agentmux/config"*) ok ;;
	*) bad "inodes: no word of the inodes: $OUT" ;;
	esac
	free=$(df --output=iavail "$Q" | tail -n 1)
	[ "$free" -gt 20 ] && ok || bad "inodes: the disk was left with $free inodes"
	# Below the reserve already: the session does not start.
	fill_inodes "$Q/w" "$Q" 50
	OUT=$("$AMX" run -C "$Q" -- true </dev/null 2>&1)
	RC=$?
	case "$RC:$OUT" in
	"1:agentmux: cannot start a session in $Q: the disk of $Q has "*" free inodes, less than the 100 "*"; remove files you do not need there"*) ok ;;
	*) bad "inodes: a start below the reserve: exit $RC: $OUT" ;;
	esac
	rm -rf "$Q"
}

# A snapshot into a data dir on the disk of few inodes, below their
# reserve: refused, saying why and what to do.
snapinodes() {
	if [ -z "${AMX_FEWINODES:-}" ]; then
		echo "SKIP [$WHO]: the snapshot inode check needs the tmpfs of few inodes the root pass mounts"
		return
	fi
	Q=$(mktemp -d "$AMX_FEWINODES/$WHO.XXXXXX")
	S="$HOME/src/few"
	mkdir -p "$S" "$Q/fill"
	(cd "$S" && git init -q . && echo hi >README) || { bad "snapinodes: no project"; return; }
	conf "disk_write = 0" "disk_reserve = 1M"
	export XDG_DATA_HOME="$Q"
	OUT=$("$AMX" snapshot -C "$S" </dev/null 2>&1) ||
	    bad "snapinodes: the first snapshot failed: $OUT"
	fill_inodes "$Q/fill" "$Q" 60
	echo more >"$S/more"
	OUT=$("$AMX" snapshot -C "$S" </dev/null 2>&1)
	RC=$?
	case "$RC:$OUT" in
	[1-9]*:*"free inodes, less than the 100 (1% of its inodes, at least 1000 or a tenth) that [limits] disk_reserve keeps free: the snapshot is not written"*"turn the reserve off with disk_reserve = 0 in $XDG_CONFIG_HOME/agentmux/config"*) ok ;;
	*) bad "snapinodes: a snapshot below the inode reserve: exit $RC: $OUT" ;;
	esac
	export XDG_DATA_HOME="$T/xdg/data"
	rm -rf "$Q" "$S"
}

# Space claimed without a byte written (fallocate) would pass the write
# budget, and one call could take the disk past the reserve between two
# checks: it fails as on a file system without it, and the file holds no
# block. posix_fallocate then writes the blocks (glibc's fallback), which
# the budget counts.
noalloc() {
	conf "disk_write = 0" "disk_reserve = 0"
	rm -f "$P/big" "$P/pa"
	jrun -- sh -c 'fallocate -l 64M big 2>&1; echo "fallocate=$?"'
	case "$RC:$OUT" in
	0:*"Operation not supported"*"fallocate=1"*) ok ;;
	*) bad "noalloc: fallocate was not refused: exit $RC: $OUT" ;;
	esac
	b=$(stat -c %b "$P/big" 2>/dev/null || echo 0)
	[ "$b" -eq 0 ] && ok || bad "noalloc: fallocate allocated $b blocks"
	[ -x /usr/bin/python3 ]  || { rm -f "$P/big"; return; }
	jrun -- /usr/bin/python3 -c 'import os
fd = os.open("pa", os.O_CREAT | os.O_RDWR, 0o644)
os.posix_fallocate(fd, 0, 1 << 20)
print("posix_fallocate=ok")'
	b=$(stat -c %b "$P/pa" 2>/dev/null || echo 0)
	case "$RC:$OUT" in
	0:*"posix_fallocate=ok"*) [ "$b" -ge 2048 ] && ok ||
	    bad "noalloc: posix_fallocate's fallback left $b blocks" ;;
	*) bad "noalloc: posix_fallocate did not fall back: exit $RC: $OUT" ;;
	esac
	if [ "$(stat -f -c %T "$P")" != tmpfs ]; then
		printf '[limits]\nfile_size = 512M\ntmp_size = 32M\ndisk_write = 16M\ndisk_reserve = 0\n' \
		    >"$XDG_CONFIG_HOME/agentmux/config"
		rm -f "$P/pa"
		jrun -- /usr/bin/python3 -c 'import os
fd = os.open("pa", os.O_CREAT | os.O_RDWR, 0o644)
os.posix_fallocate(fd, 0, 400 << 20)
print("allocated-all")'
		stopped "noalloc budget" "past its 16M disk write budget"
	fi
	rm -f "$P/big" "$P/pa"
}

# Sparse files (a few bytes written, 16 MiB each, 200 of 1 MiB less a
# byte, and 100 of 32 KiB less a byte, the most git writes as a stored
# loose object) cost the snapshots next to nothing: the first snapshot's
# own writer and git's end snapshot compress them (or store at most 32
# KiB), and neither reads a hole through a mapping (on tmpfs that
# allocates it: the project's files would stop being sparse). Undo brings
# back their exact bytes. (16 MiB, past the 10 MiB the data dir may grow
# by: one of them stored as it is fails; 100 MiB each took half a minute
# of hashing and deflating zeros and proved no more.)
sparse() {
	printf '[limits]\nfile_size = 200M\ntmp_size = 32M\ndisk_write = 16M\ndisk_reserve = 0\n' \
	    >"$XDG_CONFIG_HOME/agentmux/config"
	S="$HOME/src/sparse"
	mkdir -p "$S" "$T/ref" "$XDG_DATA_HOME/agentmux"
	(cd "$S" && git init -q . && echo hi >README) || { bad "sparse: no project"; return; }
	for i in 1 2 3; do
		echo "s$i" >"$S/s$i" && truncate -s 16M "$S/s$i"
		echo "s$i" >"$T/ref/s$i" && truncate -s 16M "$T/ref/s$i"
	done
	D="$XDG_DATA_HOME/agentmux"
	was=$(du -sk "$D" | cut -f1)
	OUT=$("$AMX" run -C "$S" -- sh -c 'for i in 1 2 3 4 5 6; do
	    echo $i >big$i; truncate -s 16M big$i; done;
	    i=0; while [ $i -lt 200 ]; do i=$((i + 1));
	    echo $i >u$i; truncate -s 1048575 u$i; done;
	    i=0; while [ $i -lt 100 ]; do i=$((i + 1));
	    echo $i >v$i; truncate -s 32767 v$i; done;
	    printf x | dd of=s1 bs=1 seek=8388608 conv=notrunc 2>/dev/null;
	    echo done' </dev/null 2>&1)
	RC=$?
	case "$RC:$OUT" in
	*"snapshot failed"*|*"is full"*) bad "sparse: a snapshot failed: $OUT" ;;
	0:*done*) ok ;;
	*) bad "sparse: exit $RC: $OUT" ;;
	esac
	now=$(du -sk "$D" | cut -f1)
	[ $((now - was)) -lt 10240 ] && ok ||
	    bad "sparse: the data dir grew by $((now - was)) KiB for 347 MiB of holes"
	for f in s1 s2 s3 big1 big6 u1 u200; do
		b=$(stat -c %b "$S/$f")
		[ "$b" -lt 256 ] && ok ||
		    bad "sparse: $f has $b blocks after the snapshots: its holes were allocated"
	done
	OUT=$("$AMX" undo last </dev/null 2>&1) || bad "sparse: undo: $OUT"
	[ ! -e "$S/big1" ] && [ ! -e "$S/u1" ] && [ ! -e "$S/v1" ] && cmp -s "$S/s1" "$T/ref/s1" &&
	    cmp -s "$S/s2" "$T/ref/s2" && ok ||
	    bad "sparse: undo did not bring back the start's bytes: $OUT"
	rm -rf "$S" "$T/ref"
}

# The end snapshot near the reserve of the data dir's disk (the small
# tmpfs; the project on another disk): the session writes 64 MiB of
# random bytes, which the snapshot cannot store without going past the
# reserve. It stops, says why (recorded for the session), removes what it
# had written, and the disk keeps its reserve.
snapreserve() {
	if [ -z "${AMX_SMALLFS:-}" ]; then
		echo "SKIP [$WHO]: the snapshot reserve check needs the small tmpfs the root pass mounts"
		return
	fi
	Q=$(mktemp -d "$AMX_SMALLFS/$WHO.XXXXXX")
	S="$HOME/src/heavy"
	mkdir -p "$S"
	(cd "$S" && git init -q . && echo hi >README) || { bad "snapreserve: no project"; return; }
	avail=$(df --output=avail -B1 "$Q" | tail -n 1)
	res=$(( (avail >> 20) - 32 ))
	conf "disk_write = 0" "disk_reserve = ${res}M"
	export XDG_DATA_HOME="$Q"
	touch "$Q/.before"
	OUT=$("$AMX" run -C "$S" -- sh -c 'for i in 1 2 3 4 5 6 7 8; do
	    head -c 8000000 /dev/urandom >r$i; done; echo wrote' </dev/null 2>&1)
	RC=$?
	case $OUT in
	*wrote*"the end snapshot failed: the disk of "*"less than the ${res}M that [limits] disk_reserve keeps free: the snapshot is not written (the files it was writing are removed; objects it had finished stay until the repository is pruned); free some space and take it again (agentmux snapshot), or lower disk_reserve in $XDG_CONFIG_HOME/agentmux/config (0 turns it off)"*) ok ;;
	*) bad "snapreserve: exit $RC, no word of the reserve: $OUT" ;;
	esac
	# The stop is seen within 100 ms: objects git finished before it (a
	# whole pack, as the message says) stay until pruned. Beyond those,
	# nothing may keep the disk below the reserve.
	free=$(df --output=avail -B1 "$Q" | tail -n 1)
	kept=$(find "$Q" -path '*/objects/*' -type f -newer "$Q/.before" \
	    ! -name 'tmp_obj_agentmux_keep' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	[ $((free + kept)) -ge $((res << 20)) ] && ok ||
	    bad "snapreserve: $free bytes left free (and $kept in finished objects), less than the ${res}M reserve"
	# The background pack that follows a session (detached, under the
	# repository's keep lock) unpacks what is unreachable through its own
	# temporary files: it is waited for, then nothing may be left.
	for lock in "$Q"/agentmux/shadow/*/agentmux-keep.lock; do
		[ -e "$lock" ] && timeout 120 flock "$lock" true
	done
	left=$(find "$Q" -name 'tmp_*' ! -name tmp_obj_agentmux_keep | head -n 3)
	[ -z "$left" ] && ok || bad "snapreserve: left behind: $left"
	rec=$("$AMX" show last 2>&1)
	case $rec in
	*"end snapshot failed"*"disk_reserve"*) ok ;;
	*) bad "snapreserve: the session's record does not say why: $rec" ;;
	esac
	export XDG_DATA_HOME="$T/xdg/data"
	rm -rf "$Q" "$S"
}

# Budget checks need a disk: tmpfs writes are memory, and no process's
# write_bytes counts them.
checks() {
	if [ "$(stat -f -c %T "$P")" = tmpfs ]; then
		echo "SKIP [$WHO]: the budget checks need $P on a disk, not tmpfs"
	else
		timed budget
		timed orphans
		timed undumpable
		timed sparse
	fi
	timed noalloc
	timed reserve
	timed snapreserve
	timed inodes
	timed snapinodes
}

# The root pass mounts the small filesystem; the user's pass uses it too.
if [ "${1:-}" != --as-user ] && [ "$(id -u)" = 0 ]; then
	SMALL=$(mktemp -d /tmp/amx-smallfs.XXXXXX) || exit 1
	if mount -t tmpfs -o size=256m,mode=1777 tmpfs "$SMALL"; then
		AMX_SMALLFS=$SMALL
		export AMX_SMALLFS
	else
		rmdir "$SMALL"
		SMALL=
	fi
	FEW=$(mktemp -d /tmp/amx-fewinodes.XXXXXX) || exit 1
	if mount -t tmpfs -o size=64m,nr_inodes=1000,mode=1777 tmpfs "$FEW"; then
		AMX_FEWINODES=$FEW
		export AMX_FEWINODES
	else
		rmdir "$FEW"
		FEW=
	fi
	trap '[ -z "$SMALL" ] || { umount "$SMALL"; rmdir "$SMALL"; };
	    [ -z "$FEW" ] || { umount "$FEW"; rmdir "$FEW"; }' EXIT
fi
jail_main "$@"
