/*
** transform_hooks.c -- the transform as a manager class (ecs.h,
** ecs_manager_class): gc, purge, free and check, which the world drives
** for every manager alike, and has, clear, stats, schema, save and load.
**
** Apart from the storage because none of it is on a hot path and each
** hook takes the rows as a whole: check states every invariant of the
** links (transform.c's file comment), save writes the live forest depth
** first with world matrices only where load could not recompute them,
** and load checks a whole stream before it replaces anything.
**
** Layer: managers (layers: alloc.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform_private.h"

static size_t tr_gc(ecs_world *w, void *self, size_t budget) {
  (void)w;
  return ecs_transform_gc((ecs_transform *)self, budget);
}

/*
** The index's generation wrapped: mark its row's entity purged, so the row
** is dead for good. Links are left alone (like any dead row's): its
** children already read as roots, and it is unlinked by gc or by the next
** add at this index, so a new entity never inherits its parent, children
** or matrices. Nothing moves (ecs_transform_destroy_tree may be walking).
*/
static void tr_purge(ecs_world *w, void *self, uint32_t index) {
  ecs_transform *t = (ecs_transform *)self;
  uint32_t i = ecsi_sparse_get(&t->map, index);
  (void)w;
  if (i != NONE) t->entity[i] = ecs_mark_purged(t->entity[i]);
  ecs_owned_purge(t->c, index);
}

static void tr_free(ecs_world *w, void *self) {
  ecs_transform *t = (ecs_transform *)self;
  if (t == NULL) return;
  ecsi_unsubscribe(&w->barrier, ECSI_EV_ENTITY_DIED, ecsi_transform_died, t);
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  ecs_owned_free(w, t->c);
  ecsi_free(w, t, sizeof *t);
}

typedef struct check_ud {
  const ecs_transform *t;
} check_ud;

static const char *check_map_entry(const void *ud, uint32_t index,
                                   uint32_t v) {
  const ecs_transform *t = ((const check_ud *)ud)->t;
  if (v >= t->n) return "transform: map points past the rows";
  if (ecs_entity_index(t->entity[v]) != index)
    return "transform: map entry points at another entity's row";
  return NULL;
}

/*
** Invariants: every row is in the map and the map only holds rows; links
** in range and symmetric (each child's parent is the list owner, prev/next
** mirror each other, the first child's prev is the last); every row with a
** parent is in its parent's list (counts agree); roots are not in lists;
** the parent relation is acyclic; locals are finite with unit rotations.
*/
static const char *tr_check(const ecs_world *w, const void *self) {
  const ecs_transform *t = (const ecs_transform *)self;
  uint32_t n = t->n;
  size_t with_parent = 0, listed = 0;
  uint8_t *state;
  void *ud;
  ecs_alloc_fn alloc = ecs_world_allocator(w, &ud);
  const char *bad = NULL;
  check_ud cu;
  if (n > t->cap) return "transform: more rows than capacity";
  for (uint32_t i = 0; i < n; i++) {
    uint32_t p = t->parent[i], f = t->first_child[i], c, count = 0;
    ecs_trs local, *l = &local;
    double qn = 0;
    get_local_row(t, i, &local);
    for (int k = 0; k < 3; k++)
      if (memcmp(&ecs_owned_f64(t->c, (uint32_t)(TC_WX + k))[i],
                 &t->world[i][12 + k], sizeof(double)) != 0)
        return "transform: world position column differs from the matrix";
    if (ecsi_sparse_get(&t->map, ecs_entity_index(t->entity[i])) != i)
      return "transform: row missing from the map";
    if (ecs_entity_index(t->entity[i]) == 0) return "transform: null entity row";
    if (!ecs_record_valid(w, t->entity[i]))
      return "transform: row outlived its generation (wrap)";
    if (p != NONE && (p >= n || p == i)) return "transform: bad parent link";
    if (p == NONE && (t->next_sibling[i] != NONE || t->prev_sibling[i] != NONE))
      return "transform: root has sibling links";
    with_parent += p != NONE;
    for (int k = 0; k < 3; k++)
      if (!isfinite(l->position[k]) || !isfinite(l->scale[k]))
        return "transform: non-finite local";
    for (int k = 0; k < 4; k++) qn += l->rotation[k] * l->rotation[k];
    if (!(fabs(qn - 1.0) < 1e-9)) return "transform: rotation not unit";
    if (f == NONE) continue;
    if (f >= n) return "transform: bad first_child link";
    if (t->prev_sibling[f] >= n) return "transform: first child has no last";
    for (c = f; c != NONE; c = t->next_sibling[c]) {
      if (c >= n) return "transform: bad next_sibling link";
      if (t->parent[c] != i) return "transform: child's parent is not the owner";
      if (c != f && t->next_sibling[t->prev_sibling[c]] != c)
        return "transform: prev/next links not symmetric";
      if (t->next_sibling[c] == NONE && t->prev_sibling[f] != c)
        return "transform: first child's prev is not the last child";
      if (++count > n) return "transform: sibling list loops";
    }
    listed += count;
  }
  if (listed != with_parent) return "transform: rows missing from child lists";
  if ((bad = ecs_owned_check(w, t->c, t->entity, n)) != NULL) return bad;
  cu.t = t;
  bad = ecsi_sparse_each(&t->map, check_map_entry, &cu);
  if (bad != NULL) return bad;
  /* acyclic: 0 unknown, 1 on the current path, 2 known to reach a root */
  state = n ? (uint8_t *)alloc(ud, NULL, 0, n) : NULL;
  if (state == NULL) {
    for (uint32_t i = 0; i < n && bad == NULL; i++) {
      uint32_t a = i, steps = 0;
      while (a != NONE && bad == NULL) {
        a = t->parent[a];
        if (++steps > n) bad = "transform: parent links form a cycle";
      }
    }
    return bad;
  }
  memset(state, 0, n);
  for (uint32_t i = 0; i < n && bad == NULL; i++) {
    uint32_t a = i;
    while (a != NONE && state[a] == 0) {
      state[a] = 1;
      a = t->parent[a];
    }
    if (a != NONE && state[a] == 1) bad = "transform: parent links form a cycle";
    for (a = i; a != NONE && state[a] == 1; a = t->parent[a]) state[a] = 2;
  }
  alloc(ud, state, n, 0);
  return bad;
}

