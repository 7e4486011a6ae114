/* Internals shared inside the tui module: the grid's layout, for the hot path of writing glyphs. */
#ifndef AGENTMUX_TUI_INT_H
#define AGENTMUX_TUI_INT_H

#include <sys/types.h>

#include <vterm.h>

#include "core/core.h"
#include "session/session.h"
#include "tui.h"

/* ---- the dashboard ---- */

struct config;
struct event;
struct session;
struct store_session;
struct store_snapshot;
struct session_ask;
struct session_ctx;
struct store;
struct tui;

/* One session shown in a pane. */
struct tui_pane {
	struct tui *t;
	int num;                  /* its place in the layout: 1, 2, ... */
	struct session *s;        /* NULL once closed */
	struct pane *pane;        /* its session's (a reference), or a blank one */
	int64_t id;               /* the session's record: what the user calls it */
	bool closing;             /* the user closed it: goes once it ended */
	char *agent;
	char *project;
	char *dir;                /* as asked for (restart) */
	struct strv command;      /* as asked for (restart); empty: the profile's */
	struct strv env;          /* its client's environment (restart) */
	bool has_env;             /* else the process's own */
	bool worktree;            /* as asked for: a worktree of its own */
	char *base;               /* with worktree: --base, or NULL */
	char *branch;             /* with worktree: --branch, or NULL */
	bool refuse_shared;       /* not asked to share a tree in use (agentmux
	                             new without --shared, or the dialog) */
	int64_t ask_sharer;       /* not started: the session whose tree it
	                             would share, asked about; else 0 */
	char *unsafe;             /* unsafe flags in force, or NULL */
	bool alert;               /* something alarming happened (exfiltration) */
	struct tui_rect r;        /* where its cells go, when shown */
	bool shown;
	bool redraw;              /* draw every row next frame */
	bool exited;
	char *start_failed;       /* why its session did not start, or NULL */
	bool done;                /* exited, and its end snapshot is over */
	int status;
	unsigned bells;           /* rings not yet seen */
	unsigned bells_seen;
	int64_t started_us;       /* util_mono_us when it started */
	uint64_t requests;        /* seen in its proxy (agentmux ls) */
	uint64_t denials;
	/*
	 * The highest request id seen of session REQ_SESSION: its proxy numbers
	 * them in order, so a higher one is a new request, added without a
	 * search through the whole panel.
	 */
	int64_t req_session;
	int64_t req_max;
};

/*
 * One client's look at one pane: how far back into the history it is
 * scrolled, and its copy mode. Each client has its own (tui_pane_view),
 * as its layout is its own: one client's selection or search neither
 * shows in nor moves another's.
 */
struct tui_pane_view {
	struct tui_pane *wp;
	unsigned offset;          /* lines scrolled back into the history */
	uint64_t scrolled;        /* the grid's scroll counter when last drawn */
	struct tui_copy *copy;    /* copy mode (tui-copy.c), or NULL */
};

/* A pane's copy mode: a cursor in its scrollback, a selection, a search. */
struct tui_copy {
	int64_t cline;            /* the cursor's line (tui_copy_line) */
	unsigned cx;
	bool selecting;
	bool lines;               /* the selection is whole lines */
	int64_t sline;            /* where the selection started */
	unsigned sx;
	bool dragging;            /* the mouse's button is down */
	bool moved;               /* and it moved since it went down */
	bool typing;              /* a search is being typed */
	bool typing_back;         /* with ?, upwards */
	struct buf typed;
	char *query;              /* the last search, or NULL */
	bool back;                /* it went upwards */
};

/*
 * An undo waiting for the sessions it stopped: it belongs to the client
 * that confirmed it, whose view its output opens in. Waits of other
 * clients, for other projects, go on beside it.
 */
struct tui_undo {
	char *commit;
	int64_t session;          /* of this session, in this project */
	char *project;
	struct tui_client *c;     /* who asked; NULL once it is freed */
};

