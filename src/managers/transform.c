/*
** transform.c -- the transform manager (Bitsquid part 3): its storage.
** See transform.h for the contract; this file explains the mechanics
** that the other transform files build on (transform_private.h lists
** them: hierarchy, propagation, math, class hooks).
**
** Storage: one buffer of cap + 1 rows holding the columns world, local,
** entity, parent, first_child, next_sibling, prev_sibling, mark. Row cap is
** a scratch row used to swap two rows through move_row.
**
** Links: children of a node form a list first_child -> next_sibling; the
** first child's prev_sibling is the LAST child (so appending is O(1)); the
** last child's next_sibling is NONE. Roots have prev = next = NONE.
**
** Dead entities stay linked until gc, but are skipped: propagation does not
** descend into a dead node (its children became roots with their world
** kept, so nothing above may move them), and readers treat a dead parent as
** no parent. Before any write to a node whose parent is dead, the node is
** orphaned for real (orphan_row): unlinked, local = decompose(world).
** Because set_parent repairs the ancestor chain of the new parent that way
** whenever the child could be physically above it (may_be_below), the
** physical links stay acyclic even through dead rows.
**
** Here: the rows (growth, links, moves, orphaning, removal) and the lazy
** gc that reclaims them, the manager's creation, add and remove, the
** per-entity getters and setters, and the depth-first sort of the rows.
**
** Layer: managers, above entity and below query (layers: alloc.h).
*/
#include <string.h>

#include "ecs_private.h"
#include "transform_private.h"

#define MIN_ROWS 16u

/* {====================================================================
** Rows and links
** ===================================================================== */

/* Byte size of a buffer of rows rows; column order keeps doubles aligned. */
static size_t row_bytes(void) {
  return sizeof(double[16]) + sizeof(ecs_entity) + 5 * sizeof(uint32_t);
}

static void set_columns(ecs_transform *t, void *buf, uint32_t rows) {
  char *p = (char *)buf;
  t->world = (double (*)[16])(void *)p;
  p += (size_t)rows * sizeof(double[16]);
  t->entity = (ecs_entity *)(void *)p;
  p += (size_t)rows * sizeof(ecs_entity);
  t->parent = (uint32_t *)(void *)p;
  t->first_child = t->parent + rows;
  t->next_sibling = t->first_child + rows;
  t->prev_sibling = t->next_sibling + rows;
  t->mark = t->prev_sibling + rows;
}

/*
** Make room for need rows: the component's first, then a new buffer, each
** column copied, the old one freed. On failure nothing changed (the
** component may have more room, which is harmless).
*/
ecs_err ecsi_transform_reserve_rows(ecs_transform *t, uint32_t need) {
  uint32_t ncap = t->cap ? t->cap : MIN_ROWS;
  size_t size;
  void *nb;
  ecs_transform old = *t;
  ecs_err err = ecs_owned_reserve(t->w, t->c, need, UINT32_MAX);
  if (err != ECS_ERR_OK) return err;
  if (need <= t->cap) return ECS_ERR_OK;
  while (ncap < need) {
    if (ncap > (UINT32_MAX - 2u) / 2u) return ECS_ERR_NOMEM;
    ncap *= 2;
  }
  if ((size_t)ncap + 1u > SIZE_MAX / row_bytes()) return ECS_ERR_NOMEM;
  size = ((size_t)ncap + 1u) * row_bytes();
  nb = ecsi_realloc(t->w, NULL, 0, size);
  if (nb == NULL) return ECS_ERR_NOMEM;
  set_columns(t, nb, ncap + 1u);
  if (old.n > 0) {
    size_t n = old.n;
    memcpy(t->world, old.world, n * sizeof *t->world);
    memcpy(t->entity, old.entity, n * sizeof *t->entity);
    memcpy(t->parent, old.parent, n * sizeof(uint32_t));
    memcpy(t->first_child, old.first_child, n * sizeof(uint32_t));
    memcpy(t->next_sibling, old.next_sibling, n * sizeof(uint32_t));
    memcpy(t->prev_sibling, old.prev_sibling, n * sizeof(uint32_t));
    memcpy(t->mark, old.mark, n * sizeof(uint32_t));
  }
  ecsi_free(t->w, old.buf, old.buf_size);
  t->buf = nb;
  t->buf_size = size;
  t->cap = ncap;
  return ECS_ERR_OK;
}