/* {====================================================================
** The class hooks beyond gc and check: has, clear, stats, schema, save,
** load (ecs.h, ecs_manager_class)
** ===================================================================== */

static bool tr_has(const ecs_world *w, const void *self, ecs_entity e) {
  (void)w;
  return row_of((const ecs_transform *)self, e) != NONE;
}

/*
** Every row goes, and the memory with it: the buffer and the map's pages
** are freed, so the manager is as ecs_transform_new left it (the
** parent-first setting stays). Nothing is linked any more, so every
** invariant of tr_check holds trivially.
*/
static void tr_clear(ecs_world *w, void *self) {
  ecs_transform *t = (ecs_transform *)self;
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  t->buf = NULL;
  t->buf_size = 0;
  t->n = t->cap = 0;
  t->world = NULL;
  t->entity = NULL;
  ecs_owned_clear(w, t->c);
  t->parent = t->first_child = t->next_sibling = t->prev_sibling = NULL;
  t->mark = NULL;
  t->epoch = t->gc_cursor = 0;
}

/* Bytes of the map: its directory and the pages in use (sparse.c). */
static size_t map_bytes(const ecsi_sparse *m) {
  size_t bytes = (size_t)m->page_count * sizeof *m->page;
  for (uint32_t p = 0; p < m->page_count; p++)
    if (m->page[p] != NULL) bytes += ECSI_PAGE_SIZE * sizeof(uint32_t);
  return bytes;
}

/* The manager's three blocks: itself, the row buffer (every column, the
** scratch row included) and the map. */
static void tr_stats(const ecs_world *w, const void *self,
                     ecs_manager_stats *out) {
  const ecs_transform *t = (const ecs_transform *)self;
  out->records = t->n;
  out->live = 0;
  for (uint32_t i = 0; i < t->n; i++) out->live += row_alive(t, i);
  out->bytes = sizeof *t + t->buf_size + map_bytes(&t->map) +
               ecs_owned_bytes(w, t->c);
}

/*
** A record as the user sees and saves it: the local transform in the
** doubles it is stored in, and the parent. The world matrix is left out:
** it is derived (parent world x local), and load recomputes it.
*/
static const ecs_field_def tr_fields[] = {
  {"position_x", ECS_F64}, {"position_y", ECS_F64}, {"position_z", ECS_F64},
  {"rotation_x", ECS_F64}, {"rotation_y", ECS_F64}, {"rotation_z", ECS_F64},
  {"rotation_w", ECS_F64}, {"scale_x", ECS_F64},    {"scale_y", ECS_F64},
  {"scale_z", ECS_F64},    {"parent", ECS_ENTITY},
};

