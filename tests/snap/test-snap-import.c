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
	char *dir = test_tmpdir("import"), *upper, *gitdir, *objects;
	struct snap_import *im;
	struct event_base *base;
	struct timeval tick = { 0, 200000 };
	struct told t = { 0, 0, NULL };
	int i;

	(void)state;
	upper = xprintf("%s/upper", dir);
	gitdir = xprintf("%s/host/.git", dir);
	objects = xprintf("%s/objects", gitdir);
	t.objects = objects;
	test_sh_ok("cd %s && git init -q host && git init -q src && cd src && "
	    "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m one "
	    "&& mkdir -p %s/pack && git rev-list --objects --all | "
	    "git pack-objects -q %s/pack/pack >/dev/null", dir, upper, upper);
	/* Loose objects as git writes them, each a blob of its own. */
	test_sh_ok("python3 - %s %d <<'EOF'\n"
	    "import hashlib, os, sys, zlib\n"
	    "up, n = sys.argv[1], int(sys.argv[2])\n"
	    "for i in range(n):\n"
	    "    data = b'blob %%d\\0' %% len(str(i)) + str(i).encode()\n"
	    "    h = hashlib.sha1(data).hexdigest()\n"
	    "    os.makedirs(os.path.join(up, h[:2]), exist_ok=True)\n"
	    "    open(os.path.join(up, h[:2], h[2:]), 'wb').write(zlib.compress(data))\n"
	    "EOF", upper, LOOSE);
	base = event_base_new();
	assert_non_null(base);
	im = snap_import_create(gitdir, upper);
	assert_non_null(im);
	snap_import_finish(im, base, done, &t);
	for (i = 0; i < 6000 && t.calls == 0; i++)
		event_base_loop(base, EVLOOP_ONCE);
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.loose_then, LOOSE);
	/* Whatever is still pending runs now: the caller is not told twice. */
	event_base_loopexit(base, &tick);
	event_base_dispatch(base);
	assert_int_equal(t.calls, 1);
	assert_false(snap_import_busy(im));
	snap_import_free(im);
	event_base_free(base);
	test_rmtree(dir);
	free(objects);
	free(gitdir);
	free(upper);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finish_once),
	};

	return test_run_group(tests, NULL, NULL);
}
