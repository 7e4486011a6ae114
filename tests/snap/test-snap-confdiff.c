/*
 * Config diffs of real overlay upper dirs (made by a real overlayfs in a
 * user namespace, and by hand as root): created, modified, deleted files
 * and a deleted and an opaque dir; redaction; apply and discard, file by
 * file; no writing through host symlinks; config_persist at session end.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"
#include "store/store.h"

#define SECRET "supersecretvalue123"
#define TOKEN "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"

static char *dir;
static char *host;        /* the overlaid host dir */
static char *hostfile;    /* an overlaid host file */
static char *sdir;        /* the session's data dir */
static int64_t sid;

static int64_t
new_session(bool running)
{
	struct store_session s;
	struct store *st;
	char *cause = NULL;
	int64_t id;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	memset(&s, 0, sizeof s);
	s.agent = (char *)"claude";
	s.project = dir;
	s.command = (char *)"[\"claude\"]";
	id = store_session_begin(st, &s, &cause);
	assert_true(id > 0);
	if (!running)
		store_session_end(st, id, "exited", 0, NULL);
	store_close(st);
	return id;
}

/* The host config: what the agent's dirs hold before the session. */
static int
setup(void **state)
{
	char *cfg;

	dir = test_tmpdir("confdiff");
	test_isolate(dir);
	host = xprintf("%s/home/.agent", dir);
	hostfile = xprintf("%s/home/.agentrc", dir);
	test_sh_ok("mkdir -p %s/plugins/p %s/keep %s/sub && cd %s && "
	    "printf '{\\n  \"theme\": \"dark\",\\n  \"apiKey\": \"%s\"\\n}\\n' "
	    "> settings.json && echo old > old.txt && echo p > plugins/p/x && "
	    "echo k1 > keep/a && echo k2 > keep/b && echo s > sub/s && "
	    "printf '\\001\\000\\002' > blob.bin && echo run > tool.sh && "
	    "chmod 700 tool.sh && ln -s settings.json link && "
	    "echo 'editor = vi' > %s", host, host, host, host, TOKEN, hostfile);
	cfg = xprintf("%s/config/agentmux/config", dir);
	test_write_file(cfg, "[secret test]\nenv = TEST_TOKEN\n"
	    "from_env = AMX_TEST_SECRET\nhost = example.com\n");
	free(cfg);
	setenv("AMX_TEST_SECRET", SECRET, 1);
	sid = new_session(false);
	sdir = xprintf("%s/data/agentmux/sessions/%lld", dir, (long long)sid);
	test_sh_ok("mkdir -p %s/overlay/0/upper %s/overlay/0/work %s/overlay/1 && "
	    "printf '0\\tdir\\t%s\\n1\\tfile\\t%s\\n' > %s/overlays", sdir, sdir,
	    sdir, host, hostfile, sdir);
	return 0;
}

static int
teardown(void **state)
{
	test_sh_ok("rm -rf %s/outside", dir);
	test_rmtree(dir);
	free(dir);
	free(host);
	free(hostfile);
	free(sdir);
	return 0;
}

/* What the agent does, through a real overlay (userxattr, as in the jail). */
static bool
agent_through_overlay(void)
{
	return test_sh("unshare -rm sh -c 'mkdir -p %s/m && mount -t overlay "
	    "overlay -o userxattr,lowerdir=%s,upperdir=%s/overlay/0/upper,"
	    "workdir=%s/overlay/0/work %s/m && cd %s/m && "
	    "sed -i s/dark/light/ settings.json && echo \"token = %s\" >> "
	    "settings.json && rm old.txt && rm -r plugins && rm -r keep && "
	    "mkdir keep && echo new > keep/c && echo fresh > new.txt && "
	    "printf \"\\001\\000\\003\" > blob.bin && chmod 755 tool.sh && "
	    "ln -sfn new.txt link && touch sub/s' 2>/dev/null", dir, host,
	    sdir, sdir, dir, dir, TOKEN) == 0;
}

static char *
confdiff(int want, const char *a1, const char *a2, const char *a3)
{
	struct test_run r;
	char *out, id[24];

	snprintf(id, sizeof id, "%lld", (long long)sid);
	test_amx(&r, "confdiff", id, a1, a2, a3, NULL);
	if (r.status != want)
		fail_msg("confdiff exited %d: %s%s", r.status, r.out, r.err);
	out = xprintf("%s%s", r.out, r.err);
	test_run_free(&r);
	return out;
}

static int
pending(void)
{
	struct store *st;
	char *cause = NULL;
	int n;

	st = store_open(NULL, &cause);
	n = snap_confdiff_pending(st, sid);
	store_close(st);
	return n;
}

static void
test_overlay_changes(void **state)
{
	char *out, *p;

	if (!agent_through_overlay())
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	test_sh_ok("cp %s %s/overlay/1/file && echo 'editor = ed' >> "
	    "%s/overlay/1/file", hostfile, sdir, sdir);
	/* The kernel's own whiteouts and opaque dirs. */
	test_sh_ok("test -c %s/overlay/0/upper/old.txt && test -c "
	    "%s/overlay/0/upper/plugins", sdir, sdir);

	out = confdiff(0, NULL, NULL, NULL);
	p = xprintf("modified %s/settings.json", host);
	assert_non_null(strstr(out, p));
	free(p);
	assert_non_null(strstr(out, "-  \"theme\": \"dark\""));
	assert_non_null(strstr(out, "+  \"theme\": \"light\""));
	assert_non_null(strstr(out, "\"apiKey\": \"[REDACTED]\""));
	assert_non_null(strstr(out, "+token = [REDACTED]"));
	assert_null(strstr(out, TOKEN));
	assert_non_null(strstr(out, "deleted directory: 1 file"));
	assert_non_null(strstr(out, "binary file: 3 -> 3 bytes"));
	assert_non_null(strstr(out, "mode 0700 -> 0755 (applied as 0700"));
	assert_non_null(strstr(out, "+symlink -> new.txt"));
	assert_non_null(strstr(out, "+editor = ed"));
	/* keep/ was replaced by an opaque dir: a and b deleted, c added. */
	p = xprintf("deleted %s/keep/a", host);
	assert_non_null(strstr(out, p));
	free(p);
	p = xprintf("added %s/keep/c", host);
	assert_non_null(strstr(out, p));
	free(p);
	/* A copy-up without a change (touch) is no change. */
	assert_null(strstr(out, "sub/s"));
	free(out);
	assert_int_equal(pending(), 11);

	/* File by file: one applied, one discarded. */
	p = xprintf("%s/settings.json", host);
	out = confdiff(0, p, "--apply", NULL);
	assert_non_null(strstr(out, "applied"));
	free(out);
	test_sh_ok("grep -q light %s && grep -q 'token = ' %s", p, p);
	free(p);
	p = xprintf("%s/old.txt", host);
	out = confdiff(0, "--discard", p, NULL);
	assert_non_null(strstr(out, "discarded"));
	free(out);
	test_sh_ok("test -f %s", p);
	free(p);
	assert_int_equal(pending(), 9);
	out = confdiff(0, NULL, NULL, NULL);
	p = xprintf("modified %s/settings.json", host);
	assert_null(strstr(out, p));
	free(p);
	assert_null(strstr(out, "old.txt"));
	free(out);

	/* The rest: deletions, the opaque dir, modes, links, the file entry. */
	out = confdiff(0, "--apply", NULL, NULL);
	free(out);
	assert_int_equal(pending(), 0);
	test_sh_ok("cd %s && test -f old.txt && ! test -e plugins && ! test -e keep/a "
	    "&& ! test -e keep/b && grep -q new keep/c && grep -q fresh new.txt "
	    "&& test \"$(stat -c %%a tool.sh)\" = 700 && test \"$(readlink "
	    "link)\" = new.txt && printf '\\001\\000\\003' | cmp - blob.bin && "
	    "grep -q ed %s", host, hostfile);
	out = confdiff(0, NULL, NULL, NULL);
	assert_non_null(strstr(out, "no pending config changes"));
	free(out);
}