static uint32_t tr_schema(const ecs_world *w, const void *self,
                          ecs_field_def *out, uint32_t max) {
  uint32_t n = (uint32_t)(sizeof tr_fields / sizeof tr_fields[0]);
  (void)w;
  (void)self;
  for (uint32_t k = 0; k < n && k < max; k++) out[k] = tr_fields[k];
  return n;
}

/*
** The stream (docs/transform.md, "Save and load"), machine byte order:
**   u32 TR_FORMAT, u32 count, then count records, each
**   u32 entity, u32 parent (ECS_NULL for a root), u8 flags,
**   10 f64 local (position xyz, rotation xyzw, scale xyz),
**   and, when flags has TR_WORLD, 16 f64 world matrix (column-major).
** Records come in depth-first order, parents before children and
** children in attachment order, so load links each record as it reads it
** and needs no second pass; a parent after its child is corrupt, which
** also rules out cycles.
**
** The world matrix is stored only where it is not what load would
** recompute (compose of the parent's world and the local): after
** set_parent with keep_world (the world kept exactly, the local its
** decomposition) and for children of destroyed parents (saved as roots
** with the decomposed local, world kept). So load restores every world
** matrix bit for bit, and a plain hierarchy costs 89 bytes a record.
*/
#define TR_FORMAT 1u

#define TR_WORLD 1u

#define TR_RECORD_MIN (2u * sizeof(uint32_t) + 1u + sizeof(ecs_trs))

_Static_assert(sizeof(ecs_trs) == 10 * sizeof(double),
               "ecs_trs is saved as 10 doubles");

/* Save live row i, a child of live row p (NONE: saved as a root). */
static ecs_err save_row(const ecs_transform *t, uint32_t i, uint32_t p,
                        ecs_writer *out) {
  ecs_trs l;
  double m[16];
  uint8_t flags = 0;
  ecs_err err;
  get_local_row(t, i, &l);
  if (p == NONE && t->parent[i] != NONE) /* parent dead: see get_local */
    ecsi_transform_decompose(t->world[i], &l);
  ecsi_transform_compose(p == NONE ? NULL : t->world[p], &l, m);
  if (memcmp(m, t->world[i], sizeof m) != 0) flags |= TR_WORLD;
  err = ecs_write_u32(out, t->entity[i]);
  if (err == ECS_ERR_OK)
    err = ecs_write_u32(out, p == NONE ? ECS_NULL : t->entity[p]);
  if (err == ECS_ERR_OK) err = ecs_write(out, &flags, 1);
  if (err == ECS_ERR_OK) err = ecs_write(out, &l, sizeof l);
  if (err == ECS_ERR_OK && (flags & TR_WORLD))
    err = ecs_write(out, t->world[i], sizeof t->world[i]);
  return err;
}

/* Save root r and its live descendants: propagate's walk, writing. */
static ecs_err save_tree(const ecs_transform *t, uint32_t r, ecs_writer *out) {
  ecs_err err = save_row(t, r, NONE, out);
  uint32_t c = t->first_child[r];
  while (c != NONE && err == ECS_ERR_OK) {
    if (row_alive(t, c)) {
      err = save_row(t, c, t->parent[c], out);
      if (t->first_child[c] != NONE) {
        c = t->first_child[c];
        continue;
      }
    }
    while (t->next_sibling[c] == NONE) {
      c = t->parent[c];
      if (c == r) return err;
    }
    c = t->next_sibling[c];
  }
  return err;
}

