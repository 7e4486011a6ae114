/* Pane layout: a tree of side-by-side and stacked splits, focus, zoom, geometry. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tui.h"

enum tui_node_type {
	TUI_NODE_PANE,
	TUI_NODE_SIDE,        /* A left of B, a border column between them */
	TUI_NODE_STACK,       /* A above B, a border row between them */
};

struct tui_node {
	enum tui_node_type type;
	int pane;
	struct tui_node *a;
	struct tui_node *b;
	struct tui_node *parent;
	struct tui_rect r;
	bool shown;
};

struct tui_layout {
	struct tui_node *root;
	struct tui_node *focus;
	bool zoomed;
	bool squeezed;        /* the split did not fit: only the focus is shown */
	struct tui_rect area; /* of the last tui_layout_apply */
};

static struct tui_node *
tui_layout_leaf(int pane, struct tui_node *parent)
{
	struct tui_node *n = xcalloc(1, sizeof *n);

	n->type = TUI_NODE_PANE;
	n->pane = pane;
	n->parent = parent;
	return n;
}

struct tui_layout *
tui_layout_create(int pane)
{
	struct tui_layout *lay = xcalloc(1, sizeof *lay);

	lay->root = lay->focus = tui_layout_leaf(pane, NULL);
	return lay;
}

static void
tui_layout_free_node(struct tui_node *n)
{
	if (n == NULL)
		return;
	tui_layout_free_node(n->a);
	tui_layout_free_node(n->b);
	free(n);
}

void
tui_layout_free(struct tui_layout *lay)
{
	if (lay == NULL)
		return;
	tui_layout_free_node(lay->root);
	free(lay);
}

static struct tui_node *
tui_layout_find(struct tui_node *n, int pane)
{
	struct tui_node *found;

	if (n == NULL)
		return NULL;
	if (n->type == TUI_NODE_PANE)
		return n->pane == pane ? n : NULL;
	if ((found = tui_layout_find(n->a, pane)) != NULL)
		return found;
	return tui_layout_find(n->b, pane);
}

/* The first leaf under N (its top-left pane). */
static struct tui_node *
tui_layout_first(struct tui_node *n)
{
	while (n->type != TUI_NODE_PANE && n->a != NULL)
		n = n->a;
	return n;
}

bool
tui_layout_split(struct tui_layout *lay, int pane, bool side)
{
	struct tui_node *old = lay->focus, *n;
	struct tui_rect r = old->r;

	if (lay->zoomed || lay->squeezed || tui_layout_find(lay->root, pane))
		return false;
	if (side ? r.sx < 2 * TUI_PANE_MIN_SX + 1 :
	    r.sy < 2 * TUI_PANE_MIN_SY + 1)
		return false;
	/* OLD becomes the split; its pane moves down into a new leaf. */
	n = tui_layout_leaf(old->pane, old);
	n->r = old->r;
	old->type = side ? TUI_NODE_SIDE : TUI_NODE_STACK;
	old->pane = -1;
	old->a = n;
	old->b = tui_layout_leaf(pane, old);
	lay->focus = old->b;
	tui_layout_apply(lay, lay->area.x, lay->area.y, lay->area.sx,
	    lay->area.sy);
	return true;
}

bool
tui_layout_remove(struct tui_layout *lay, int pane)
{
	struct tui_node *n = tui_layout_find(lay->root, pane), *parent, *sib;

	if (n == NULL || n == lay->root)
		return false;
	parent = n->parent;
	sib = parent->a == n ? parent->b : parent->a;
	/* The parent takes over the sibling's contents. */
	parent->type = sib->type;
	parent->pane = sib->pane;
	parent->a = sib->a;
	parent->b = sib->b;
	if (parent->a != NULL)
		parent->a->parent = parent;
	if (parent->b != NULL)
		parent->b->parent = parent;
	if (lay->focus == n || lay->focus == sib)
		lay->focus = tui_layout_first(parent);
	free(sib);
	free(n);
	if (lay->root->type == TUI_NODE_PANE)
		lay->zoomed = false;
	return true;
}