/* Whiteouts and opaque dirs made by hand, as a root-run overlay leaves them. */
static void
test_by_hand(void **state)
{
	char *u, *p, *out;

	if (geteuid() != 0)
		test_skip("mknod of a whiteout and trusted.* xattrs need root");
	u = xprintf("%s/overlay/0/upper", sdir);
	p = xprintf("%s/old.txt", u);
	assert_int_equal(mknod(p, S_IFCHR | 0600, makedev(0, 0)), 0);
	free(p);
	p = xprintf("%s/keep", u);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	free(p);
	p = xprintf("%s/keep/b", u);
	test_write_file(p, "k2 changed\n");
	free(p);
	out = confdiff(0, NULL, NULL, NULL);
	assert_non_null(strstr(out, "deleted "));
	assert_non_null(strstr(out, "/old.txt"));
	assert_non_null(strstr(out, "/keep/a"));
	assert_non_null(strstr(out, "+k2 changed"));
	free(out);
	assert_int_equal(pending(), 3);
	free(confdiff(0, "--discard", NULL, NULL));
	assert_int_equal(pending(), 0);
	test_sh_ok("test -f %s/old.txt && test -f %s/keep/a", host, host);
	free(u);
}

/*
 * The overlaid dir is not on the host yet (the agent made ~/.claude in the
 * jail): applying makes it, with what is under it, instead of failing on
 * each file with "cannot open".
 */
static void
test_absent_root(void **state)
{
	char *out;

	test_sh_ok("rm -rf %s && mkdir -p %s/overlay/0/upper/sub && "
	    "chmod 750 %s/overlay/0/upper && echo '{}' > "
	    "%s/overlay/0/upper/settings.json && echo x > "
	    "%s/overlay/0/upper/sub/x", host, sdir, sdir, sdir, sdir);
	assert_int_equal(pending(), 2);
	out = confdiff(0, "--apply", NULL, NULL);
	assert_null(strstr(out, "cannot open"));
	assert_non_null(strstr(out, "applied"));
	free(out);
	assert_int_equal(pending(), 0);
	test_sh_ok("test \"$(cat %s/settings.json)\" = '{}' && "
	    "test \"$(cat %s/sub/x)\" = x && "
	    "test \"$(stat -c %%a %s)\" = 750", host, host, host);
}

/* An agent-made dir where the host has a symlink is never written through. */
static void
test_no_symlink_follow(void **state)
{
	char *out, *p;

	test_sh_ok("mkdir -p %s/outside && ln -s %s/outside %s/esc && mkdir -p "
	    "%s/overlay/0/upper/esc && echo x > %s/overlay/0/upper/esc/planted",
	    dir, dir, host, sdir, sdir);
	/* Alone, the file would go through the host's symlink: refused. */
	p = xprintf("%s/esc/planted", host);
	out = confdiff(1, "--apply", p, NULL);
	assert_non_null(strstr(out, "not followed"));
	free(out);
	free(p);
	test_sh_ok("! test -e %s/outside/planted", dir);
	/* With the agent's replacing of the symlink by a dir, it is a dir of its own. */
	out = confdiff(0, "--apply", NULL, NULL);
	free(out);
	test_sh_ok("! test -e %s/outside/planted && ! test -L %s/esc && test -f "
	    "%s/esc/planted", dir, host, host);
}

/* How often NEEDLE occurs in HAY. */
static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)) != NULL; hay++)
		n++;
	return n;
}

/*
 * Links the session made that point out of the config dir (absolute, or
 * climbing above it with ..): said in red in the review, left pending by
 * --apply, installed only by --apply --force with their path. Links
 * inside the dir are applied as any change.
 */
static void
test_link_out_refused(void **state)
{
	char *out, *p;

	test_sh_ok("mkdir -p %s/overlay/0/upper/sub && cd %s/overlay/0/upper && "
	    "ln -s ../.bashrc settings.json && ln -s /etc/passwd pw && "
	    "ln -s .. up && ln -s sub/../../x sneak && ln -s ../old.txt sub/ok "
	    "&& ln -s ./keep/a in", sdir, sdir);
	out = confdiff(0, NULL, NULL, NULL);
	assert_int_equal(count(out, "this link points out of the config dir"),
	    4);
	free(out);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_int_equal(count(out, "is a link the session made that points "
	    "out of its config dir"), 4);
	p = xprintf("'agentmux confdiff %lld --apply --force %s/pw'",
	    (long long)sid, host);
	assert_non_null(strstr(out, p));
	free(p);
	free(out);
	test_sh_ok("cd %s && test -f settings.json && ! test -L settings.json && "
	    "! test -e pw && ! test -L pw && ! test -L up && ! test -L sneak && "
	    "test \"$(readlink sub/ok)\" = ../old.txt && "
	    "test \"$(readlink in)\" = ./keep/a", host);
	assert_int_equal(pending(), 4);
	/* A blanket --force does not take them. */
	free(confdiff(1, "--apply", "--force", NULL));
	assert_int_equal(pending(), 4);
	p = xprintf("%s/pw", host);
	free(confdiff(0, "--apply", "--force", p));
	free(p);
	test_sh_ok("test \"$(readlink %s/pw)\" = /etc/passwd", host);
	assert_int_equal(pending(), 3);
	free(confdiff(0, "--discard", NULL, NULL));
	assert_int_equal(pending(), 0);
	test_sh_ok("cd %s && ! test -L settings.json && ! test -L up", host);
}

