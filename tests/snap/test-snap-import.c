/*
 * The bringing back of a session's objects (snap-import.c) at its end:
 * the caller is told once, after every loose object and every pack is in
 * the user's repository, however the packs' indexing (a child on the
 * loop) and the loose objects' slices (a timer) interleave.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"

/* Loose objects the session wrote: enough that bringing them back takes many slices of the loop. */
#define LOOSE 3000

struct told {
	int calls;
	int loose_then;          /* loose objects in the host's objects when told */
	char *objects;
};

/* Loose objects under OBJECTS (its fanout dirs). */
static int
count_loose(const char *objects)
{
	struct dirent *de, *fe;
	char *sub;
	DIR *d, *f;
	int n = 0;

	if ((d = opendir(objects)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 2 || strcmp(de->d_name, "..") == 0)
			continue;
		sub = xprintf("%s/%s", objects, de->d_name);
		if ((f = opendir(sub)) != NULL) {
			while ((fe = readdir(f)) != NULL)
				n += strlen(fe->d_name) == 38;
			closedir(f);
		}
		free(sub);
	}
	closedir(d);
	return n;
}

static void
done(void *arg)
{
	struct told *t = arg;

	t->calls++;
	t->loose_then = count_loose(t->objects);
}

/* A host repository, and an upper dir holding a real pack of a session's commit. */
struct fixture {
	char *dir, *upper, *gitdir, *objects;
};

static void
fixture_make(struct fixture *f)
{
	f->dir = test_tmpdir("import");
	f->upper = xprintf("%s/upper", f->dir);
	f->gitdir = xprintf("%s/host/.git", f->dir);
	f->objects = xprintf("%s/objects", f->gitdir);
	test_sh_ok("cd %s && git init -q host && git init -q src && cd src && "
	    "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m one "
	    "&& mkdir -p %s/pack && git rev-list --objects --all | "
	    "git pack-objects -q %s/pack/pack >/dev/null", f->dir, f->upper,
	    f->upper);
}

static void
fixture_free(struct fixture *f)
{
	test_rmtree(f->dir);
	free(f->objects);
	free(f->gitdir);
	free(f->upper);
	free(f->dir);
}

/* The import of F's upper dir, run on BASE until it tells T (at most 6,000 turns). */
static struct snap_import *
import_run(struct fixture *f, struct event_base *base, struct told *t)
{
	struct snap_import *im;
	int i;

	im = snap_import_create(f->gitdir, f->upper);
	assert_non_null(im);
	snap_import_finish(im, base, done, t);
	for (i = 0; i < 6000 && t->calls == 0; i++)
		event_base_loop(base, EVLOOP_ONCE);
	return im;
}

/*
 * A pack and 3,000 loose objects in the upper dir: the pack's index-pack
 * ends while the loose objects' slices still go on. It told the caller
 * then, with loose objects left; the slices' timer then told it again
 * through a callback already cleared, and agentmux crashed (SIGSEGV at a
 * null address, 4 runs in 30 of a session that committed and repacked).
 */
static void
test_finish_once(void **state)
{
	struct fixture f;
	struct snap_import *im;
	struct event_base *base;
	struct timeval tick = { 0, 200000 };
	struct told t = { 0, 0, NULL };

	(void)state;
	fixture_make(&f);
	t.objects = f.objects;
	/* Loose objects as git writes them, each a blob of its own. */
	test_sh_ok("python3 - %s %d <<'EOF'\n"
	    "import hashlib, os, sys, zlib\n"
	    "up, n = sys.argv[1], int(sys.argv[2])\n"
	    "for i in range(n):\n"
	    "    data = b'blob %%d\\0' %% len(str(i)) + str(i).encode()\n"
	    "    h = hashlib.sha1(data).hexdigest()\n"
	    "    os.makedirs(os.path.join(up, h[:2]), exist_ok=True)\n"
	    "    open(os.path.join(up, h[:2], h[2:]), 'wb').write(zlib.compress(data))\n"
	    "EOF", f.upper, LOOSE);
	base = event_base_new();
	assert_non_null(base);
	im = import_run(&f, base, &t);
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.loose_then, LOOSE);
	/* Whatever is still pending runs now: the caller is not told twice. */
	event_base_loopexit(base, &tick);
	event_base_dispatch(base);
	assert_int_equal(t.calls, 1);
	assert_false(snap_import_busy(im));
	snap_import_free(im);
	event_base_free(base);
	fixture_free(&f);
}

