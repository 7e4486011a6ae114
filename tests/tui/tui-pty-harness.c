/*
 * A test harness for the tui module without sessions: runs a command on a
 * pty (no jail) and shows it full-screen through the pane grid, libvterm and
 * the renderer, the way the dashboard does. Keys go to the command; it exits
 * when the command does. Used by the render tests through tmux and to
 * measure the pane pipeline on its own.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "tui/tui.h"

struct harness {
	struct event_base *base;
	struct tui_screen *scr;
	struct pane *vt;
	struct tui_keys *keys;
	struct tui_frames *frames;
	struct event *pty_ev;
	struct event *esc_ev;
	int fd;
	pid_t pid;
	bool all;
};

static void
harness_write(void *arg, const char *data, size_t len)
{
	struct harness *h = arg;

	util_write_all(h->fd, data, len);
}

static void
harness_draw(void *arg)
{
	struct harness *h = arg;
	struct tui_rect r = { 0, 0, 0, 0 };
	unsigned cx, cy;

	tui_screen_size(h->scr, &r.sx, &r.sy);
	tui_screen_draw_grid(h->scr, pane_grid(h->vt), &r, 0,
	    pane_reverse(h->vt), h->all);
	h->all = false;
	pane_cursor(h->vt, &cx, &cy);
	cx = pane_cursor_column(h->vt);
	tui_screen_cursor(h->scr, pane_cursor_visible(h->vt), cx, cy,
	    pane_cursor_shape(h->vt));
	tui_screen_flush(h->scr);
}

static void
harness_pty(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;
	static char buf[65536];
	ssize_t n = read(fd, buf, sizeof buf);

	if (n <= 0) {
		if (n == -1 && errno == EAGAIN)
			return;
		event_base_loopexit(h->base, NULL);
		return;
	}
	pane_feed(h->vt, buf, (size_t)n);
	tui_frames_schedule(h->frames);
}

static void
harness_input(void *arg, const struct tui_input *in)
{
	struct harness *h = arg;
	struct pane_mouse_event m;

	if (in->type == TUI_INPUT_KEY)
		pane_key(h->vt, in->key.code, in->key.mods);
	else if (in->type == TUI_INPUT_PASTE)
		pane_paste(h->vt, in->paste, in->pastelen);
	else {
		tui_keys_mouse_event(&in->mouse, &m);
		pane_mouse(h->vt, &m);
	}
}

static void
harness_escape(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;

	tui_keys_flush(h->keys, harness_input, h);
}

static void
harness_stdin(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;
	struct timeval tv = { 0, 50000 };
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);

	if (n <= 0)
		return;
	if (tui_keys_parse(h->keys, buf, (size_t)n, harness_input, h))
		evtimer_add(h->esc_ev, &tv);
}

static void
harness_winch(evutil_socket_t fd, short what, void *arg)
{
	struct harness *h = arg;
	struct winsize ws = { 0 };
	unsigned sx, sy;

	tui_screen_resize(h->scr);
	tui_screen_size(h->scr, &sx, &sy);
	pane_resize(h->vt, sx, sy);
	ws.ws_col = (unsigned short)sx;
	ws.ws_row = (unsigned short)sy;
	ioctl(h->fd, TIOCSWINSZ, &ws);
	h->all = true;
	tui_frames_schedule(h->frames);
}

int
main(int argc, char **argv)
{
	struct harness h = { .all = true };
	struct winsize ws = { 0 };
	struct event *in_ev, *winch_ev;
	char *cause = NULL;
	const char *hold;
	unsigned sx, sy;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: tui-pty-harness COMMAND [ARG...]\n");
		return 2;
	}
	h.base = event_base_new();
	if ((h.scr = tui_screen_open(getenv("NO_COLOR") == NULL, &cause)) ==
	    NULL) {
		fprintf(stderr, "tui-pty-harness: %s\n", cause);
		return 1;
	}
	tui_screen_size(h.scr, &sx, &sy);
	ws.ws_col = (unsigned short)sx;
	ws.ws_row = (unsigned short)sy;
	if ((h.pid = forkpty(&h.fd, NULL, NULL, &ws)) == -1)
		fatal("forkpty");
	if (h.pid == 0) {
		setenv("TERM", "xterm-256color", 1);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	util_set_nonblock(h.fd);
	h.vt = pane_create(sx, sy, 10000, harness_write, &h);
	h.keys = tui_keys_create();
	h.frames = tui_frames_create(h.base, harness_draw, &h);
	h.pty_ev = event_new(h.base, h.fd, EV_READ | EV_PERSIST, harness_pty,
	    &h);
	h.esc_ev = evtimer_new(h.base, harness_escape, &h);
	in_ev = event_new(h.base, STDIN_FILENO, EV_READ | EV_PERSIST,
	    harness_stdin, &h);
	winch_ev = evsignal_new(h.base, SIGWINCH, harness_winch, &h);
	event_add(h.pty_ev, NULL);
	event_add(in_ev, NULL);
	event_add(winch_ev, NULL);
	tui_frames_schedule(h.frames);
	event_base_dispatch(h.base);
	harness_draw(&h);
	waitpid(h.pid, &status, 0);
	if ((hold = getenv("HARNESS_HOLD")) != NULL)
		sleep((unsigned)atoi(hold));
	tui_screen_close(h.scr);
	event_free(h.pty_ev);
	event_free(h.esc_ev);
	event_free(in_ev);
	event_free(winch_ev);
	tui_frames_free(h.frames);
	tui_keys_free(h.keys);
	pane_free(h.vt);
	event_base_free(h.base);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