/* A link that climbs out through another link (b -> ., then b/b/../..) is out too; the way is read as applying leaves it. */
static void
test_link_through_link(void **state)
{
	char *out;

	test_sh_ok("cd %s && ln -sfn . hostlink && mkdir -p realdir && "
	    "mkdir -p %s/overlay/0/upper/sub && cd %s/overlay/0/upper && "
	    "ln -s . b && ln -s b/b/b/../../../x settings.json && "
	    "ln -s b/.. up && ln -s hostlink/../y via && "
	    "ln -s realdir/../realdir/f fine && ln -s b chain && "
	    "ln -s ../sub/./f sub/ok", host, sdir, sdir);
	out = confdiff(0, NULL, NULL, NULL);
	assert_int_equal(count(out, "this link points out of the config dir"),
	    3);
	free(out);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_int_equal(count(out, "is a link the session made that points "
	    "out of its config dir"), 3);
	free(out);
	test_sh_ok("cd %s && ! test -L settings.json && ! test -L up && "
	    "! test -L via && test -L b && test -L fine && test -L chain && "
	    "test -L sub/ok", host);
}

static void
test_refused_while_running(void **state)
{
	char *out;

	sid = new_session(true);
	free(sdir);
	sdir = xprintf("%s/data/agentmux/sessions/%lld", dir, (long long)sid);
	test_sh_ok("mkdir -p %s/overlay/1 && printf '1\\tfile\\t%s\\n' > %s/overlays && "
	    "echo 'editor = x' > %s/overlay/1/file", sdir, hostfile, sdir, sdir);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "still running"));
	free(out);
	/* Showing is fine while it runs. */
	out = confdiff(0, NULL, NULL, NULL);
	assert_non_null(strstr(out, "+editor = x"));
	free(out);
	test_sh_ok("grep -q vi %s", hostfile);
}

static void
test_persist_at_end(void **state)
{
	struct config *cf = config_default();
	struct store *st;
	char *cause = NULL;

	test_sh_ok("echo 'editor = always' > %s/overlay/1/file", sdir);
	st = store_open(NULL, &cause);
	assert_int_equal(snap_confdiff_session_end(st, cf, sid,
	    CONFIG_PERSIST_REVIEW, &cause), 0);
	assert_int_equal(snap_confdiff_pending(st, sid), 1);
	assert_int_equal(snap_confdiff_session_end(st, cf, sid,
	    CONFIG_PERSIST_ALWAYS, &cause), 1);
	assert_int_equal(snap_confdiff_pending(st, sid), 0);
	store_close(st);
	test_sh_ok("grep -q always %s", hostfile);
	config_free(cf);
}

/* A file entry the agent removed: overlay/<n>/deleted instead of a copy. */
static void
test_file_deleted(void **state)
{
	char *out;

	test_sh_ok("touch %s/overlay/1/deleted", sdir);
	out = confdiff(0, NULL, NULL, NULL);
	assert_non_null(strstr(out, "deleted"));
	assert_non_null(strstr(out, hostfile));
	assert_non_null(strstr(out, "-editor = vi"));
	free(out);
	out = confdiff(0, "--apply", hostfile, NULL);
	free(out);
	assert_int_equal(access(hostfile, F_OK), -1);
	/* No copy and no mark: nothing to review (the host had no file). */
	test_sh_ok("rm %s/overlay/1/deleted && echo 'editor = new' > %s", sdir,
	    hostfile);
	assert_int_equal(pending(), 0);
}

/*
 * A set-uid file in the upper dir (a jail's root made a root shell in its
 * config dir) is applied without the bit, and the user is told.
 */
static void
test_setid_not_applied(void **state)
{
	struct stat sb;
	char *out, *p;

	test_sh_ok("cp /bin/true %s/overlay/0/upper/tool && chmod 4755 "
	    "%s/overlay/0/upper/tool && mkdir %s/overlay/0/upper/gdir && "
	    "chmod 2755 %s/overlay/0/upper/gdir && echo x > "
	    "%s/overlay/0/upper/gdir/f", sdir, sdir, sdir, sdir, sdir);
	out = confdiff(0, "--apply", NULL, NULL);
	p = xprintf("%s/tool", host);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0755);
	free(p);
	p = xprintf("%s/gdir", host);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & (S_ISUID | S_ISGID), 0);
	free(p);
	assert_non_null(strstr(out, "set-uid/set-gid bit was not applied"));
	free(out);
}

/*
 * A private file the agent changed and opened to everyone (0600 made
 * 0666): the diff says so whatever the size or content (a text change of
 * another size, a binary file, a large file), and applying keeps it 0600;
 * the owner's bits are the session's (a script made executable).
 */
static void
test_mode_not_widened(void **state)
{
	const char *names[] = { "cred", "cred.bin", "cred.big" };
	char *out, *p;
	size_t i;

	test_sh_ok("cd %s && echo key=1 > cred && printf '\\001\\000' > "
	    "cred.bin && head -c 2000000 /dev/zero | tr '\\0' a > cred.big "
	    "&& chmod 600 cred cred.bin cred.big && echo run > hook && "
	    "chmod 644 hook", host);
	test_sh_ok("cd %s/overlay/0/upper && echo 'key=1 # refreshed' > cred "
	    "&& printf '\\001\\000\\001' > cred.bin && head -c 2000001 "
	    "/dev/zero | tr '\\0' b > cred.big && chmod 666 cred cred.bin "
	    "cred.big && echo run2 > hook && chmod 777 hook", sdir);
	out = confdiff(0, NULL, NULL, NULL);
	for (i = 0; i < 3; i++) {
		p = xprintf("+++ b%s/%s\nmode 0600 -> 0666 (applied as "
		    "0600", host, names[i]);
		if (strstr(out, p) == NULL)
			fail_msg("no mode line for %s in:\n%s", names[i], out);
		free(p);
	}
	assert_non_null(strstr(out, "mode 0644 -> 0777 (applied as 0744"));
	free(out);
	free(confdiff(0, "--apply", NULL, NULL));
	test_sh_ok("cd %s && for f in cred cred.bin cred.big; do test "
	    "\"$(stat -c %%a $f)\" = 600 || exit 1; done && grep -q refreshed "
	    "cred && test \"$(stat -c %%a hook)\" = 744", host);
}

#define HEX32 "3f9a0c2e7b1d4a6f8e0c9b7a5d3e1f20"