/* Append c to p's children (the first child's prev is the last child). */
void ecsi_transform_link_row(ecs_transform *t, uint32_t c, uint32_t p) {
  uint32_t f = t->first_child[p];
  t->parent[c] = p;
  t->next_sibling[c] = NONE;
  if (f == NONE) {
    t->first_child[p] = c;
    t->prev_sibling[c] = c;
  } else {
    uint32_t last = t->prev_sibling[f];
    t->next_sibling[last] = c;
    t->prev_sibling[c] = last;
    t->prev_sibling[f] = c;
  }
}

/* Take c out of its parent's child list; c becomes a root. */
void ecsi_transform_unlink_row(ecs_transform *t, uint32_t c) {
  uint32_t p = t->parent[c], f, nx;
  if (p == NONE) return;
  f = t->first_child[p];
  nx = t->next_sibling[c];
  if (f == c) {
    t->first_child[p] = nx;
    if (nx != NONE) t->prev_sibling[nx] = t->prev_sibling[c];
  } else {
    uint32_t pr = t->prev_sibling[c];
    t->next_sibling[pr] = nx;
    if (nx != NONE) t->prev_sibling[nx] = pr;
    else t->prev_sibling[f] = pr; /* c was last */
  }
  t->parent[c] = t->next_sibling[c] = t->prev_sibling[c] = NONE;
}

/*
** Move row s to row d (d's old content is overwritten) and redirect every
** link that pointed at s: the parent's first_child, the neighbours' next
** and prev (including the first child's prev when s is the last child),
** the children's parent, and the map. The links are read from the moved
** row itself, so this works in the middle of a swap through the scratch
** row.
*/
static void move_row(ecs_transform *t, uint32_t s, uint32_t d) {
  uint32_t p, ch, ix;
  memcpy(t->world[d], t->world[s], sizeof t->world[d]);
  t->entity[d] = t->entity[s];
  t->parent[d] = t->parent[s];
  t->first_child[d] = t->first_child[s];
  t->next_sibling[d] = t->next_sibling[s];
  t->prev_sibling[d] = t->prev_sibling[s];
  t->mark[d] = t->mark[s];
  p = t->parent[d];
  if (t->prev_sibling[d] == s) t->prev_sibling[d] = d; /* only child */
  if (p != NONE) {
    if (t->first_child[p] == s) t->first_child[p] = d;
    else t->next_sibling[t->prev_sibling[d]] = d;
    if (t->next_sibling[d] != NONE) {
      t->prev_sibling[t->next_sibling[d]] = d;
    } else {
      uint32_t f = t->first_child[p];
      if (f != d) t->prev_sibling[f] = d;
    }
  }
  for (ch = t->first_child[d]; ch != NONE; ch = t->next_sibling[ch])
    t->parent[ch] = d;
  ix = ecs_entity_index(t->entity[d]);
  if (ecsi_sparse_get(&t->map, ix) == s) ecsi_sparse_set(&t->map, ix, d);
}

/* The component's rows are swapped alike (component.h, "Owned components"). */
void ecsi_transform_swap_rows(ecs_transform *t, uint32_t a, uint32_t b) {
  move_row(t, a, t->cap); /* the scratch row */
  move_row(t, b, a);
  move_row(t, t->cap, b);
  ecs_owned_swap(t->w, t->c, a, b);
}

/* Make c a real root: world kept exactly, local = its decomposition. */
void ecsi_transform_orphan_row(ecs_transform *t, uint32_t c) {
  ecs_trs l;
  ecsi_transform_decompose(t->world[c], &l);
  put_local_row(t, c, &l);
  ecsi_transform_unlink_row(t, c);
}

/* Drop row i: children become roots (world kept), then swap-remove. */
static void drop_row(ecs_transform *t, uint32_t i) {
  uint32_t last = t->n - 1u, ix = ecs_entity_index(t->entity[i]);
  while (t->first_child[i] != NONE)
    ecsi_transform_orphan_row(t, t->first_child[i]);
  ecsi_transform_unlink_row(t, i);
  if (ecsi_sparse_get(&t->map, ix) == i) ecsi_sparse_set(&t->map, ix, NONE);
  if (i != last) move_row(t, last, i);
  t->n--;
  ecs_owned_remove_at(t->w, t->c, i); /* the same swap-remove */
}