/* A destination waiting for the user's answer. */
struct tui_prompt {
	struct tui_pane *pane;
	uint64_t id;
	char *host;
	int port;
	char *method;
	char *path;
	char *scheme;
	int waiting;
	int64_t deadline_us;      /* util_mono_us clock */
	int64_t left_us;          /* what was left when paused */
	bool paused;
};

/* A session frozen at a disk limit, asking whether to continue (tui-disk.c). */
struct tui_disk {
	struct tui_pane *pane;
	char *what;               /* "frozen: its processes wrote ..." */
	char *more;               /* what continuing does */
};

enum tui_view {
	TUI_VIEW_PANES,
	TUI_VIEW_REQUESTS,
	TUI_VIEW_HISTORY,
	TUI_VIEW_SESSION,         /* one session of the history */
	TUI_VIEW_TEXT,            /* a diff, a request, command output */
	TUI_VIEW_HELP,
};

enum tui_dialog {
	TUI_DIALOG_NONE,
	TUI_DIALOG_CONFIRM,
	TUI_DIALOG_NEW,           /* pick an agent, then a project dir (and
	                             whether to share a tree in use) */
	TUI_DIALOG_PORT,          /* forward a port of the focused session */
	TUI_DIALOG_SHARE,         /* a pane would start in a tree in use */
};

/* A scrollable text: command output, a diff, a request's details. */
struct tui_text {
	char *title;
	struct strv lines;
	struct buf partial;       /* output not yet ended by a newline */
	size_t top;
	struct tui_text_job *job; /* the command still writing it, or NULL */
	bool diff;                /* colour +/- lines */
	bool live;                /* the sessions view: read anew each second */
};

/* A one-line editor (filters, the project dir). */
struct tui_line {
	struct buf text;
	bool active;
};

/*
 * One attached terminal's view of the dashboard: its screen, keys,
 * layout (focus, zoom), open panels (their selections, filters and
 * scroll), its dialog, and where it stands in the prompt and disk
 * bars. The sessions, their panes, their questions and the request
 * records are the dashboard's (struct tui), shared by every client.
 */
struct tui_client {
	struct tui *t;
	struct strv env;          /* its client's environment (tui_set_env) */
	bool has_env;
	struct tui_screen *scr;   /* NULL: detached, the view kept for the next */
	bool suspended;           /* stopped as a job: nothing read or drawn */
	struct tui_frames *frames;
	struct tui_keys *keys;
	struct tui_keymap km;
	struct tui_layout *layout;  /* NULL while no pane is shown */
	unsigned sx;
	unsigned sy;
	bool relayout;
	bool too_small;
	bool chrome;              /* the rows around the panes are drawn next frame */
	struct {
		unsigned x0, x1;  /* the columns of a session's entry in the bar */
		int num;
	} tabs[64];
	size_t ntabs;
	struct event *input_ev;   /* the terminal's keys */
	struct event *esc_ev;

	/* prompts (tui-prompt.c) */
	size_t prompt_sel;
	int prompt_choice;
	bool prompt_focus;
	unsigned choice_x[6][2];    /* where each choice was drawn, for clicks */
	int scope_choice;           /* -1, or the "always" answer whose rule is being chosen */
	struct session_scope scopes[SESSION_SCOPES_MAX];
	size_t nscopes;
	size_t scope_sel;

	/* disk questions (tui-disk.c) */
	size_t disk_sel;
	int disk_choice;            /* 0 continue, 1 stop */
	bool disk_focus;
	unsigned disk_x[2][2];

	/* its looks at the panes: scrolled back, copy mode (tui-pane.c) */
	struct tui_pane_view **pviews;
	size_t npviews;

	/* views */
	enum tui_view views[8];
	size_t nviews;
	struct tui_text *text;

	/* its view of the requests (tui-requests.c); the records are shared */
	size_t req_sel;
	size_t req_top;
	bool req_follow;
	struct tui_line req_filter;