static void
test_redact_lines(void **state)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
		{ "+  \"api_key\": \"abc123xyz\",", "+  \"api_key\": \"[REDACTED]\"," },
		{ " \"maxTokens\": 4096,", " \"maxTokens\": 4096," },
		{ "-export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwx",
		  "-export GITHUB_TOKEN=[REDACTED]" },
		{ "+Authorization: Bearer abcdefgh12345", "+Authorization: Bearer [REDACTED]" },
		{ "+password: hunter22", "+password: [REDACTED]" },
		{ "+db_password = 'x'", "+db_password = 'x'" },
		{ "+theme = dark", "+theme = dark" },
		{ "+use " TOKEN " here", "+use [REDACTED] here" },
		{ "+aws AKIAABCDEFGHIJKLMNOP", "+aws [REDACTED]" },
		{ "+sha 0123456789abcdef0123456789abcdef01234567",
		  "+sha 0123456789abcdef0123456789abcdef01234567" },
		{ " MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
		  " [REDACTED]" },
		{ "+the value " SECRET " leaked", "+the value [REDACTED] leaked" },
		/* A key decides, never a word in prose. */
		{ "+{\"sessionId\":\"0f8e2c1a-5b7d-4e21-9c3a-7d2e8f6a1b90\","
		  "\"apiKey\":\"k3yv4lu3z\"}", "+{\"sessionId\":\"0f8e2c1a-5b7d-"
		  "4e21-9c3a-7d2e8f6a1b90\",\"apiKey\":\"[REDACTED]\"}" },
		{ "+token counting, model migration", "+token counting, model "
		  "migration" },
		{ "+Use a token generator when needed", "+Use a token generator "
		  "when needed" },
		{ "+TOKEN=t0k3nv4lue", "+TOKEN=[REDACTED]" },
		{ "+author = Jane Doe", "+author = Jane Doe" },
		{ "+keyboard: dvorak", "+keyboard: dvorak" },
		{ "+token_type = Bearer", "+token_type = Bearer" },
		{ "+sessionKey: abcd1234efgh", "+sessionKey: [REDACTED]" },
		{ "+AWS_SECRET_ACCESS_KEY=abc123def456", "+AWS_SECRET_ACCESS_KEY="
		  "[REDACTED]" },
		{ "+  client_secret: \"abcdefgh\"", "+  client_secret: \"[REDACTED]\"" },
		{ "+x-api-key: abcdefgh", "+x-api-key: [REDACTED]" },
		{ "+prefix" SECRET "suffix", "+prefix[REDACTED]suffix" },
		/* Any key, or a plural of a credential word, under any name. */
		{ "+MAILGUN_KEY=key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
		  "+MAILGUN_KEY=[REDACTED]" },
		{ "+{\"key\": \"3f9a0c2e7b1d4a6f8e0c9b7a5d3e1f20\"}",
		  "+{\"key\": \"[REDACTED]\"}" },
		{ "+{\"hmacKey\": \"" HEX32 HEX32 "\"}",
		  "+{\"hmacKey\": \"[REDACTED]\"}" },
		{ "+{\"secret_key_base\": \"" HEX32 HEX32 HEX32 HEX32 "\"}",
		  "+{\"secret_key_base\": \"[REDACTED]\"}" },
		{ "+tokens: abcd1234", "+tokens: [REDACTED]" },
		{ "+secrets = s3cr3tval", "+secrets = [REDACTED]" },
		{ "+{\"passwords\": \"hunter22\"}",
		  "+{\"passwords\": \"[REDACTED]\"}" },
		{ "+{\"apiKeys\": \"k3yv4lu3z\"}",
		  "+{\"apiKeys\": \"[REDACTED]\"}" },
		/* Commands and harmless keys stay visible. */
		{ "+{\"apiKeyHelper\": \"~/bin/get-key.sh\"}",
		  "+{\"apiKeyHelper\": \"~/bin/get-key.sh\"}" },
		{ "+{\"awsAuthRefresh\": \"aws sso login\"}",
		  "+{\"awsAuthRefresh\": \"aws sso login\"}" },
		{ "+primary_key = user_id", "+primary_key = user_id" },
		{ "+sortKey: createdAt", "+sortKey: createdAt" },
	};
	char *secrets[] = { (char *)SECRET }, *out;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		out = snap_redact_line(cases[i].in, secrets, 1);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("redact '%s' gave '%s', not '%s'", cases[i].in,
			    out, cases[i].want);
		free(out);
	}
}

/* Real files an agent wrote into its config dir: only secrets and values under credential keys are hidden. */
static void
test_redact_files(void **state)
{
	char *out;

	test_sh_ok("cd %s/overlay/0/upper && printf '{\"sessionId\":\""
	    "0f8e2c1a-5b7d-4e21-9c3a-7d2e8f6a1b90\",\"apiKey\":\"k3yv4lu3z\"}"
	    "\\n' > session.json && printf 'TOKEN=t0k3nv4lue\\nEDITOR=vi\\n' > "
	    ".env && printf 'Changes: token counting, model migration\\n' > "
	    "notes.md && printf 'pasted:%s:here\\n' > other.txt", sdir, SECRET);
	out = confdiff(0, NULL, NULL, NULL);
	assert_non_null(strstr(out, "\"sessionId\":\"0f8e2c1a-5b7d-4e21-9c3a-"
	    "7d2e8f6a1b90\""));
	assert_non_null(strstr(out, "\"apiKey\":\"[REDACTED]\""));
	assert_null(strstr(out, "k3yv4lu3z"));
	assert_non_null(strstr(out, "+TOKEN=[REDACTED]"));
	assert_non_null(strstr(out, "+EDITOR=vi"));
	assert_null(strstr(out, "t0k3nv4lue"));
	assert_non_null(strstr(out, "+Changes: token counting, model migration"));
	assert_non_null(strstr(out, "+pasted:[REDACTED]:here"));
	assert_null(strstr(out, SECRET));
	free(out);
}

/*
 * Three-way apply: the session's start is kept (snap_confdiff_base, as
 * session setup calls it), then the session changes its copies and the
 * host (another session's apply, say) changes the same files.
 */
static void
take_base(void)
{
	char *e0 = xprintf("%s/overlay/0", sdir), *e1 = xprintf("%s/overlay/1",
	    sdir), *cause = NULL;

	assert_int_equal(snap_confdiff_base(host, e0, false, &cause), 0);
	assert_int_equal(snap_confdiff_base(hostfile, e1, true, &cause), 0);
	free(e0);
	free(e1);
}

static char *
host_text(const char *name)
{
	char *p = xprintf("%s/%s", host, name), *t = test_read_file(p);

	free(p);
	return t;
}