void
tui_layout_replace(struct tui_layout *lay, int oldpane, int newpane)
{
	struct tui_node *n = tui_layout_find(lay->root, oldpane);

	if (n != NULL && tui_layout_find(lay->root, newpane) == NULL)
		n->pane = newpane;
}

bool
tui_layout_contains(const struct tui_layout *lay, int pane)
{
	return tui_layout_find(lay->root, pane) != NULL;
}

int
tui_layout_focus(const struct tui_layout *lay)
{
	return lay->focus->pane;
}

bool
tui_layout_set_focus(struct tui_layout *lay, int pane)
{
	struct tui_node *n = tui_layout_find(lay->root, pane);

	if (n == NULL)
		return false;
	lay->focus = n;
	return true;
}

void
tui_layout_set_zoom(struct tui_layout *lay, bool zoom)
{
	lay->zoomed = zoom && lay->root->type != TUI_NODE_PANE;
}

bool
tui_layout_zoomed(const struct tui_layout *lay)
{
	return lay->zoomed;
}

static void
tui_layout_hide(struct tui_node *n)
{
	if (n == NULL)
		return;
	n->shown = false;
	tui_layout_hide(n->a);
	tui_layout_hide(n->b);
}

/* Lays out N in R; false if some pane under it would be too small. */
static bool
tui_layout_place(struct tui_node *n, struct tui_rect r)
{
	struct tui_rect ra = r, rb = r;
	bool fits;

	n->r = r;
	n->shown = true;
	switch (n->type) {
	case TUI_NODE_PANE:
		return r.sx >= TUI_PANE_MIN_SX && r.sy >= TUI_PANE_MIN_SY;
	case TUI_NODE_SIDE:
		if (r.sx < 3)
			return false;
		ra.sx = (r.sx - 1) / 2;
		rb.x = r.x + ra.sx + 1;
		rb.sx = r.sx - ra.sx - 1;
		break;
	case TUI_NODE_STACK:
		if (r.sy < 3)
			return false;
		ra.sy = (r.sy - 1) / 2;
		rb.y = r.y + ra.sy + 1;
		rb.sy = r.sy - ra.sy - 1;
		break;
	}
	/* Both halves are placed, whether or not the first fits. */
	fits = tui_layout_place(n->a, ra);
	return tui_layout_place(n->b, rb) && fits;
}

bool
tui_layout_apply(struct tui_layout *lay, unsigned x, unsigned y,
    unsigned sx, unsigned sy)
{
	struct tui_rect r = { .x = x, .y = y, .sx = sx, .sy = sy };

	lay->area = r;
	lay->squeezed = false;
	tui_layout_hide(lay->root);
	if (!lay->zoomed && tui_layout_place(lay->root, r))
		return true;
	if (!lay->zoomed)
		lay->squeezed = true;
	tui_layout_hide(lay->root);
	lay->focus->r = r;
	lay->focus->shown = true;
	return sx >= TUI_PANE_MIN_SX && sy >= TUI_PANE_MIN_SY;
}

bool
tui_layout_rect(const struct tui_layout *lay, int pane, struct tui_rect *r)
{
	struct tui_node *n = tui_layout_find(lay->root, pane);

	if (n == NULL || !n->shown)
		return false;
	*r = n->r;
	return true;
}

static bool
tui_layout_inside(const struct tui_rect *r, unsigned x, unsigned y)
{
	return x >= r->x && x < r->x + r->sx && y >= r->y && y < r->y + r->sy;
}

static void
tui_layout_collect(const struct tui_node *n, int *panes, size_t max,
    size_t *count)
{
	if (n == NULL || !n->shown)
		return;
	if (n->type == TUI_NODE_PANE) {
		if (*count < max)
			panes[*count] = n->pane;
		(*count)++;
		return;
	}
	tui_layout_collect(n->a, panes, max, count);
	tui_layout_collect(n->b, panes, max, count);
}