	/* its history views (tui-history.c) */
	struct store_session **hist;
	size_t nhist;
	struct strv hist_branch;  /* each row's worktree branch, or "" */
	size_t hist_sel;
	size_t hist_top;
	int64_t detail;             /* the session shown by TUI_VIEW_SESSION */
	struct strv detail_lines;   /* its summary, read when it was opened */
	struct store_snapshot **snaps;
	size_t nsnaps;
	size_t snap_sel;
	size_t help_top;

	/* its dialog (tui-dialog.c): one at a time, over its own screen */
	enum tui_dialog dialog;
	char *confirm_text;
	void (*confirm_cb)(struct tui *, void *);
	void *confirm_arg;
	int64_t confirm_session;    /* the session it asks about, or 0 */
	size_t new_sel;
	bool new_dir_step;
	struct tui_line new_dir;
	bool *new_missing;          /* agents whose command is not installed */
	char *new_note;             /* under the dir: an error, or what Tab found */
	bool new_note_alert;
	int64_t port_id;            /* the session whose port is forwarded */
	struct tui_line port_line;  /* "JAIL_PORT [HOST_PORT]" or "-d JAIL_PORT" */
	char *port_note;            /* why the last Enter was refused */
	bool new_worktree;          /* start it in a worktree of its own */
	const char *new_forced;     /* the setting that makes it one, or NULL */
	int64_t new_sharer;         /* asking: this session works in the tree */
	unsigned share_pane;        /* TUI_DIALOG_SHARE: the pane it asks for */
	int64_t share_sharer;       /* and the session that works in its tree */
	unsigned dialog_cx;         /* where its cursor goes */
	unsigned dialog_cy;

	/* the command prompt (tui-cmdline.c), over the status bar */
	struct tui_line cmdline;
	unsigned cmdline_cx;        /* where its cursor goes */
	char *cmdline_hint;         /* after the text: what Tab found, or NULL */

	/* the status bar's message: a reply to this client, or a notice to all */
	char *message;
	bool message_alert;
	struct event *msg_ev;
};

struct tui {
	struct event_base *base;
	struct session_ctx *ctx;
	const struct config *cf;
	/*
	 * The client whose view the code at hand works on (tui_client_set):
	 * the one whose key is handled or whose frame is drawn. Never NULL:
	 * with no terminal attached it is the view the next one takes.
	 */
	struct tui_client *c;
	struct tui_client **clients;
	size_t nclients;
	struct tui_client *latest;  /* the panes take its sizes (window-size latest) */
	struct tui_client *placed;  /* whose layout the panes' places are */
	struct tui_client **gone;   /* detached beside others: freed by reap_ev */
	size_t ngone;
	struct tui_pane **panes;
	size_t npanes;
	int exit_code;
	bool quitting;
	bool quit_told;          /* a worktree add the quit waits for was said */
	struct event *quit_ev;    /* quits even if a closed session lingers */
	struct event *reap_ev;    /* removes the panes of closed sessions */
	struct event *live_ev;    /* refreshes open sessions views (tui-status.c) */
	int64_t *ran;             /* the sessions this dashboard ran */
	size_t nran;

	struct event *term_ev;
	struct event *int_ev;
	void (*detach_cb)(void *, struct tui_client *, const char *);
	void *detach_arg;
	int (*reload_cb)(void *, char **, char **); /* prefix R, or NULL */
	void *reload_arg;
	/* prefix C-z, or NULL */
	int (*suspend_cb)(void *, struct tui_client *, char **);
	void *suspend_arg;
	void (*change_cb)(void *);  /* a session's state changed or it ended */
	void *change_arg;
	void (*stuck_cb)(void *);   /* a terminal started to leave bytes unread */
	void *stuck_arg;

	/* prompts (tui-prompt.c): every client's */
	struct tui_prompt **prompts;
	size_t nprompts;
	struct event *tick_ev;