/* Disjoint keys merge, nested too; the host file's indentation stays. */
static void
test_merge_json(void **state)
{
	char *out, *t;

	test_sh_ok("cd %s && printf '{\\n  \"theme\": \"dark\",\\n  "
	    "\"projects\": {\"/a\": {\"n\": 1}}\\n}\\n' > settings.json", host);
	take_base();
	test_sh_ok("printf '{\"theme\": \"dark\", \"model\": \"opus\", "
	    "\"projects\": {\"/a\": {\"n\": 1}, \"/b\": {\"n\": 2}}}' > "
	    "%s/overlay/0/upper/settings.json", sdir);
	test_sh_ok("cd %s && printf '{\\n  \"theme\": \"dark\",\\n  "
	    "\"editor\": \"vim\",\\n  \"projects\": {\"/a\": {\"n\": 3}}\\n}\\n' "
	    "> settings.json", host);
	out = confdiff(0, "--apply", NULL, NULL);
	assert_null(strstr(out, "conflict"));
	assert_non_null(strstr(out, "applied"));
	free(out);
	t = host_text("settings.json");
	assert_string_equal(t, "{\n  \"theme\": \"dark\",\n  \"editor\": "
	    "\"vim\",\n  \"projects\": {\n    \"/a\": {\n      \"n\": 3\n    },\n"
	    "    \"/b\": {\n      \"n\": 2\n    }\n  },\n  \"model\": \"opus\"\n}\n");
	free(t);
	assert_int_equal(pending(), 0);
}

/* The same key changed on both sides: shown, nothing written, --force takes it. */
static void
test_merge_json_conflict(void **state)
{
	char *out, *t;

	take_base();
	test_sh_ok("printf '{\"theme\": \"light\", \"apiKey\": \"%s\"}\\n' > "
	    "%s/overlay/0/upper/settings.json", TOKEN, sdir);
	test_sh_ok("printf '{\"theme\": \"blue\", \"apiKey\": \"%s\"}\\n' > "
	    "%s/settings.json", TOKEN, host);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "conflict"));
	assert_non_null(strstr(out, "settings.json"));
	assert_non_null(strstr(out, "          theme\n"));
	assert_null(strstr(out, "apiKey"));
	assert_non_null(strstr(out, "0 applied, 1 conflict"));
	free(out);
	t = host_text("settings.json");
	assert_non_null(strstr(t, "blue"));
	free(t);
	assert_int_equal(pending(), 1);
	free(confdiff(0, "--apply", "--force", NULL));
	t = host_text("settings.json");
	assert_non_null(strstr(t, "light"));
	free(t);
	assert_int_equal(pending(), 0);
}

/* Text: edits to different lines merge; the same line conflicts, redacted. */
static void
test_merge_text(void **state)
{
	char *out, *t;

	test_sh_ok("cd %s && printf 'a\\nb\\nc\\nd\\ne\\nf\\n' > notes.txt && "
	    "printf 'k=1\\nz=2\\n' > keys.txt && echo s > sub/s", host);
	take_base();
	test_sh_ok("cd %s/overlay/0/upper && printf 'A\\nb\\nc\\nd\\ne\\nf\\n' "
	    "> notes.txt && printf 'k=%s\\nz=2\\n' > keys.txt", sdir, SECRET);
	test_sh_ok("cd %s && printf 'a\\nb\\nc\\nd\\ne\\nF\\n' > notes.txt && "
	    "printf 'k=9\\nz=2\\n' > keys.txt", host);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "keys.txt: the host changed it too"));
	assert_non_null(strstr(out, "<<<<<<< host now"));
	assert_non_null(strstr(out, "k=9"));
	assert_non_null(strstr(out, "k=[REDACTED]"));
	assert_null(strstr(out, SECRET));
	assert_non_null(strstr(out, "1 applied, 1 conflict"));
	free(out);
	t = host_text("notes.txt");
	assert_string_equal(t, "A\nb\nc\nd\ne\nF\n");
	free(t);
	t = host_text("keys.txt");
	assert_string_equal(t, "k=9\nz=2\n");
	free(t);
}

/* Both appended to a log (history.jsonl): both appends are kept. */
static void
test_merge_append(void **state)
{
	char *t;

	test_sh_ok("cd %s && printf '{\"q\":1}\\n' > history.jsonl", host);
	take_base();
	test_sh_ok("printf '{\"q\":1}\\n{\"q\":3}\\n' > "
	    "%s/overlay/0/upper/history.jsonl", sdir);
	test_sh_ok("printf '{\"q\":2}\\n' >> %s/history.jsonl", host);
	free(confdiff(0, "--apply", NULL, NULL));
	t = host_text("history.jsonl");
	assert_string_equal(t, "{\"q\":1}\n{\"q\":2}\n{\"q\":3}\n");
	free(t);
}

/*
 * A file entry (~/.agentrc): merged against its start copy. A session
 * deleting what the host changed since is a conflict; a file the host
 * left alone since the start is applied as it is (the host's file in
 * between is what the session started from).
 */
static void
test_merge_file_entry(void **state)
{
	char *out, *t;

	test_sh_ok("printf 'editor = vi\\n#\\npager = less\\n' > %s",
	    hostfile);
	take_base();
	test_sh_ok("printf 'editor = emacs\\n#\\npager = less\\n' > "
	    "%s/overlay/1/file", sdir);
	test_sh_ok("printf 'editor = vi\\n#\\npager = more\\n' > %s",
	    hostfile);
	free(confdiff(0, "--apply", NULL, NULL));
	t = test_read_file(hostfile);
	assert_string_equal(t, "editor = emacs\n#\npager = more\n");
	free(t);
	/* Deleted in the session, changed on the host: a conflict. */
	test_sh_ok("cd %s && echo x > gone.txt", host);
	take_base();
	test_sh_ok("mknod %s/overlay/0/upper/gone.txt c 0 0 2>/dev/null || "
	    "true; echo y > %s/gone.txt", sdir, host);
	if (geteuid() == 0) {
		out = confdiff(1, "--apply", NULL, NULL);
		assert_non_null(strstr(out, "the session deleted it"));
		free(out);
		test_sh_ok("test \"$(cat %s/gone.txt)\" = y", host);
	}
}

/* The agent removes dirs, through a real overlay: SCRIPT runs in it. */
static bool
agent_removes(const char *script)
{
	return test_sh("unshare -rm sh -c 'mkdir -p %s/m && mount -t overlay "
	    "overlay -o userxattr,lowerdir=%s,upperdir=%s/overlay/0/upper,"
	    "workdir=%s/overlay/0/work %s/m && cd %s/m && %s' 2>/dev/null",
	    dir, host, sdir, sdir, dir, dir, script) == 0;
}

