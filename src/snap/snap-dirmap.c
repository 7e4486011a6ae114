/*
 * The project's dirs as the start's walk for nested repositories found
 * them: each path with its identity. At the end, a dir the session changed
 * is the same dir as at the start, or one it moved or made there: a watched
 * file of old times beneath the latter may have come in with it, whatever
 * times the session left on the dirs (review 16: times alone told every
 * file a tool runs in a monorepo when a file was added beside them).
 */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

struct snap_dirmap_ent {
	char *rel;
	dev_t dev;
	ino_t ino;
};

struct snap_dirmap {
	int refs;
	bool complete;
	bool sorted;
	size_t n, size;
	struct snap_dirmap_ent *v;
};

struct snap_dirmap *
snap_dirmap_new(void)
{
	struct snap_dirmap *m = xcalloc(1, sizeof *m);

	m->refs = 1;
	m->complete = true;
	return m;
}

void
snap_dirmap_add(struct snap_dirmap *m, const char *rel, const struct stat *st)
{
	if (m->n == m->size) {
		m->size = m->size == 0 ? 256 : m->size * 2;
		m->v = xreallocarray(m->v, m->size, sizeof *m->v);
	}
	m->v[m->n].rel = xstrdup(rel);
	m->v[m->n].dev = st->st_dev;
	m->v[m->n++].ino = st->st_ino;
	m->sorted = false;
}

void
snap_dirmap_incomplete(struct snap_dirmap *m)
{
	m->complete = false;
}

static int
snap_dirmap_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_dirmap_ent *)a)->rel,
	    ((const struct snap_dirmap_ent *)b)->rel);
}

void
snap_dirmap_done(struct snap_dirmap *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof *m->v, snap_dirmap_cmp);
	m->sorted = true;
}

int
snap_dirmap_same(const struct snap_dirmap *m, const char *rel,
    const struct stat *st)
{
	struct snap_dirmap_ent key, *e;

	if (m == NULL || !m->sorted)
		return -1;
	memset(&key, 0, sizeof key);
	key.rel = (char *)rel;
	e = bsearch(&key, m->v, m->n, sizeof *m->v, snap_dirmap_cmp);
	if (e == NULL)
		return m->complete ? 0 : -1;
	return e->dev == st->st_dev && e->ino == st->st_ino;
}

struct snap_dirmap *
snap_dirmap_ref(struct snap_dirmap *m)
{
	if (m != NULL)
		m->refs++;
	return m;
}

void
snap_dirmap_unref(struct snap_dirmap *m)
{
	size_t i;

	if (m == NULL || --m->refs > 0)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].rel);
	free(m->v);
	free(m);
}