static int by_key(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/*
** Live rows only. The roots of the saved forest are the live rows whose
** parent is none or dead; the walk from each does not enter dead nodes
** (whose live children are roots themselves), so every live row is
** written exactly once, and count is known before the first record.
** Roots go in the order of their entities' indices, not of their rows:
** the rows' order is the history of adds, removes and gc, which a loaded
** manager does not share, and two managers holding the same forest must
** save the same bytes (a journal compares saves; the state hash hashes
** them). Children keep their attachment order, which is the forest's.
*/
static ecs_err tr_save(const ecs_world *w, const void *self,
                       ecs_writer *out) {
  const ecs_transform *t = (const ecs_transform *)self;
  uint32_t live = 0, nroots = 0;
  uint64_t *root = NULL;
  ecs_err err;
  for (uint32_t i = 0; i < t->n; i++) {
    live += row_alive(t, i);
    nroots += row_alive(t, i) && (t->parent[i] == NONE || !row_alive(t, t->parent[i]));
  }
  if (nroots > 0) { /* a const world: uncounted scratch, like its checks */
    uint32_t k = 0;
    root = (uint64_t *)ecsi_scratch_realloc(w, NULL, 0, (size_t)nroots * sizeof *root);
    if (root == NULL) return ECS_ERR_NOMEM;
    for (uint32_t r = 0; r < t->n; r++)
      if (row_alive(t, r) && (t->parent[r] == NONE || !row_alive(t, t->parent[r])))
        root[k++] = (uint64_t)ecs_entity_index(t->entity[r]) << 32 | r;
    qsort(root, nroots, sizeof *root, by_key);
  }
  err = ecs_write_u32(out, TR_FORMAT);
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, live);
  for (uint32_t k = 0; k < nroots && err == ECS_ERR_OK; k++)
    err = save_tree(t, (uint32_t)root[k], out);
  if (root != NULL) ecsi_scratch_realloc(w, root, (size_t)nroots * sizeof *root, 0);
  return err;
}

/* The rule the setters and tr_check apply: finite numbers, a unit
** rotation (within the check's tolerance: load does not normalize, so
** that saved values come back bit for bit). */
static bool valid_local(const ecs_trs *l) {
  double qn = 0;
  for (int k = 0; k < 3; k++)
    if (!isfinite(l->position[k]) || !isfinite(l->scale[k])) return false;
  for (int k = 0; k < 4; k++) qn += l->rotation[k] * l->rotation[k];
  return fabs(qn - 1.0) < 1e-9; /* false for NaN and inf too */
}

/*
** Read and check one record into row nt->n of the new rows (reserved),
** linking it under its parent. @return ECS_ERR_CORRUPT for anything
** save could not have written for this world: an entity that is not
** alive (or not a 30-bit id), one already read, a parent not read
** before, unknown flags, a local that breaks valid_local, a world
** matrix that is not affine (its last row is 0 0 0 1). World matrices
** may hold inf and NaN: an overflowed chain has them (docs,
** "Overflow"), and a saved world is restored as it was.
*/
static ecs_err load_row(ecs_transform *nt, ecs_reader *in) {
  uint32_t e, pe, p = NONE, i = nt->n;
  uint8_t flags;
  ecs_trs l;
  double m[16];
  ecs_err err = ecs_read_u32(in, &e);
  if (err == ECS_ERR_OK) err = ecs_read_u32(in, &pe);
  if (err == ECS_ERR_OK) err = ecs_read(in, &flags, 1);
  if (err == ECS_ERR_OK) err = ecs_read(in, &l, sizeof l);
  if (err == ECS_ERR_OK && (flags & TR_WORLD)) err = ecs_read(in, m, sizeof m);
  if (err != ECS_ERR_OK) return err;
  if ((e & ~ECS_ID_MASK) != 0 || !ecs_alive(nt->w, e) ||
      ecsi_sparse_get(&nt->map, ecs_entity_index(e)) != NONE)
    return ECS_ERR_CORRUPT;
  if (pe != ECS_NULL) {
    p = ecsi_sparse_get(&nt->map, ecs_entity_index(pe));
    if (p == NONE || nt->entity[p] != pe) return ECS_ERR_CORRUPT;
  }
  if ((flags & ~TR_WORLD) != 0 || !valid_local(&l)) return ECS_ERR_CORRUPT;
  if ((flags & TR_WORLD) && !(m[3] == 0 && m[7] == 0 && m[11] == 0 && m[15] == 1))
    return ECS_ERR_CORRUPT;
  err = ecsi_sparse_reserve(nt->w, &nt->map, ecs_entity_index(e));
  if (err == ECS_ERR_OK)
    err = ecs_owned_reserve(nt->w, nt->c, i + 1u, ecs_entity_index(e));
  if (err != ECS_ERR_OK) return err;
  nt->n++;
  (void)ecs_owned_append(nt->w, nt->c, e);
  nt->entity[i] = e;
  put_local_row(nt, i, &l);
  nt->parent[i] = nt->first_child[i] = NONE;
  nt->next_sibling[i] = nt->prev_sibling[i] = NONE;
  nt->mark[i] = 0;
  if (p != NONE) ecsi_transform_link_row(nt, i, p);
  if (flags & TR_WORLD) memcpy(nt->world[i], m, sizeof m);
  else
    ecsi_transform_compose(p == NONE ? NULL : nt->world[p], &l, nt->world[i]);
  put_world_row(nt, i);
  ecsi_sparse_set(&nt->map, ecs_entity_index(e), i);
  return ECS_ERR_OK;
}