/*
 * A dir the session deleted (rm -rf ~/.claude/projects) under which the
 * host wrote since the start, or holds what the start copy has not: a
 * conflict, listing those files; nothing removed until --force. A dir
 * with nothing of the host's since goes. A file replacing a dir is
 * checked the same way.
 */
static void
test_merge_dir_deleted(void **state)
{
	char *out;

	take_base();
	/* keep becomes a file: its dir is removed for it, so it is checked too. */
	if (!agent_removes("rm -r plugins keep sub && echo f > keep"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	/* The host writes after the start; a file the start copy missed. */
	test_sh_ok("echo late > %s/plugins/p/late && rm %s/overlay/0/base/keep/b",
	    host, sdir);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "plugins: the host changed it too"));
	assert_non_null(strstr(out, "plugins/p/late: changed on the host "
	    "since the session started"));
	assert_null(strstr(out, "plugins/p/x:"));
	assert_non_null(strstr(out, "keep: the host changed it too"));
	assert_non_null(strstr(out, "keep/b: not in the session's start copy"));
	assert_null(strstr(out, "keep/a:"));
	assert_non_null(strstr(out, "applied   deleted  "));
	assert_non_null(strstr(out, "1 applied, 2 conflicts"));
	free(out);
	test_sh_ok("cd %s && test -f plugins/p/late && test -f plugins/p/x && "
	    "test -f keep/a && test -f keep/b && ! test -e sub", host);
	assert_int_equal(pending(), 2);
	free(confdiff(0, "--apply", "--force", NULL));
	test_sh_ok("cd %s && ! test -e plugins && test \"$(cat keep)\" = f",
	    host);
	assert_int_equal(pending(), 0);
}

struct end_seen {
	int calls;
	int n;
	char *cause;
};

static void
end_done(void *arg, int n, const char *cause)
{
	struct end_seen *e = arg;

	e->calls++;
	e->n = n;
	e->cause = cause != NULL ? xstrdup(cause) : NULL;
}

/*
 * config_persist = always off the loop (snap_confdiff_end_start): the
 * child applies what merges and the server records it; a conflict is
 * recorded as one, stays pending and is told; a set-id bit dropped is
 * flagged as tampering in the server's store.
 */
static void
test_persist_at_end_child(void **state)
{
	struct config *cf = config_default();
	struct end_seen seen = { 0 };
	struct event_base *base = event_base_new();
	struct store_session *ss;
	struct store *st;
	char *cause = NULL, *t;
	int i;

	take_base();
	test_sh_ok("printf '{\"theme\": \"light\"}\\n' > "
	    "%s/overlay/0/upper/settings.json && echo x > "
	    "%s/overlay/0/upper/tool.sh && chmod 4755 "
	    "%s/overlay/0/upper/tool.sh && echo 'editor = end' > "
	    "%s/overlay/1/file", sdir, sdir, sdir, sdir);
	test_sh_ok("printf '{\"theme\": \"blue\"}\\n' > %s/settings.json",
	    host);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	assert_non_null(snap_confdiff_end_start(base, st, sid,
	    CONFIG_PERSIST_ALWAYS, end_done, &seen, &cause));
	assert_int_equal(snap_confdiff_endings(), 1);
	for (i = 0; i < 100000 && snap_confdiff_endings() > 0; i++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.n, -1);
	assert_non_null(strstr(seen.cause, "1 change conflicts"));
	assert_int_equal(snap_confdiff_pending(st, sid), 1);
	ss = store_session_get(st, sid);
	assert_non_null(ss);
	assert_non_null(ss->flags);
	assert_non_null(strstr(ss->flags, "tampering"));
	store_session_free(ss);
	store_close(st);
	t = host_text("settings.json");
	assert_non_null(strstr(t, "blue"));
	free(t);
	test_sh_ok("grep -q end %s && test \"$(stat -c %%a %s/tool.sh)\" = "
	    "700", hostfile, host);
	free(seen.cause);
	event_base_free(base);
	config_free(cf);
}

