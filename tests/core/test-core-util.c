/* Utilities: units, JSON output, word splitting and quoting, file comparison, descriptors passed over sockets. */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"

static void
test_durations(void **state)
{
	assert_int_equal(util_parse_duration("90"), 90);
	assert_int_equal(util_parse_duration("90s"), 90);
	assert_int_equal(util_parse_duration("15m"), 900);
	assert_int_equal(util_parse_duration("12h"), 43200);
	assert_int_equal(util_parse_duration("30d"), 2592000);
	assert_int_equal(util_parse_duration("2w"), 1209600);
	assert_int_equal(util_parse_duration("x"), -1);
	assert_int_equal(util_parse_duration("5y"), -1);
	assert_int_equal(util_parse_duration("-5"), -1);
	assert_int_equal(util_parse_duration("5mm"), -1);
}

static void
test_sizes(void **state)
{
	assert_int_equal(util_parse_size("512"), 512);
	assert_int_equal(util_parse_size("64K"), 65536);
	assert_int_equal(util_parse_size("512M"), 512LL << 20);
	assert_int_equal(util_parse_size("4G"), 4LL << 30);
	assert_int_equal(util_parse_size("4GiB"), 4LL << 30);
	assert_int_equal(util_parse_size("4gb"), 4LL << 30);
	assert_int_equal(util_parse_size("4Q"), -1);
	assert_int_equal(util_parse_size("G"), -1);
	assert_int_equal(util_parse_size("99999999999999T"), -1);
}

/* The free inodes disk_reserve keeps: 1%, at least 1000 or a tenth; none unknown. */
static void
test_inode_reserve(void **state)
{
	assert_int_equal(util_inode_reserve(0), 0);
	assert_int_equal(util_inode_reserve(1000), 100);
	assert_int_equal(util_inode_reserve(50000), 1000);
	assert_int_equal(util_inode_reserve(10000000), 100000);
	assert_int_equal(util_inode_reserve(UINT64_MAX), 0);
}

static void
test_json(void **state)
{
	struct json j;

	json_init(&j, false);
	json_obj_begin(&j);
	json_kstr(&j, "a", "x\"y\n\x01");
	json_kint(&j, "b", -3);
	json_key(&j, "c");
	json_arr_begin(&j);
	json_int(&j, 1);
	json_null(&j);
	json_bool(&j, true);
	json_arr_end(&j);
	json_key(&j, "d");
	json_arr_begin(&j);
	json_arr_end(&j);
	json_obj_end(&j);
	assert_string_equal(j.out.data,
	    "{\"a\":\"x\\\"y\\n\\u0001\",\"b\":-3,\"c\":[1,null,true],\"d\":[]}");
	json_free(&j);
	json_init(&j, true);
	json_arr_begin(&j);
	json_arr_end(&j);
	assert_string_equal(j.out.data, "[]");
	json_free(&j);
}

static void
test_words(void **state)
{
	struct strv sv;
	char *cause = NULL, *joined;

	strv_init(&sv);
	assert_int_equal(strv_split_words(&sv, " a 'b c' \"d\\\"e\" f\\ g ", &cause), 0);
	assert_int_equal(sv.n, 4);
	assert_string_equal(sv.v[0], "a");
	assert_string_equal(sv.v[1], "b c");
	assert_string_equal(sv.v[2], "d\"e");
	assert_string_equal(sv.v[3], "f g");
	assert_null(sv.v[4]);
	joined = strv_join_shell(sv.v);
	assert_string_equal(joined, "a 'b c' 'd\"e' 'f g'");
	free(joined);
	/* To paste: a control or an invalid byte as bash's $'...', nothing raw. */
	joined = strv_join_paste((char *[]){ "git", "update-ref", "-d",
	    "refs/notes/\302\2332J", "it's\033[31m", "b c", NULL });
	assert_string_equal(joined, "git update-ref -d "
	    "$'refs/notes/\\302\\2332J' $'it\\'s\\033[31m' 'b c'");
	free(joined);
	strv_free(&sv);
	strv_init(&sv);
	assert_int_equal(strv_split_words(&sv, "a 'b", &cause), -1);
	free(cause);
	strv_free(&sv);
}

static void
test_edit_distance(void **state)
{
	assert_int_equal(util_edit_distance("prompt_timout", "prompt_timeout"), 1);
	assert_int_equal(util_edit_distance("", "abc"), 3);
	assert_int_equal(util_edit_distance("same", "same"), 0);
}

static void
test_glob(void **state)
{
	assert_true(util_glob_match("*.github.com", "api.github.com", true));
	assert_true(util_glob_match("*.github.com", "API.GitHub.com", true));
	assert_false(util_glob_match("*.github.com", "github.com", true));
}

/*
 * buf_same_file compares bytes, past one read's worth too, and never
 * follows a link or waits on a FIFO (either may come from a jail).
 */