/* }==================================================================== */

/* {====================================================================
** Lazy gc: dead entities' rows go a budget at a time (sparse.h)
** ===================================================================== */

/* The rows as ecsi_lazy_gc sees them: entities, and drop_row. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return ((const ecs_transform *)self)->entity[i];
}

static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  (void)w;
  drop_row((ecs_transform *)self, i);
}

static const ecsi_records gc_records = {gc_owner, gc_drop};

/* The managers' one policy (sparse.h); dropped rows' children become
** roots with their world matrix kept (drop_row). */
size_t ecs_transform_gc(ecs_transform *t, size_t budget) {
  return ecsi_lazy_gc(t->w, t, &gc_records, &t->n, &t->gc_cursor, budget);
}

/* }==================================================================== */

/* {====================================================================
** Public API
** ===================================================================== */

static const ecs_trs identity = {{0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1}};

/* The columns (transform_private.h, TC_*): f64 each, world xyz read-only. */
static const ecs_field_def column_defs[TC_FIELDS] = {
  {"px", ECS_F64}, {"py", ECS_F64}, {"pz", ECS_F64}, {"qx", ECS_F64},
  {"qy", ECS_F64}, {"qz", ECS_F64}, {"qw", ECS_F64}, {"sx", ECS_F64},
  {"sy", ECS_F64}, {"sz", ECS_F64}, {"wx", ECS_F64}, {"wy", ECS_F64},
  {"wz", ECS_F64},
};

ecs_err ecsi_transform_columns_new(ecs_world *w, ecs_transform *t) {
  uint64_t readonly = (1u << TC_WX) | (1u << TC_WY) | (1u << TC_WZ);
  return ecs_owned_new(w, "transform", column_defs, TC_FIELDS, readonly,
                        &ecsi_transform_owner, t, &t->c);
}

ecs_component *ecs_transform_columns(const ecs_transform *t) { return t->c; }

/*
** e died (the barrier's ENTITY_DIED, from the destroy itself): its
** children become roots now, their world kept and their local its
** decomposition, so that the columns hold what ecs_transform_get_local
** reports. Moves no row and allocates nothing.
*/
int ecsi_transform_died(ecs_world *w, void *self, const ecsi_change *ch) {
  ecs_transform *t = (ecs_transform *)self;
  ecs_entity e = ch->e;
  uint32_t i = ecsi_sparse_get(&t->map, ecs_entity_index(e));
  (void)w;
  if (i == NONE || t->entity[i] != e) return 0;
  while (t->first_child[i] != NONE)
    ecsi_transform_orphan_row(t, t->first_child[i]);
  return 0;
}

ecs_err ecs_transform_new(ecs_world *w, ecs_transform **out) {
  ecs_transform *t;
  ecs_err err;
  if (ecs_manager_find(w, "transform", NULL) != NULL) return ECS_ERR_EXISTS;
  t = (ecs_transform *)ecsi_realloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return ECS_ERR_NOMEM;
  memset(t, 0, sizeof *t);
  t->w = w;
  t->parent_first = true;
  if ((err = ecsi_transform_columns_new(w, t)) != ECS_ERR_OK) {
    ecsi_free(w, t, sizeof *t);
    return err;
  }
  err = ecs_manager_register(w, "transform", &ecsi_transform_class, t);
  if (err != ECS_ERR_OK) return err; /* t freed by the registry */
  /* one subscriber of its rank: cannot be full (barrier.h) */
  (void)ecsi_subscribe(&w->barrier, ECSI_EV_ENTITY_DIED, ECSI_RANK_MANAGERS,
                       ecsi_transform_died, t);
  if (out != NULL) *out = t;
  return ECS_ERR_OK;
}

ecs_world *ecs_transform_world(const ecs_transform *t) { return t->w; }

ecs_transform *ecs_transform_of(const ecs_world *w) {
  const ecs_manager_class *cls;
  void *m = ecs_manager_find(w, "transform", &cls);
  return m != NULL && cls == &ecsi_transform_class ? (ecs_transform *)m : NULL;
}