/*
 * Writes into UPPER's pack dir a pack of a 64 KiB blob, then 4 deltas
 * each copying the last object 16 times: 298 bytes, a 4 GiB object.
 */
static void
write_bomb(const char *upper)
{
	test_sh_ok("python3 - %s/pack <<'EOF'\n"
	    "import os\n"
	    "import hashlib, struct, sys, zlib\n"
	    "def varint(n):\n"
	    "    b = bytearray()\n"
	    "    while True:\n"
	    "        c = n & 0x7f; n >>= 7\n"
	    "        if not n: b.append(c); return bytes(b)\n"
	    "        b.append(c | 0x80)\n"
	    "def hdr(t, size):\n"
	    "    c = (t << 4) | (size & 15); size >>= 4; b = bytearray()\n"
	    "    while size: b.append(c | 0x80); c = size & 0x7f; size >>= 7\n"
	    "    b.append(c); return bytes(b)\n"
	    "def ofs(n):\n"
	    "    b = bytearray([n & 0x7f]); n >>= 7\n"
	    "    while n: n -= 1; b.insert(0, 0x80 | (n & 0x7f)); n >>= 7\n"
	    "    return bytes(b)\n"
	    "base = b'A' * 65536\n"
	    "data = hdr(3, len(base)) + zlib.compress(base)\n"
	    "at, last, size = 12, 12, len(base)\n"
	    "at += len(data)\n"
	    "for level in range(4):\n"
	    "    ins = bytearray()\n"
	    "    for k in range(16):\n"
	    "        off, left = 0, size\n"
	    "        while left:\n"
	    "            c = min(left, 0xffffff); op = 0x80; a = bytearray()\n"
	    "            for j in range(4):\n"
	    "                if (off >> 8 * j) & 255: op |= 1 << j; a.append((off >> 8 * j) & 255)\n"
	    "            for j in range(3):\n"
	    "                if (c >> 8 * j) & 255: op |= 16 << j; a.append((c >> 8 * j) & 255)\n"
	    "            ins.append(op); ins += a; off += c; left -= c\n"
	    "    delta = varint(size) + varint(16 * size) + bytes(ins)\n"
	    "    body = hdr(6, len(delta)) + ofs(at - last) + zlib.compress(delta)\n"
	    "    last = at; at += len(body); data += body; size *= 16\n"
	    "pack = b'PACK' + struct.pack('>II', 2, 5) + data\n"
	    "h = hashlib.sha1(pack)\n"
	    "p = os.path.join(sys.argv[1], 'pack-' + h.hexdigest())\n"
	    "open(p + '.pack', 'wb').write(pack + h.digest())\n"
	    "open(p + '.idx', 'wb').close()\n"
	    "EOF", upper);
}

/*
 * write_bomb's pack beside a real one, indexed with MEM of memory and
 * SECS (and one a MiB) of time: refused, said with WHY, the real one taken.
 */