static void
test_same_file(void **state)
{
	char *a = xprintf("%s/a", test_dir), *b = xprintf("%s/b", test_dir);
	char *l = xprintf("%s/l", test_dir), *f = xprintf("%s/f", test_dir);

	/* Random bytes, but the last one known: 'a' (the change below must change it). */
	test_sh_ok("head -c 199999 /dev/urandom > %s && printf a >> %s && "
	    "cp %s %s", a, a, a, b);
	assert_true(buf_same_file(a, b));
	/* The last byte differs: found past the first 64 KiB. */
	test_sh_ok("printf x | dd of=%s bs=1 seek=199999 conv=notrunc "
	    "2>/dev/null", b);
	assert_false(buf_same_file(a, b));
	test_sh_ok("cp %s %s && printf y >> %s", a, b, b);
	assert_false(buf_same_file(a, b));
	/* A link to the very same file is not followed. */
	assert_int_equal(symlink(a, l), 0);
	assert_false(buf_same_file(a, l));
	assert_false(buf_same_file(l, a));
	/* A FIFO is not read (no writer: a read would wait for ever). */
	assert_int_equal(mkfifo(f, 0600), 0);
	assert_false(buf_same_file(f, f));
	assert_false(buf_same_file(a, "/nonexistent/x"));
	test_sh_ok(": > %s && : > %s", a, b);
	assert_true(buf_same_file(a, b));
	free(a);
	free(b);
	free(l);
	free(f);
}

/* strv_setenv replaces NAME only, not a name it is the start of. */
static void
test_setenv(void **state)
{
	struct strv env;

	strv_init(&env);
	strv_add(&env, "PATHX=1");
	strv_add(&env, "PATH=/bin");
	strv_setenv(&env, "PATH", "/usr/bin");
	strv_setenv(&env, "HOME", "/h");
	assert_int_equal(env.n, 3);
	assert_string_equal(env.v[0], "PATHX=1");
	assert_string_equal(env.v[1], "PATH=/usr/bin");
	assert_string_equal(env.v[2], "HOME=/h");
	strv_free(&env);
}

/* Three descriptors sent, two taken: the third is closed in the receiver, not left open. */
static void
test_cmsg(void **state)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u, r;
	char tag = 'x';
	struct iovec iov = { &tag, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	int sv[2], pipes[2], send[3], got[2] = { -1, -1 }, before, after, fd;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(pipe(pipes), 0);
	send[0] = pipes[0];
	send[1] = pipes[1];
	send[2] = pipes[0];
	/* Too many for the room given. */
	assert_int_equal(util_cmsg_put(&msg, u.buf, CMSG_SPACE(sizeof(int)),
	    send, 3), -1);
	assert_int_equal(util_cmsg_put(&msg, u.buf, sizeof u.buf, send, 3), 0);
	assert_true(sendmsg(sv[0], &msg, 0) == 1);

	/* The lowest free descriptor before and after: the dropped one is closed. */
	before = dup(0);
	close(before);
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = r.buf;
	msg.msg_controllen = sizeof r.buf;
	assert_true(recvmsg(sv[1], &msg, 0) == 1);
	assert_int_equal(util_cmsg_take(&msg, got, 2), 2);
	assert_true(fcntl(got[0], F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(got[1], F_GETFD) & FD_CLOEXEC);
	close(got[0]);
	close(got[1]);
	after = dup(0);
	close(after);
	assert_int_equal(after, before);
	/* And nothing above them was left open either. */
	for (fd = before; fd < before + 3; fd++)
		assert_int_equal(fcntl(fd, F_GETFD), -1);
	close(pipes[0]);
	close(pipes[1]);
	close(sv[0]);
	close(sv[1]);
}

/*
 * A peer that says why it failed and closes with a message of ours unread:
 * recvmsg(2) gives ECONNRESET first, util_recvmsg the peer's last words, then
 * the end.
 */
static void
test_recv_reset(void **state)
{
	char buf[64];
	int sv[2], round;
	ssize_t n;

	(void)state;
	for (round = 0; round < 2; round++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
		assert_true(send(sv[0], "G", 1, 0) == 1);
		assert_true(send(sv[1], "Ebad mount", 10, 0) == 10);
		close(sv[1]);
		if (round == 0) {
			/* What the kernel does, or this test proves nothing. */
			assert_true(recv(sv[0], buf, sizeof buf, 0) == -1);
			assert_int_equal(errno, ECONNRESET);
			close(sv[0]);
			continue;
		}
		n = util_recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
		assert_true(n == 10);
		assert_memory_equal(buf, "Ebad mount", 10);
		assert_true(util_recv(sv[0], buf, sizeof buf, MSG_DONTWAIT) == 0);
		close(sv[0]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_inode_reserve),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_edit_distance),
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_setenv),
		cmocka_unit_test(test_cmsg),
		cmocka_unit_test(test_recv_reset),
		cmocka_unit_test_setup_teardown(test_same_file, test_dir_setup,
		    test_dir_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