	/* disk questions (tui-disk.c) */
	struct tui_disk **disks;
	size_t ndisks;

	/* requests (tui-requests.c) */
	struct request **reqs;      /* the records, without bodies; session_id
	                               is the pane's */
	size_t nreqs;
	int64_t denied;

	/*
	 * Undos waiting for sessions to stop (tui-history.c): each client's
	 * own, at most one a client and one a project.
	 */
	struct tui_undo **undos;
	size_t nundos;

	struct buf paste;           /* the last copy, which prefix ] pastes */

	/* telling the user a session needs them (tui-status.c) */
	int64_t notify_last_us;     /* the last notification (rate limit) */
	struct proc *notify_proc;   /* [ui] notify's command, while it runs */
};

/* tui-dash.c */
void tui_redraw(struct tui *);
/* Every client lays its panes out again (the bars or the panes changed). */
void tui_relayout_all(struct tui *);
/* WP's output changed: the clients that show it draw. */
void tui_redraw_pane(struct tui *, const struct tui_pane *wp);
/* A notice for every attached client's status bar (a session's event). */
void tui_message(struct tui *, bool alert, const char *, ...)
    __attribute__((format(printf, 3, 4)));
/* A reply to the current client's own action, in its status bar only. */
void tui_reply(struct tui *, bool alert, const char *, ...)
    __attribute__((format(printf, 3, 4)));
struct tui_pane *tui_focus_pane(struct tui *);
struct tui_pane *tui_pane_by_num(struct tui *, int);
/* The pane of the session recorded as ID, or NULL. */
struct tui_pane *tui_pane_by_id(struct tui *, int64_t id);
void tui_view_push(struct tui *, enum tui_view);
void tui_view_pop(struct tui *);
enum tui_view tui_view_top(const struct tui *);
void tui_quit(struct tui *);

/* tui-pane.c */
struct tui_pane *tui_pane_start(struct tui *, const struct tui_opts *,
    char **cause);
void tui_pane_free(struct tui_pane *);
void tui_pane_close(struct tui_pane *);
void tui_pane_restart(struct tui_pane *);
/** r on an ended pane: restarts it, or first asks if its tree is now another session's. */
void tui_pane_restart_ask(struct tui_pane *);
/** The session other than WP's that works in the tree WP would start in unasked, or 0. */
int64_t tui_pane_sharer(const struct tui_pane *);
/** c on an exited pane: restarts it with its profile's resume command; false if it has none. */
bool tui_pane_resume(struct tui_pane *);
/* Panes the user closed go once their sessions ended (soon, off this callback). */
void tui_pane_closed(struct tui *);
/* Session ID ran in this dashboard (for what quitting leaves to review). */
void tui_dash_ran(struct tui *, int64_t id);
/* Shows WP at SLOT; RESIZE: its session takes the size (the latest client's). */
void tui_pane_place(struct tui_pane *, const struct tui_rect *, bool titled,
    bool resize);
void tui_pane_draw(struct tui_pane *, bool focused, bool titled);
void tui_pane_input(struct tui_pane *, const struct tui_input *);
void tui_pane_scroll(struct tui_pane *, int lines);
const char *tui_pane_state(const struct tui_pane *, char *buf, size_t len);
/** The current client's look at WP (made on first use; the client owns it). */
struct tui_pane_view *tui_pane_view(struct tui_pane *wp);
/** Frees client C's look at WP (NULL: at every pane). */
void tui_pane_view_drop(struct tui_client *c, const struct tui_pane *wp);

