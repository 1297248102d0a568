/*
** transform_hierarchy.c -- parenting: set_parent, and the walks over a
** node's family.
**
** set_parent has two hard parts, both decided before any link changes.
** Cycles: the physical links must stay acyclic through dead rows too
** (they stay linked until gc), so the new parent's ancestor chain is
** repaired where it crosses a dead row whenever the child could be above
** it, which may_be_below answers in the smaller of the two walks.
** keep_world: the local that keeps the child's world matrix under the new
** parent may not exist (a singular parent, an overflow), and then nothing
** changes. The readers (parent, first_child, next_sibling) skip dead rows;
** destroy_tree walks the subtree the way propagation does.
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "transform_private.h"

/*
** Could linking c under p close a loop of the physical links (dead rows
** included)? Only if p is below c, which needs c to have children: a leaf
** answers at once, so building a chain node by node stays linear. Else
** walk up from p and, step for step, depth first through c's subtree;
** whichever ends first answers, so the cost is the smaller of p's depth
** and c's subtree size (the subtree walk moves at most two links a node).
*/
static bool may_be_below(const ecs_transform *t, uint32_t p, uint32_t c) {
  uint32_t up = p, down = t->first_child[c];
  while (down != NONE) {
    if (t->parent[up] == c) return true;
    up = t->parent[up];
    if (up == NONE) return false; /* p's chain ends at a root without c */
    if (down == p) return true;
    if (t->first_child[down] != NONE) {
      down = t->first_child[down];
      continue;
    }
    while (t->next_sibling[down] == NONE) {
      down = t->parent[down];
      if (down == c) return false; /* c's subtree ends without p */
    }
    down = t->next_sibling[down];
  }
  return false;
}

/*
** The local transform that keeps c's world matrix under p (NONE: as a
** root), into *l. @return NULL, or why there is none (the text after
** "transform:set_parent: "; the binding reports it).
*/
static const char *keep_world_local(const ecs_transform *t, uint32_t c,
                                    uint32_t p, ecs_trs *l) {
  double m[16];
  if (!all_finite(t->world[c], 16))
    return "keep_world: the child's world matrix is not finite";
  if (p == NONE) {
    memcpy(m, t->world[c], sizeof m);
  } else {
    if (!all_finite(t->world[p], 16))
      return "keep_world: the parent's world matrix is not finite";
    if (!ecsi_transform_relative_to(t->world[p], t->world[c], m))
      return "keep_world under a singular parent matrix";
  }
  if (!ecsi_transform_decompose(m, l) ||
      ecsi_transform_clean_trs(l, l) != ECS_ERR_OK)
    return "keep_world: the local transform that keeps the world matrix is not finite";
  return NULL;
}

/*
** Order: find both rows; repair the child; reject cycles, repairing the
** parent's ancestor chain where it crosses a dead row when the child
** could be above it (so the physical links stay acyclic); compute the
** kept-world local if asked (may fail, see keep_world_local); only then
** relink. The parent-first swap runs last and moves rows only.
*/
ecs_err ecs_transform_set_parent(ecs_transform *t, ecs_entity child,
                                 ecs_entity parent, bool keep_world) {
  uint32_t c, p = NONE;
  ecs_trs l;
  ecs_err err = find_row(t, child, &c);
  if (err != ECS_ERR_OK) return err;
  if (parent != ECS_NULL) {
    uint32_t a;
    err = find_row(t, parent, &p);
    if (err != ECS_ERR_OK) return err;
    repair(t, c);
    if (p == c) return ECS_ERR_CYCLE;
    if (may_be_below(t, p, c))
      for (a = p; t->parent[a] != NONE; a = t->parent[a]) {
        if (!row_alive(t, t->parent[a])) {
          ecsi_transform_orphan_row(t, a);
          break;
        }
        if (t->parent[a] == c) return ECS_ERR_CYCLE;
      }
  } else {
    repair(t, c);
  }
  if (keep_world && keep_world_local(t, c, p, &l) != NULL)
    return ECS_ERR_KEEP_WORLD;
  ecsi_transform_unlink_row(t, c);
  if (p != NONE) ecsi_transform_link_row(t, c, p);
  if (keep_world) put_local_row(t, c, &l); /* world kept exactly */
  else ecsi_transform_propagate(t, c);
  if (p != NONE && t->parent_first && c < p) ecsi_transform_swap_rows(t, c, p);
  return notify(t, child, ECS_EVENT_SET);
}