/*
** All or nothing: the new rows and map are built aside (nt) while the
** stream is read and checked, and replace the old ones only when every
** record was read; on any error the new blocks are freed, the manager is
** untouched and the reader is back where it was. The count is checked
** against the bytes left before anything is allocated for it, so a
** forged count cannot make load allocate more than the stream could
** fill. The rows come out depth first (the stream's order), the layout
** ecs_transform_sort would give.
*/
static ecs_err tr_load(ecs_world *w, void *self, ecs_reader *in) {
  ecs_transform *t = (ecs_transform *)self, nt;
  size_t start = in->pos;
  uint32_t format, count;
  ecs_err err = ecs_read_u32(in, &format);
  if (err == ECS_ERR_OK) err = ecs_read_u32(in, &count);
  if (err == ECS_ERR_OK &&
      (format != TR_FORMAT || count > ECS_MAX_ENTITIES ||
       count > (in->size - in->pos) / TR_RECORD_MIN))
    err = ECS_ERR_CORRUPT;
  if (err != ECS_ERR_OK) {
    in->pos = start;
    return err;
  }
  memset(&nt, 0, sizeof nt);
  nt.w = w;
  err = ecsi_transform_columns_new(w, &nt);
  if (err == ECS_ERR_OK) err = ecsi_transform_reserve_rows(&nt, count);
  for (uint32_t k = 0; k < count && err == ECS_ERR_OK; k++)
    err = load_row(&nt, in);
  /* the rows go to t's own component (queries watch that one); a twin's
  ** to the component of the manager it stands in for, at the swap */
  if (err == ECS_ERR_OK)
    err = ecs_owned_take_prepare(w, t->of != NULL ? t->of->c : t->c, nt.c);
  if (err != ECS_ERR_OK) {
    ecsi_free(w, nt.buf, nt.buf_size);
    ecsi_sparse_free(w, &nt.map);
    ecs_owned_free(w, nt.c);
    in->pos = start;
    return err;
  }
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  ecs_owned_take(w, t->c, nt.c);
  ecs_owned_free(w, nt.c);
  nt.c = t->c;
  nt.of = t->of;
  nt.parent_first = t->parent_first; /* a setting, not a record */
  *t = nt;
  return ECS_ERR_OK;
}

/*
** Staged loads (snapshot.c): a twin has t's setting (parent_first) and no
** row; swap trades the rows, links, matrices and map, which are all of
** the struct but the world and the setting, the same in both.
*/
static void *tr_twin(ecs_world *w, const void *self) {
  const ecs_transform *t = (const ecs_transform *)self;
  ecs_transform *n = (ecs_transform *)ecsi_realloc(w, NULL, 0, sizeof *n);
  if (n == NULL) return NULL;
  memset(n, 0, sizeof *n);
  n->w = w;
  n->parent_first = t->parent_first;
  n->of = t;
  if (ecsi_transform_columns_new(w, n) != ECS_ERR_OK) {
    ecsi_free(w, n, sizeof *n);
    return NULL;
  }
  return n;
}

/* Each keeps its component object (queries watch a's) and takes the
** other's rows into it (the twin's load reserved what a's needs). */
static void tr_swap(ecs_world *w, void *self, void *twin) {
  ecs_transform *a = (ecs_transform *)self, *b = (ecs_transform *)twin;
  ecs_component *ca = a->c, *cb = b->c;
  ecs_transform tmp = *a;
  *a = *b;
  *b = tmp;
  a->c = ca;
  b->c = cb;
  a->of = b->of = NULL;
  a->parent_first = tmp.parent_first;
  ecs_owned_take(w, ca, cb);
}

/* }==================================================================== */

/* The transform as a query term: its owned component (transform.h). */
static ecs_component *tr_columns(const ecs_world *w, void *self) {
  (void)w;
  return ((ecs_transform *)self)->c;
}

const ecs_manager_class ecsi_transform_class = {
  .kind = "transform",
  .gc = tr_gc,
  .check = tr_check,
  .free = tr_free,
  .purge = tr_purge,
  .has = tr_has,
  .clear = tr_clear,
  .stats = tr_stats,
  .schema = tr_schema,
  .save = tr_save,
  .load = tr_load,
  .twin = tr_twin,
  .swap = tr_swap,
  .columns = tr_columns,
};