/* tui-copy.c */
void tui_copy_free(struct tui_copy *);
void tui_copy_enter(struct tui_pane *);
void tui_copy_leave(struct tui_pane *);
/** Keeps copy mode's cursor in the part of the history the pane shows. */
void tui_copy_clamp(struct tui_pane *);
bool tui_copy_key(struct tui_pane *, const struct tui_key *);
/** The mouse at the pane's cell (X, Y) (outside it while dragging); false if not for copy mode. */
bool tui_copy_mouse(struct tui_pane *, const struct tui_mouse *, int x, int y);
struct tui_pane *tui_copy_dragging(struct tui *);
void tui_copy_draw(struct tui_pane *);
bool tui_copy_cursor(struct tui_pane *, unsigned *x, unsigned *y);
void tui_copy_paste(struct tui *, struct tui_pane *);
/* For tests: */
struct tui_copy_match {
	int y;
	unsigned x;
	unsigned w;               /* columns */
};
/** Appends the text of rows Y0 (from X0) to Y1 (through X1) to B, controls left out. */
void tui_copy_text(struct pane_grid *, int y0, unsigned x0, int y1, unsigned x1,
    bool lines, struct buf *b);
void tui_copy_base64(const char *s, size_t n, struct buf *b);
bool tui_copy_find(struct pane_grid *, const char *query, int y, unsigned x,
    bool backward, struct tui_copy_match *out, bool *wrapped);

/* tui-prompt.c */
void tui_prompt_ask(struct tui *, struct tui_pane *, const struct session_ask *);
void tui_prompt_answered(struct tui *, struct tui_pane *, uint64_t id,
    const char *answer, const char *by);
void tui_prompt_drop_pane(struct tui *, struct tui_pane *);
void tui_prompt_focus(struct tui *, bool);
/** Client C let go of the prompt bar (it detached). */
void tui_prompt_unfocus(struct tui *, struct tui_client *c);
bool tui_prompt_key(struct tui *, const struct tui_key *);
void tui_prompt_draw(struct tui *, unsigned y);
bool tui_prompt_click(struct tui *, unsigned x);
void tui_prompt_free_all(struct tui *);
/** Formats the seconds left of P (for the bar and tests). */
int tui_prompt_seconds_left(const struct tui_prompt *, int64_t now_us);

/* tui-disk.c */
struct session_disk_ask;
void tui_disk_ask(struct tui *, struct tui_pane *,
    const struct session_disk_ask *);
void tui_disk_drop_pane(struct tui *, struct tui_pane *);
bool tui_disk_frozen(const struct tui_pane *);
void tui_disk_focus(struct tui *, bool);
bool tui_disk_key(struct tui *, const struct tui_key *);
bool tui_disk_click(struct tui *, unsigned x);
void tui_disk_draw(struct tui *, unsigned y);
void tui_disk_free_all(struct tui *);

/* tui-requests.c */
void tui_requests_event(struct tui *, struct tui_pane *,
    const struct request *);
void tui_requests_draw(struct tui *, const struct tui_rect *);
bool tui_requests_key(struct tui *, const struct tui_key *);
void tui_requests_free_all(struct tui *);
bool tui_req_matches(const struct request *, const char *filter);
char *tui_req_details(const struct request *);
/* SCHEME://HOST:PORT/PATH quoted as one name (quote_name); caller frees. */
char *tui_req_url(const char *scheme, const char *host, int port,
    const char *path);

/* tui-history.c */
void tui_history_open(struct tui *);
void tui_history_draw(struct tui *, const struct tui_rect *);
bool tui_history_key(struct tui *, const struct tui_key *);
void tui_session_open(struct tui *, int64_t id);
/* Session ID's records changed: the clients that show it read them again. */
void tui_session_changed(struct tui *, int64_t id);
void tui_session_draw(struct tui *, const struct tui_rect *);
bool tui_session_key(struct tui *, const struct tui_key *);
void tui_session_undo_resume(struct tui *);
void tui_session_undo_cancel(struct tui *, const struct tui_pane *);
/** Frees client C's history views (it is going). */
void tui_history_view_free(struct tui_client *c);
/** Client C is going: its waiting undo still runs, its output in the current view. */
void tui_history_client_gone(struct tui *, struct tui_client *c);
/** Lets go of the waiting undos (the dashboard is going). */
void tui_history_free(struct tui *);