size_t
tui_layout_panes(const struct tui_layout *lay, int *panes, size_t max)
{
	size_t count = 0;

	if (lay->zoomed || lay->squeezed) {
		if (max > 0)
			panes[0] = lay->focus->pane;
		return 1;
	}
	tui_layout_collect(lay->root, panes, max, &count);
	return count;
}

int
tui_layout_pane_at(const struct tui_layout *lay, unsigned x, unsigned y)
{
	int panes[64];
	size_t n = tui_layout_panes(lay, panes, nitems(panes)), i;
	struct tui_rect r;

	for (i = 0; i < n && i < nitems(panes); i++) {
		if (tui_layout_rect(lay, panes[i], &r) &&
		    tui_layout_inside(&r, x, y))
			return panes[i];
	}
	return -1;
}

static void
tui_layout_collect_borders(const struct tui_node *n, struct tui_rect *r,
    size_t max, size_t *count)
{
	struct tui_rect b;

	if (n == NULL || !n->shown || n->type == TUI_NODE_PANE)
		return;
	b = n->r;
	if (n->type == TUI_NODE_SIDE) {
		b.x = n->a->r.x + n->a->r.sx;
		b.sx = 1;
	} else {
		b.y = n->a->r.y + n->a->r.sy;
		b.sy = 1;
	}
	if (*count < max)
		r[*count] = b;
	(*count)++;
	tui_layout_collect_borders(n->a, r, max, count);
	tui_layout_collect_borders(n->b, r, max, count);
}

size_t
tui_layout_borders(const struct tui_layout *lay, struct tui_rect *r,
    size_t max)
{
	size_t count = 0;

	if (lay->zoomed || lay->squeezed)
		return 0;
	tui_layout_collect_borders(lay->root, r, max, &count);
	return count;
}

/* How far B lies from A in direction DIR, or -1 if it is not that way. */
static long
tui_layout_distance(const struct tui_rect *a, const struct tui_rect *b,
    enum tui_dir dir)
{
	bool overlap_x = b->x < a->x + a->sx && a->x < b->x + b->sx;
	bool overlap_y = b->y < a->y + a->sy && a->y < b->y + b->sy;

	switch (dir) {
	case TUI_DIR_LEFT:
		return overlap_y && b->x + b->sx <= a->x ?
		    (long)(a->x - b->x - b->sx) : -1;
	case TUI_DIR_RIGHT:
		return overlap_y && b->x >= a->x + a->sx ?
		    (long)(b->x - a->x - a->sx) : -1;
	case TUI_DIR_UP:
		return overlap_x && b->y + b->sy <= a->y ?
		    (long)(a->y - b->y - b->sy) : -1;
	case TUI_DIR_DOWN:
		return overlap_x && b->y >= a->y + a->sy ?
		    (long)(b->y - a->y - a->sy) : -1;
	}
	return -1;
}

bool
tui_layout_focus_dir(struct tui_layout *lay, enum tui_dir dir)
{
	int panes[64], best = -1;
	size_t n, i;
	long d, bestd = -1;
	struct tui_rect cur = lay->focus->r, r;

	if (lay->zoomed || lay->squeezed)
		return false;
	n = tui_layout_panes(lay, panes, nitems(panes));
	for (i = 0; i < n && i < nitems(panes); i++) {
		if (panes[i] == lay->focus->pane ||
		    !tui_layout_rect(lay, panes[i], &r))
			continue;
		d = tui_layout_distance(&cur, &r, dir);
		if (d >= 0 && (bestd < 0 || d < bestd)) {
			bestd = d;
			best = panes[i];
		}
	}
	return best != -1 && tui_layout_set_focus(lay, best);
}