/* Runs the session end's child (config_persist = always) to its end. */
static void
end_run(struct end_seen *seen)
{
	struct event_base *base = event_base_new();
	struct store *st;
	char *cause = NULL;
	int i;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	assert_non_null(snap_confdiff_end_start(base, st, sid,
	    CONFIG_PERSIST_ALWAYS, end_done, seen, &cause));
	for (i = 0; i < 100000 && snap_confdiff_endings() > 0; i++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	store_close(st);
	event_base_free(base);
}

/*
 * What a SIGKILLed run leaves in a host dir (a temp of its exact name,
 * made before the rename it never got to) is removed by the next run on
 * that dir, the session end's child and confdiff --discard alike: our
 * temp files and links (the link, never what it names). Names not
 * exactly ours, and a dir of our name, stay.
 */
static void
test_stale_temps_swept(void **state)
{
	struct end_seen seen = { 0 };

	take_base();
	test_sh_ok("mkdir -p %s/outside && echo t > %s/outside/target && "
	    "cd %s && echo half > .settings.json.agentmux-0123456789ab && "
	    "ln -s %s/outside/target .link.agentmux-a1b2c3d4e5f6 && "
	    "echo u > .x.agentmux-0123456789abc && "
	    "echo u > .y.agentmux-0123456789AB && echo u > .agentmux-"
	    "0123456789ab && mkdir .d.agentmux-0123456789ab",
	    dir, dir, host, dir);
	test_sh_ok("printf '{\"theme\": \"light\"}\\n' > "
	    "%s/overlay/0/upper/settings.json", sdir);
	end_run(&seen);
	assert_int_equal(seen.n, 1);
	test_sh_ok("cd %s && grep -q light settings.json && "
	    "! test -e .settings.json.agentmux-0123456789ab && "
	    "! test -L .link.agentmux-a1b2c3d4e5f6 && "
	    "test \"$(cat %s/outside/target)\" = t && "
	    "test -f .x.agentmux-0123456789abc && "
	    "test -f .y.agentmux-0123456789AB && test -f .agentmux-0123456789ab "
	    "&& test -d .d.agentmux-0123456789ab", host, dir);
	test_sh_ok("echo half > %s/.new.txt.agentmux-ffffffffffff && "
	    "echo n > %s/overlay/0/upper/new.txt", host, sdir);
	assert_int_equal(pending(), 1);
	free(confdiff(0, "--discard", NULL, NULL));
	test_sh_ok("! test -e %s/.new.txt.agentmux-ffffffffffff && "
	    "! test -e %s/new.txt", host, host);
	free(seen.cause);
}

/* The host writes under plugins as a run is about to remove it. */
static void
race_write(const char *path)
{
	size_t n = strlen(path);

	if (n > 8 && strcmp(path + n - 8, "/plugins") == 0)
		test_sh_ok("mkdir -p %s/p && echo late > %s/p/late", path, path);
}

/*
 * A dir the session deleted is checked and removed as one: a host write
 * after its check (made here by a hook at that point) is not removed
 * with it. An aside dir a killed run left (.NAME.agentmux-aside-<hex>,
 * in the session's journal) goes back to NAME if NAME is free, and stays
 * if not.
 */
static void
test_dir_removal_race(void **state)
{
	struct snap_confdiff_opts o;
	struct store *st;
	char *cause = NULL;
	int rc;

	take_base();
	if (!agent_removes("rm -r plugins"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	test_sh_ok("cd %s && mkdir .gone.agentmux-aside-0123456789ab && "
	    "echo g > .gone.agentmux-aside-0123456789ab/f && mkdir "
	    ".keep.agentmux-aside-00000000000a && printf '.gone.agentmux-"
	    "aside-0123456789ab\n.keep.agentmux-aside-00000000000a\n' "
	    ">>%s/asides", host, sdir);
	memset(&o, 0, sizeof o);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	snap_cc_dir_checked = race_write;
	rc = snap_confdiff_apply(st, sid, &o, true, &cause);
	snap_cc_dir_checked = NULL;
	if (rc == -1)
		fail_msg("apply: %s", cause);
	store_close(st);
	test_sh_ok("cd %s && test \"$(cat plugins/p/late)\" = late && "
	    "! test -e plugins/p/x", host);
	/* The aside it made for plugins is in the journal, before the rename. */
	test_sh_ok("grep -q '^\\.plugins\\.agentmux-aside-[0-9a-f]\\{12\\}$' "
	    "%s/asides", sdir);
	test_sh_ok("cd %s && test \"$(cat gone/f)\" = g && ! test -e "
	    ".gone.agentmux-aside-0123456789ab && test -d "
	    ".keep.agentmux-aside-00000000000a && test -f keep/a && "
	    "test -z \"$(ls -A | grep -e -aside- -e '\\.agentmux-' | "
	    "grep -v 00000000000a)\"", host);
}

/* The host writes old.txt anew (at its path) as a run is about to remove it. */
static void
race_file_write(const char *path)
{
	size_t n = strlen(path);

	if (n > 8 && strcmp(path + n - 8, "/old.txt") == 0)
		test_sh_ok("echo late > %s", path);
}

/* Applies all in this process (where the hooks are); a conflict only if CONFLICT. */
static void
apply_all(bool conflict)
{
	struct snap_confdiff_opts o;
	struct store *st;
	char *cause = NULL;
	int rc;

	memset(&o, 0, sizeof o);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	rc = snap_confdiff_apply(st, sid, &o, true, &cause);
	if (rc == -1 && (!conflict || strstr(cause, "1 change conflicts with "
	    "the host") == NULL))
		fail_msg("apply: %s", cause);
	if (rc != -1 && conflict)
		fail_msg("apply found no conflict");
	free(cause);
	store_close(st);
}

/*
 * A file the session deleted is checked and removed as one, as a dir is:
 * a host write after its check (made here by a hook at that point) makes
 * a new file, which stays. A file a killed run left aside (in the
 * session's journal) goes back to its name.
 */
static void
test_file_removal_race(void **state)
{
	take_base();
	if (!agent_removes("rm old.txt"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	test_sh_ok("cd %s && echo g > .gone.txt.agentmux-aside-0123456789ab && "
	    "echo .gone.txt.agentmux-aside-0123456789ab >>%s/asides", host,
	    sdir);
	snap_cc_file_checked = race_file_write;
	apply_all(false);
	snap_cc_file_checked = NULL;
	test_sh_ok("cd %s && test \"$(cat old.txt)\" = late", host);
	test_sh_ok("grep -q '^\\.old\\.txt\\.agentmux-aside-[0-9a-f]\\{12\\}$' "
	    "%s/asides", sdir);
	test_sh_ok("cd %s && test \"$(cat gone.txt)\" = g && test -z "
	    "\"$(ls -A | grep -e -aside- -e '\\.agentmux-')\"", host);
	assert_int_equal(pending(), 0);
}

/*
 * The host changes a deleted file after it was found unchanged, before
 * it is moved aside (a hook at that point): the check of the moved file
 * sees it, and it goes back, a conflict, pending; --force removes it.
 */
static void
test_file_changed_before_aside(void **state)
{
	char *out;

	take_base();
	if (!agent_removes("rm old.txt"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	snap_cc_file_resolved = race_file_write;
	apply_all(true);
	snap_cc_file_resolved = NULL;
	test_sh_ok("cd %s && test \"$(cat old.txt)\" = late && test -z "
	    "\"$(ls -A | grep -e -aside- -e '\\.agentmux-')\"", host);
	assert_int_equal(pending(), 1);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "old.txt: the host changed it too"));
	free(out);
	free(confdiff(0, "--apply", "--force", NULL));
	test_sh_ok("! test -e %s/old.txt", host);
	assert_int_equal(pending(), 0);
}

/*
 * A run SIGKILLed while it held a deleted dir aside to check it: the
 * next run puts it back before it looks for changes, so the deletion is
 * pending again and checked (here a conflict: the host wrote under it),
 * instead of looking done with the user's dir hidden.
 */
static void
test_aside_restored(void **state)
{
	char *out;

	take_base();
	if (!agent_removes("rm -r plugins"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	test_sh_ok("cd %s && echo late > plugins/p/late && mv plugins "
	    ".plugins.agentmux-aside-0123456789ab && echo .plugins.agentmux-"
	    "aside-0123456789ab >>%s/asides", host, sdir);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, "plugins/p/late: changed on the host"));
	free(out);
	test_sh_ok("cd %s && test \"$(cat plugins/p/late)\" = late && "
	    "test -f plugins/p/x && ! test -e "
	    ".plugins.agentmux-aside-0123456789ab", host);
	assert_int_equal(pending(), 1);
}

/*
 * Names agentmux keeps for its asides and temps: one the agent made in
 * its config copy is not installed (said in red, pending, --discard drops
 * it); and an aside-named host dir that no run of the session journaled
 * is never moved into place by the sweep.
 */
static void
test_aside_name_refused(void **state)
{
	char *out;

	take_base();
	test_sh_ok("cd %s/overlay/0/upper && mkdir -p .agents.agentmux-aside-"
	    "0123456789ab .x.agentmux-00000000000b && echo evil > "
	    ".agents.agentmux-aside-0123456789ab/evil.md && echo t > "
	    ".x.agentmux-00000000000b/t && echo ok > fine.txt", sdir);
	out = confdiff(1, "--apply", NULL, NULL);
	assert_non_null(strstr(out, ".agents.agentmux-aside-0123456789ab has "
	    "a name agentmux gives its own temps"));
	assert_non_null(strstr(out, ".x.agentmux-00000000000b has a name"));
	free(out);
	test_sh_ok("cd %s && test \"$(cat fine.txt)\" = ok && ! test -e "
	    ".agents.agentmux-aside-0123456789ab && ! test -e "
	    ".x.agentmux-00000000000b && ! test -e agents", host);
	assert_int_equal(pending(), 2);
	out = confdiff(0, "--discard", NULL, NULL);
	free(out);
	assert_int_equal(pending(), 0);
	/* One on the host (applied by an older agentmux): left as it is. */
	test_sh_ok("cd %s && mkdir .agents.agentmux-aside-0123456789ab && "
	    "echo evil > .agents.agentmux-aside-0123456789ab/evil.md && "
	    "echo ok2 > %s/overlay/0/upper/fine2.txt", host, sdir);
	out = confdiff(0, "--apply", NULL, NULL);
	free(out);
	test_sh_ok("cd %s && test \"$(cat fine2.txt)\" = ok2 && test -f "
	    ".agents.agentmux-aside-0123456789ab/evil.md && ! test -e agents",
	    host);
}

/* The merge child's hook: it says it is there, then waits to be let go. */
static char *fifo_in, *fifo_go;

static void
hold_hook(const char *path)
{
	char c = 'i';
	int fd;

	if ((fd = open(fifo_in, O_WRONLY | O_CLOEXEC)) != -1) {
		(void)write(fd, &c, 1);
		close(fd);
	}
	if ((fd = open(fifo_go, O_RDONLY | O_CLOEXEC)) != -1) {
		(void)read(fd, &c, 1);
		close(fd);
	}
}

/* Waits until the merge child is in its hook (it blocks on the fifo). */
static void
hold_wait(void)
{
	char c;
	int fd = open(fifo_in, O_RDONLY | O_CLOEXEC);

	assert_true(fd != -1);
	assert_int_equal(read(fd, &c, 1), 1);
	close(fd);
}

static void
hold_release(void)
{
	int fd = open(fifo_go, O_WRONLY | O_CLOEXEC);

	assert_true(fd != -1);
	assert_int_equal(write(fd, "g", 1), 1);
	close(fd);
}

/*
 * apply and discard, while a merge is under way (held in its hook): both
 * refuse, and say so. The merge is let go before anything is asserted,
 * so that no failure here leaves it waiting.
 */
static void
refused_both(void)
{
	struct test_run a, d;
	char id[24];

	snprintf(id, sizeof id, "%lld", (long long)sid);
	test_amx(&a, "confdiff", id, "--apply", NULL);
	test_amx(&d, "confdiff", id, "--discard", NULL);
	hold_release();
	if (a.status != 1 || strstr(a.err, "being applied already") == NULL)
		fail_msg("--apply during a merge: %d %s%s", a.status, a.out,
		    a.err);
	if (d.status != 1 || strstr(d.err, "being applied already") == NULL)
		fail_msg("--discard during a merge: %d %s%s", d.status, d.out,
		    d.err);
	test_run_free(&a);
	test_run_free(&d);
}

/*
 * The session's confdiff.lock: while the session end's merge runs (held
 * here, mid-removal of a dir, by a hook), confdiff --apply and --discard
 * refuse (they do not wait) and change nothing; so too once the server
 * that started the merge is gone (SIGKILLed) and its child goes on.
 */
static void
test_lock_while_merging(void **state)
{
	struct end_seen seen = { 0 };
	struct event_base *base;
	struct store *st;
	char *cause = NULL, *lock;
	pid_t server;
	int i, fd;

	take_base();
	if (!agent_removes("rm -r plugins && echo n > old.txt"))
		test_skip("cannot mount overlayfs in a user namespace here "
		    "(unshare -rm mount -t overlay failed)");
	fifo_in = xprintf("%s/in", dir);
	fifo_go = xprintf("%s/go", dir);
	assert_int_equal(mkfifo(fifo_in, 0600), 0);
	assert_int_equal(mkfifo(fifo_go, 0600), 0);
	snap_cc_dir_checked = hold_hook;

	/* The server (this process) holds the merge's run. */
	base = event_base_new();
	st = store_open(NULL, &cause);
	assert_non_null(st);
	assert_non_null(snap_confdiff_end_start(base, st, sid,
	    CONFIG_PERSIST_ALWAYS, end_done, &seen, &cause));
	hold_wait();
	refused_both();
	for (i = 0; i < 100000 && snap_confdiff_endings() > 0; i++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	assert_int_equal(seen.calls, 1);
	store_close(st);
	event_base_free(base);

	/* The server dies mid-merge: its child still holds the lock. */
	assert_true(agent_removes("rm -r sub"));
	if ((server = fork()) == 0) {
		base = event_base_new();
		st = store_open(NULL, &cause);
		if (st == NULL || snap_confdiff_end_start(base, st, sid,
		    CONFIG_PERSIST_ALWAYS, NULL, NULL, &cause) == NULL)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_true(server > 0);
	hold_wait();
	assert_int_equal(kill(server, SIGKILL), 0);
	assert_int_equal(waitpid(server, NULL, 0), server);
	refused_both();
	/* The orphaned child's end lets the lock go: wait for that. */
	lock = xprintf("%s/confdiff.lock", sdir);
	fd = open(lock, O_RDWR | O_CLOEXEC);
	assert_true(fd != -1);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	close(fd);
	free(lock);
	snap_cc_dir_checked = NULL;
	free(seen.cause);
	free(fifo_in);
	free(fifo_go);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_overlay_changes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_redact_files, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_by_hand, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_not_widened, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_absent_root, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_no_symlink_follow, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_out_refused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_link_through_link, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refused_while_running, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_file_deleted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_persist_at_end, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_setid_not_applied, setup,
		    teardown),
		cmocka_unit_test(test_redact_lines),
		cmocka_unit_test_setup_teardown(test_merge_json, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merge_json_conflict, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merge_text, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merge_append, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merge_file_entry, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_merge_dir_deleted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_persist_at_end_child, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stale_temps_swept, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_file_removal_race, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_file_changed_before_aside,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_removal_race, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_lock_while_merging, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_aside_restored, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_aside_name_refused, setup,
		    teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