/*
** Reserve the row and the map page first; then, if the index still holds
** the row of a dead earlier entity, drop that row; then append.
*/
ecs_err ecs_transform_add(ecs_transform *t, ecs_entity e, const ecs_trs *local) {
  ecs_trs l = identity;
  uint32_t i, ix = ecs_entity_index(e);
  ecs_err err;
  if (!ecs_alive(t->w, e)) return ECS_ERR_DEAD;
  if (local != NULL &&
      (err = ecsi_transform_clean_trs(local, &l)) != ECS_ERR_OK)
    return err;
  i = row_of(t, e);
  if (i != NONE) {
    repair(t, i);
    put_local_row(t, i, &l);
    ecsi_transform_propagate(t, i);
    return notify(t, e, ECS_EVENT_SET); /* a write, not a new record */
  }
  err = ecsi_transform_reserve_rows(t, t->n + 1u);
  if (err != ECS_ERR_OK) return err;
  err = ecsi_sparse_reserve(t->w, &t->map, ix);
  if (err != ECS_ERR_OK) return err;
  err = ecs_owned_reserve(t->w, t->c, t->n + 1u, ix);
  if (err != ECS_ERR_OK) return err;
  i = ecsi_sparse_get(&t->map, ix);
  if (i != NONE) drop_row(t, i); /* a dead entity's row at this index */
  i = t->n++;
  (void)ecs_owned_append(t->w, t->c, e); /* row i there too */
  t->entity[i] = e;
  put_local_row(t, i, &l);
  t->parent[i] = t->first_child[i] = NONE;
  t->next_sibling[i] = t->prev_sibling[i] = NONE;
  t->mark[i] = 0;
  ecsi_transform_trs_matrix(&l, t->world[i]);
  put_world_row(t, i);
  ecsi_sparse_set(&t->map, ix, i);
  return notify(t, e, ECS_EVENT_ADD);
}

/*
** REMOVE is reported first, while the row is whole; the listener may
** move rows, remove e's row itself or destroy e, so the row is looked up
** again. A destroyed e keeps its (now dead) row until gc, like any dead
** entity's; otherwise the row goes, whatever the listener returned.
*/
ecs_err ecs_transform_remove(ecs_transform *t, ecs_entity e) {
  uint32_t i;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  if (((const ecs_world_head *)(const void *)t->w)->listeners != 0)
    err = ecsi_notify_remove(t->w, t, e); /* once per row: ecs_private.h */
  i = row_of(t, e);
  if (i != NONE) drop_row(t, i);
  return err;
}

bool ecs_transform_has(const ecs_transform *t, ecs_entity e) {
  return row_of(t, e) != NONE;
}

ecs_instance ecs_transform_lookup(const ecs_transform *t, ecs_entity e) {
  return row_of(t, e);
}

void ecs_transform_lookup_n(const ecs_transform *t, const ecs_entity *es,
                            ecs_instance *out, size_t n) {
  for (size_t k = 0; k < n; k++) out[k] = row_of(t, es[k]);
}

uint32_t ecs_transform_size(const ecs_transform *t) { return t->n; }

ecs_entity ecs_transform_entity_at(const ecs_transform *t, uint32_t i) {
  return t->entity[i];
}

const double *ecs_transform_world_at(const ecs_transform *t, uint32_t i) {
  return t->world[i];
}

ecs_err ecs_transform_get_local(const ecs_transform *t, ecs_entity e,
                                ecs_trs *out) {
  uint32_t i, p;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  p = t->parent[i];
  if (p != NONE && !row_alive(t, p)) ecsi_transform_decompose(t->world[i], out);
  else get_local_row(t, i, out);
  return ECS_ERR_OK;
}

ecs_err ecs_transform_get_world(const ecs_transform *t, ecs_entity e,
                                double out[16]) {
  uint32_t i;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  memcpy(out, t->world[i], sizeof(double[16]));
  return ECS_ERR_OK;
}

ecs_err ecs_transform_get_world_rotation(const ecs_transform *t,
                                         ecs_entity e, double out[4]) {
  uint32_t i;
  ecs_trs d;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  ecsi_transform_decompose(t->world[i], &d);
  memcpy(out, d.rotation, sizeof d.rotation);
  return ECS_ERR_OK;
}