const char *ecs_transform_keep_world_error(const ecs_transform *t,
                                           ecs_entity child,
                                           ecs_entity parent) {
  uint32_t c, p = NONE;
  ecs_trs l;
  if (find_row(t, child, &c) != ECS_ERR_OK) return NULL;
  if (parent != ECS_NULL && find_row(t, parent, &p) != ECS_ERR_OK) return NULL;
  return keep_world_local(t, c, p, &l);
}

ecs_entity ecs_transform_parent(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e), p;
  if (i == NONE) return ECS_NULL;
  p = t->parent[i];
  if (p == NONE || !row_alive(t, p)) return ECS_NULL;
  return t->entity[p];
}

static ecs_entity live_from(const ecs_transform *t, uint32_t c) {
  for (; c != NONE; c = t->next_sibling[c])
    if (row_alive(t, c)) return t->entity[c];
  return ECS_NULL;
}

ecs_entity ecs_transform_first_child(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e);
  return i == NONE ? ECS_NULL : live_from(t, t->first_child[i]);
}

ecs_entity ecs_transform_next_sibling(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e), p;
  if (i == NONE) return ECS_NULL;
  p = t->parent[i];
  if (p == NONE || !row_alive(t, p)) return ECS_NULL;
  return live_from(t, t->next_sibling[i]);
}

/*
** A post-order walk, stackless like propagate's: each node is destroyed
** after all of its descendants, because a death makes the dying node's
** children roots at once (transform.c, died): destroyed parent first, the
** walk would lose the rest of the subtree. Before a node is destroyed its
** next sibling and parent are read; its death unlinks only its own
** (already dead) children, so those links still hold.
** With stop, a listener's error (a REMOVE of any manager of the dying
** entity) stops the walk after that entity died, as world:destroy(list)
** stops after the entity whose listener failed: the descendants destroyed
** so far stay so, the rest of the tree is left alive. Without, errors are
** dropped and the walk goes on, as ecs_destroy_n does. The cleanup of
** entity fields held meanwhile runs either way; the first error is
** returned.
*/
static ecs_err destroy_tree(ecs_transform *t, ecs_entity e, bool stop,
                            size_t *destroyed) {
  uint32_t root = row_of(t, e), c;
  size_t done = 0;
  ecs_err err = ECS_ERR_OK, cerr;
  *destroyed = 0;
  if (root == NONE) return ECS_ERR_OK;
  ecs_cleanup_hold(t->w); /* entity fields: one sweep for the tree */
  c = root;
  for (;;) {
    while (t->first_child[c] != NONE) c = t->first_child[c];
    for (;;) {
      uint32_t next = c == root ? NONE : t->next_sibling[c];
      uint32_t p = t->parent[c];
      if (row_alive(t, c)) {
        bool one;
        ecs_err derr = ecs_destroy_report(t->w, t->entity[c], &one);
        if (err == ECS_ERR_OK) err = derr;
        done += one;
      }
      if ((stop && err != ECS_ERR_OK) || c == root || p == NONE) {
        cerr = ecs_cleanup_release(t->w);
        *destroyed = done;
        return err != ECS_ERR_OK ? err : cerr;
      }
      if (next != NONE) {
        c = next;
        break;
      }
      c = p;
    }
  }
}

ecs_err ecs_transform_destroy_tree_report(ecs_transform *t, ecs_entity e,
                                          size_t *destroyed) {
  return destroy_tree(t, e, true, destroyed);
}

size_t ecs_transform_destroy_tree(ecs_transform *t, ecs_entity e) {
  size_t done;
  (void)destroy_tree(t, e, false, &done);
  return done;
}

void ecs_transform_set_parent_first(ecs_transform *t, bool on) {
  t->parent_first = on;
}