static void
bomb_refused(uint64_t mem, int secs, const char *why)
{
	struct fixture f;
	struct snap_import *im;
	struct event_base *base;
	struct told t = { 0, 0, NULL };
	const struct strv *pr;
	uint64_t was_mem = snap_git_mem;
	int was_secs = snap_import_pack_secs_base;
	int64_t refused = 0;
	size_t i;
	bool said = false;

	fixture_make(&f);
	t.objects = f.objects;
	write_bomb(f.upper);
	snap_git_mem = mem;
	snap_import_pack_secs_base = secs;
	base = event_base_new();
	assert_non_null(base);
	im = import_run(&f, base, &t);
	snap_git_mem = was_mem;
	snap_import_pack_secs_base = was_secs;
	assert_int_equal(t.calls, 1);
	snap_import_count(im, &refused, NULL);
	assert_int_equal(refused, 1);
	pr = snap_import_problems(im);
	for (i = 0; i < pr->n; i++)
		said |= strstr(pr->v[i], "the pack pack-") != NULL &&
		    strstr(pr->v[i], why) != NULL;
	if (!said)
		fail_msg("the refusal is not said: %s", pr->n > 0 ? pr->v[0] :
		    "(nothing)");
	/* The real pack came in: its commit is in the host's objects. */
	test_sh_ok("cd %s/src && git --git-dir=%s cat-file -e $(git rev-parse "
	    "HEAD)", f.dir, f.gitdir);
	snap_import_free(im);
	event_base_free(base);
	fixture_free(&f);
}

/*
 * A pack of deltas the session wrote, 298 bytes that make one 4 GiB
 * object: index-pack at the end took 4.4 GB of the host's memory for it
 * (one level more: 64 GiB). It runs under a memory bound (the tests'
 * 256 MiB here), fails, and is said to; a real pack beside it comes in.
 */
static void
test_delta_bomb(void **state)
{
	bomb_refused((uint64_t)256 << 20, snap_import_pack_secs_base,
	    "more memory than agentmux lets");
}

/*
 * The same pack under the real memory bound but a time limit of a second
 * (the tests' hook; 60 s and one per MiB otherwise): index-pack is killed
 * when its time is out, that is said, and the real pack still comes in.
 */
static void
test_pack_time(void **state)
{
	bomb_refused(snap_git_mem, 1, "ran out of the time it is given");
}

/*
 * Every git agentmux runs has snap_git_mem as its RLIMIT_DATA: a ref a
 * live session made a link to /dev/zero has git for-each-ref read it
 * without end (7.6 GB in 5 s here), and with the bound it fails at once.
 */
static void
test_git_mem(void **state)
{
	const char *lim[] = { "-c",
	    "alias.lim=!grep '^Max data size' /proc/self/limits", "lim", NULL };
	const char *refs[] = { "for-each-ref", NULL };
	char *dir = test_tmpdir("zero"), *gitdir, *cause = NULL;
	uint64_t was = snap_git_mem;
	struct buf out;
	int rc;

	(void)state;
	test_sh_ok("cd %s && git init -q && git -c user.name=a -c "
	    "user.email=a@b commit -q --allow-empty -m a && ln -s /dev/zero "
	    ".git/refs/heads/z", dir);
	gitdir = xprintf("%s/.git", dir);
	snap_git_mem = (uint64_t)256 << 20;
	buf_init(&out);
	/* The bound is agentmux's, not one this process has (it has none). */
	rc = snap_git_plain_io(gitdir, lim, NULL, &out, &cause);
	if (rc != 0 || out.data == NULL || strstr(out.data, " 268435456 ") ==
	    NULL)
		fail_msg("git's limit: %s", rc != 0 ? cause : out.data != NULL ?
		    out.data : "(nothing)");
	rc = snap_git_plain_io(gitdir, refs, NULL, NULL, &cause);
	snap_git_mem = was;
	assert_int_equal(rc, -1);
	if (strstr(cause, "memory") == NULL)
		fail_msg("not the bound: %s", cause);
	free(cause);
	buf_free(&out);
	free(gitdir);
	test_rmtree(dir);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finish_once),
		cmocka_unit_test(test_delta_bomb),
		cmocka_unit_test(test_pack_time),
		cmocka_unit_test(test_git_mem),
	};

	return test_run_group(tests, NULL, NULL);
}