ecs_err ecs_transform_set_local(ecs_transform *t, ecs_entity e,
                                const ecs_trs *local) {
  uint32_t i;
  ecs_trs l;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  if ((err = ecsi_transform_clean_trs(local, &l)) != ECS_ERR_OK) return err;
  repair(t, i);
  put_local_row(t, i, &l);
  ecsi_transform_propagate(t, i);
  return notify(t, e, ECS_EVENT_SET);
}

/* The component setters start from the effective local (see get_local). */
ecs_err ecs_transform_set_position(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.position[0] = x;
  l.position[1] = y;
  l.position[2] = z;
  return ecs_transform_set_local(t, e, &l);
}

ecs_err ecs_transform_set_rotation(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z, double w) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.rotation[0] = x;
  l.rotation[1] = y;
  l.rotation[2] = z;
  l.rotation[3] = w;
  return ecs_transform_set_local(t, e, &l);
}

ecs_err ecs_transform_set_scale(ecs_transform *t, ecs_entity e, double x,
                                double y, double z) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.scale[0] = x;
  l.scale[1] = y;
  l.scale[2] = z;
  return ecs_transform_set_local(t, e, &l);
}

/*
** Reorder every row depth first (pre-order, roots in row order, dead rows
** included): parents before children and each subtree contiguous, so
** propagation walks memory forward. A new buffer and an old -> new table
** are allocated first; on failure nothing changed.
*/
ecs_err ecs_transform_sort(ecs_transform *t) {
  uint32_t n = t->n, k = 0, *newpos;
  ecs_entity *order;
  void *nb;
  ecs_transform old = *t;
  if (n == 0) return ECS_ERR_OK;
  newpos = (uint32_t *)ecsi_realloc(t->w, NULL, 0, (size_t)n * sizeof *newpos);
  if (newpos == NULL) return ECS_ERR_NOMEM;
  order = (ecs_entity *)ecsi_realloc(t->w, NULL, 0, (size_t)n * sizeof *order);
  nb = order == NULL ? NULL : ecsi_realloc(t->w, NULL, 0, t->buf_size);
  if (nb == NULL) {
    ecsi_free(t->w, order, order == NULL ? 0 : (size_t)n * sizeof *order);
    ecsi_free(t->w, newpos, (size_t)n * sizeof *newpos);
    return ECS_ERR_NOMEM;
  }
  for (uint32_t r = 0; r < n; r++) {
    uint32_t c;
    if (old.parent[r] != NONE) continue;
    newpos[r] = k++;
    c = old.first_child[r];
    while (c != NONE) {
      newpos[c] = k++;
      if (old.first_child[c] != NONE) {
        c = old.first_child[c];
        continue;
      }
      while (old.next_sibling[c] == NONE) {
        c = old.parent[c];
        if (c == r) break;
      }
      if (c == r) break;
      c = old.next_sibling[c];
    }
  }
  /* the component's rows first: the one step left that can fail */
  for (uint32_t i = 0; i < n; i++) order[newpos[i]] = old.entity[i];
  if (!ecs_owned_permute(t->w, t->c, order)) {
    ecsi_free(t->w, nb, t->buf_size);
    ecsi_free(t->w, order, (size_t)n * sizeof *order);
    ecsi_free(t->w, newpos, (size_t)n * sizeof *newpos);
    return ECS_ERR_NOMEM;
  }
  ecsi_free(t->w, order, (size_t)n * sizeof *order);
  set_columns(t, nb, t->cap + 1u);
#define REMAP(v) ((v) == NONE ? NONE : newpos[v])
  for (uint32_t i = 0; i < n; i++) {
    uint32_t d = newpos[i];
    memcpy(t->world[d], old.world[i], sizeof t->world[d]);
    t->entity[d] = old.entity[i];
    t->mark[d] = old.mark[i];
    t->parent[d] = REMAP(old.parent[i]);
    t->first_child[d] = REMAP(old.first_child[i]);
    t->next_sibling[d] = REMAP(old.next_sibling[i]);
    t->prev_sibling[d] = REMAP(old.prev_sibling[i]);
    ecsi_sparse_set(&t->map, ecs_entity_index(old.entity[i]), d);
  }
#undef REMAP
  ecsi_free(t->w, old.buf, old.buf_size);
  ecsi_free(t->w, newpos, (size_t)n * sizeof *newpos);
  t->buf = nb;
  return ECS_ERR_OK;
}

/* }==================================================================== */