/* tui-text.c */
void tui_text_show(struct tui *, const char *title, const char *body,
    bool diff);
void tui_text_run(struct tui *, const char *title, char *const *argv,
    bool diff);
void tui_text_free(struct tui_text *);
void tui_text_draw(struct tui *, const struct tui_rect *);
bool tui_text_key(struct tui *, const struct tui_key *);
void tui_help_draw(struct tui *, const struct tui_rect *);
bool tui_help_key(struct tui *, const struct tui_key *);
bool tui_list_key(const struct tui_key *, size_t n, size_t page, size_t *sel);

/* tui-dialog.c */
void tui_confirm(struct tui *, const char *text,
    void (*cb)(struct tui *, void *), void *arg);
void tui_new_session(struct tui *);
/** Asks this client whether pane WP starts in a worktree, shares the tree SHARER works in, or waits. */
void tui_share_ask(struct tui *, struct tui_pane *wp, int64_t sharer);
/* Opens the port dialog for the focused session (prefix f). */
void tui_port_dialog(struct tui *);
int tui_port_parse(const char *text, struct tui_port_opts *, char **cause);
bool tui_dialog_key(struct tui *, const struct tui_key *);
void tui_dialog_draw(struct tui *);
/** Frees client C's dialog (it is going). */
void tui_dialog_free(struct tui_client *c);
/** Closes every client's dialog about pane WP's session; WHY: "ended", "is gone". */
void tui_dialog_drop_pane(struct tui *, const struct tui_pane *wp,
    const char *why);
bool tui_line_key(struct tui_line *, const struct tui_key *);
/** TEXT with a leading ~ or ~/ made the home directory, as a shell does; caller frees. */
char *tui_new_expand(const char *text);
/* For tests: Tab in the new session's dir, and what it reads. */
void tui_new_complete(struct tui *);
bool tui_new_matches(const char *dir, const char *base, struct strv *);

/* tui-cmdline.c */
/* A command the prompt takes: RUN with its words (the name first), or what BIND's prefix key does. */
struct tui_cmdline_cmd {
	const char *name;
	const char *args;         /* its arguments, for the help and errors */
	const char *help;
	int (*run)(struct tui *, char **argv, char **cause);
	struct tui_binding bind;  /* with no RUN: .action */
};
/** The commands the prompt takes, in the order the help lists them. */
const struct tui_cmdline_cmd *tui_cmdline_commands(size_t *n);
/** Opens the current client's command prompt (prefix :). */
void tui_cmdline_open(struct tui *);
/**
 * A key for the current client's command prompt: false if it is not
 * open. Tab completes a command's name. Enter closes it and runs the
 * command typed, or sets *RUN to the binding of one a prefix key does
 * (an error, or an unknown name, is said in the client's bar).
 */
bool tui_cmdline_key(struct tui *, const struct tui_key *,
    const struct tui_binding **run);
/** Draws the prompt on row Y, where the status bar is. */
void tui_cmdline_draw(struct tui *, unsigned y);

/* tui-status.c */
void tui_status_draw(struct tui *, unsigned y);
/** True if WP's session needs the user: it waits for input, or has a prompt. */
bool tui_status_needs(const struct tui_pane *wp);
/** WP's session started needing the user (state ST): bell, OSC or command. */
void tui_status_notify(struct tui *, struct tui_pane *wp,
    enum session_state st);
/** Shows the sessions view: each session's state and what it costs, as of now. */
void tui_status_sessions(struct tui *);
void tui_status_live_check(struct tui *);
/** Lets go of a notification command still running. */
void tui_status_free(struct tui *);
/* The pane whose entry in the status bar is at column X, or -1. */
int tui_status_tab_at(const struct tui *, unsigned x);

#endif
