/*
** test_listeners.c -- the world's listeners (ecs.h: ecs_manager_listen,
** ecs_manager_unlisten, ecs_manager_notify; registry.c) and the events
** the component and names managers report: ADD, REMOVE, SET.
**
** Listeners run in the order they were added, filtered by their mask and
** manager; a listener removed during a notification is not called again,
** one added during it runs from the next event; the first error stops the
** rest and is returned, the change standing; a listener may remove the
** component or destroy the entity it is told about, and the manager must
** not use what it looked up before. A world without listeners does not
** even call into the registry.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "names.h"

/* ------------------------------------------------------------------------
** A log of calls, and listeners that act
** --------------------------------------------------------------------- */

typedef struct entry {
  int id;
  const void *manager;
  ecs_entity e;
  ecs_event event;
  int readable; /* REMOVE: the instance or name could still be read */
} entry;

typedef struct logbook {
  entry at[256];
  int n;
} logbook;

struct fixture;

/* One listener: its id, what it returns, and what it does when called. */
typedef struct lis {
  int id;
  ecs_err ret;
  struct fixture *f;
  int action;
  struct lis *target; /* for unlisten / listen actions */
  int done;           /* one-shot actions */
} lis;

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P, *Q;
  ecs_names *N;
  ecs_entity e[8];
  logbook log;
} fixture;

enum {
  DO_NOTHING,
  DO_UNLISTEN,      /* unlisten target (once) */
  DO_UNLISTEN_SELF, /* unlisten itself */
  DO_LISTEN,        /* add target as a listener of P for every event (once) */
  DO_REMOVE,        /* remove the component it is told about from e */
  DO_DESTROY,       /* destroy e */
  DO_ADD_MANY,      /* add P to 200 new entities (P's columns move) */
  DO_REMOVE_OTHER,  /* remove P from e[0] if told about e[1], and back */
  DO_ADD_Q,         /* give e a Q (an event of another manager) */
  DO_CLEAR_NAME,    /* clear e's name */
  DO_RENAME,        /* on REMOVE, give e the name "renamed" */
  DO_ADD_P,         /* give e a P (once) */
  DO_REMOVE_READD   /* remove the component it is told about, add it again (once) */
};

static ecs_err listener(ecs_world *w, void *manager, ecs_entity e,
                        ecs_event event, void *ud);

static int readable(fixture *f, const void *manager, ecs_entity e) {
  if (manager == f->N) return ecs_names_get(f->N, e, NULL) != NULL;
  return ecs_component_lookup(f->w, (const ecs_component *)manager, e) !=
         ECS_NO_INSTANCE;
}

static ecs_err listener(ecs_world *w, void *manager, ecs_entity e,
                        ecs_event event, void *ud) {
  lis *l = (lis *)ud;
  fixture *f = l->f;
  entry *en = &f->log.at[f->log.n < 255 ? f->log.n++ : 255];
  bool done;
  en->id = l->id;
  en->manager = manager;
  en->e = e;
  en->event = event;
  en->readable = readable(f, manager, e);
  switch (l->action) {
  case DO_UNLISTEN:
    if (!l->done) l->done = ecs_manager_unlisten(w, f->P, listener, l->target);
    break;
  case DO_UNLISTEN_SELF:
    ecs_manager_unlisten(w, manager, listener, l);
    break;
  case DO_LISTEN:
    if (!l->done) {
      l->done = 1;
      if (ecs_manager_listen(w, f->P, ECS_EVENT_ADD | ECS_EVENT_REMOVE |
                                          ECS_EVENT_SET,
                             listener, l->target) != ECS_ERR_OK)
        return ECS_ERR_NOMEM;
    }
    break;
  case DO_REMOVE:
    if (manager == f->N) return ecs_names_clear(f->N, e, &done);
    return ecs_component_remove(w, (ecs_component *)manager, e, &done);
  case DO_DESTROY:
    ecs_destroy(w, e);
    break;
  case DO_ADD_MANY:
    for (int k = 0; k < 200; k++) {
      ecs_entity x;
      if (ecs_create(w, &x) != ECS_ERR_OK ||
          ecs_component_emplace(w, f->P, x, NULL, NULL) != ECS_ERR_OK)
        return ECS_ERR_NOMEM;
    }
    break;
  case DO_REMOVE_OTHER:
    return ecs_component_remove(w, f->P, e == f->e[1] ? f->e[0] : f->e[1],
                                &done);
  case DO_ADD_Q:
    return ecs_component_add(w, f->Q, e, NULL, NULL);
  case DO_CLEAR_NAME:
    return ecs_names_clear(f->N, e, &done);
  case DO_ADD_P:
    if (l->done) break;
    l->done = 1;
    return ecs_component_add(w, f->P, e, NULL, NULL);
  case DO_REMOVE_READD:
    if (l->done) break;
    l->done = 1;
    if (ecs_component_remove(w, (ecs_component *)manager, e, &done) != ECS_ERR_OK)
      return ECS_ERR_INVALID;
    return ecs_component_add(w, (ecs_component *)manager, e, NULL, NULL);
  case DO_RENAME: /* on REMOVE only: the rename's own SET comes here too */
    if (event == ECS_EVENT_REMOVE) return ecs_names_set(f->N, e, "renamed", 7);
    break;
  default:
    break;
  }
  return l->ret;
}

static const ecs_field_def pfields[] = {{"x", ECS_I32}};

static int setup(fixture *f) {
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  return f->w != NULL &&
         ecs_component_new(f->w, "P", pfields, 1, &f->P) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Q", NULL, 0, &f->Q) == ECS_ERR_OK &&
         ecs_names_new(f->w, &f->N) == ECS_ERR_OK &&
         ecs_create_n(f->w, f->e, 8) == ECS_ERR_OK;
}

static lis mk(fixture *f, int id, int action) {
  lis l;
  memset(&l, 0, sizeof l);
  l.id = id;
  l.f = f;
  l.action = action;
  return l;
}

static unsigned head_listeners(const ecs_world *w) {
  return ((const ecs_world_head *)(const void *)w)->listeners;
}

/* The ids of the log, as a string ("12" for 1 then 2), for short checks. */
static const char *ids(fixture *f) {
  static char buf[257];
  int k;
  for (k = 0; k < f->log.n; k++) buf[k] = (char)('0' + f->log.at[k].id);
  buf[k] = '\0';
  f->log.n = 0;
  return buf;
}

static ecs_err add(fixture *f, ecs_component *c, ecs_entity e) {
  return ecs_component_add(f->w, c, e, NULL, NULL);
}

/* ------------------------------------------------------------------------
** The registry
** --------------------------------------------------------------------- */

TEST(Listeners_listen_validates_its_arguments) {
  fixture f;
  lis a;
  int not_a_manager;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, NULL, &a),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, 0, listener, &a), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, 8, listener, &a), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | 8, listener, &a),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_manager_listen(f.w, &not_a_manager, ECS_EVENT_ADD,
                                  listener, &a),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_manager_listen(f.w, NULL, ECS_EVENT_ADD, listener, &a),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(head_listeners(f.w), 0);
  CHECK(!ecs_manager_unlisten(f.w, f.P, listener, &a));
  CHECK(!ecs_manager_unlisten(f.w, f.P, NULL, NULL));
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(f.log.n, 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A failed listen changes nothing; the next one works. */
TEST(Listeners_listen_out_of_memory) {
  fixture f;
  lis a;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  f.a.fail_at = f.a.calls + 1;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a),
               ECS_ERR_NOMEM);
  f.a.fail_at = 0;
  CHECK_EQ_INT(head_listeners(f.w), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(f.log.n, 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a),
               ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_EQ_INT(f.log.n, 1);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Order of addition, each listener's mask, each listener's manager. */
TEST(Listeners_run_in_order_filtered_by_mask_and_manager) {
  fixture f;
  lis a, b, c, q;
  bool removed;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  b = mk(&f, 2, DO_NOTHING);
  c = mk(&f, 3, DO_NOTHING);
  q = mk(&f, 4, DO_NOTHING);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE |
                                                ECS_EVENT_SET,
                                  listener, &a),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_ADD, listener, &q), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &b), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &c), 0);
  CHECK_EQ_INT(head_listeners(f.w), 4);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK(f.log.at[0].e == f.e[0] && f.log.at[0].event == ECS_EVENT_ADD &&
        f.log.at[0].manager == f.P && f.log.at[0].readable);
  /* ADD to a and b, then SET (a new record's values were written) to a,
  ** after every ADD listener */
  CHECK(f.log.at[2].event == ECS_EVENT_SET && f.log.at[2].readable);
  CHECK(strcmp(ids(&f), "121") == 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK); /* had it: no event */
  CHECK(strcmp(ids(&f), "") == 0);
  CHECK_EQ_INT(ecs_manager_notify(f.w, f.P, f.e[0], ECS_EVENT_SET), 0);
  CHECK(f.log.at[0].event == ECS_EVENT_SET);
  CHECK(strcmp(ids(&f), "1") == 0);
  CHECK_EQ_INT(add(&f, f.Q, f.e[0]), ECS_ERR_OK);
  CHECK(f.log.at[0].manager == f.Q);
  CHECK(strcmp(ids(&f), "4") == 0);
  /* REMOVE before the instance goes: the listeners could still read it */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &removed), ECS_ERR_OK);
  CHECK(removed);
  CHECK(f.log.at[0].event == ECS_EVENT_REMOVE && f.log.at[0].readable &&
        f.log.at[1].readable);
  CHECK(strcmp(ids(&f), "13") == 0);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[0]) == ECS_NO_INSTANCE);
  /* nothing to remove, dead entities: no event */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &removed), ECS_ERR_OK);
  CHECK(!removed);
  CHECK_EQ_INT(add(&f, f.P, ECS_NULL), ECS_ERR_DEAD);
  CHECK(strcmp(ids(&f), "") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** With no listener a manager's notification is one load and a branch:
** the macro does not even evaluate its manager argument (so it calls
** nothing). The count follows listen and unlisten exactly.
*/
TEST(Listeners_zero_cost_without_listeners) {
  fixture f;
  lis a, b;
  int evaluated = 0;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  b = mk(&f, 2, DO_NOTHING);
  CHECK_EQ_INT(head_listeners(f.w), 0);
  CHECK_EQ_INT(ecs_manager_notify(f.w, (evaluated++, (void *)f.P), f.e[0],
                                  ECS_EVENT_ADD),
               ECS_ERR_OK);
  CHECK_EQ_INT(evaluated, 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_ADD, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_ADD, listener, &b), 0);
  CHECK_EQ_INT(head_listeners(f.w), 2);
  CHECK_EQ_INT(ecs_manager_notify(f.w, (evaluated++, (void *)f.P), f.e[0],
                                  ECS_EVENT_ADD),
               ECS_ERR_OK);
  CHECK_EQ_INT(evaluated, 1); /* called now, but no listener of P */
  CHECK_EQ_INT(f.log.n, 0);
  CHECK(ecs_manager_unlisten(f.w, f.Q, listener, &a));
  CHECK_EQ_INT(head_listeners(f.w), 1);
  CHECK(!ecs_manager_unlisten(f.w, f.Q, listener, &a));
  CHECK(ecs_manager_unlisten(f.w, f.Q, listener, &b));
  CHECK_EQ_INT(head_listeners(f.w), 0);
  CHECK_EQ_INT(ecs_manager_notify(f.w, (evaluated++, (void *)f.P), f.e[0],
                                  ECS_EVENT_ADD),
               ECS_ERR_OK);
  CHECK_EQ_INT(evaluated, 1);
  CHECK_EQ_INT(add(&f, f.Q, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(f.log.n, 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** Removal during a notification: a later listener removed by an earlier
** one is not called for this event; a listener removing itself is not
** called again; the others run on. Of two identical registrations, the
** earliest goes.
*/
TEST(Listeners_unlisten_during_notification) {
  fixture f;
  lis a, b, c, d;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_UNLISTEN);
  b = mk(&f, 2, DO_NOTHING);
  c = mk(&f, 3, DO_UNLISTEN_SELF);
  d = mk(&f, 4, DO_NOTHING);
  a.target = &b;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &b), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &c), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &d), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "134") == 0);
  CHECK_EQ_INT(head_listeners(f.w), 2);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "14") == 0);
  /* an earlier listener removed by a later one: already ran */
  d.action = DO_UNLISTEN;
  d.target = &a;
  a.action = DO_NOTHING;
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "14") == 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[3]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "4") == 0);
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &d));
  CHECK_EQ_INT(head_listeners(f.w), 0);
  /* the same (manager, fn, ud) twice, with different masks */
  a.action = DO_NOTHING;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE,
                                  listener, &a),
               0);
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &a)); /* the ADD-only one */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], NULL), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "1") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A listener added during a notification runs from the next event. */
TEST(Listeners_added_during_notification_run_from_the_next_event) {
  fixture f;
  lis a, b;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_LISTEN);
  b = mk(&f, 2, DO_NOTHING);
  a.target = &b;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "1") == 0);
  CHECK_EQ_INT(head_listeners(f.w), 2);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "122") == 0); /* ADD to both, then b's SET */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[1], NULL), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "2") == 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A notification inside a notification (P's ADD listener adds Q, whose
** listener removes P's first listener): the removed one is skipped from
** then on, in the outer walk too, and the array is compacted only when
** the outermost notification returns.
*/
TEST(Listeners_nested_notifications) {
  fixture f;
  lis a, b, q;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_ADD_Q);
  b = mk(&f, 2, DO_NOTHING);
  q = mk(&f, 3, DO_UNLISTEN);
  q.target = &b;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_ADD, listener, &q), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &b), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "13") == 0); /* b was gone before its turn */
  CHECK(ecs_component_lookup(f.w, f.Q, f.e[0]) != ECS_NO_INSTANCE);
  CHECK_EQ_INT(head_listeners(f.w), 2);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "13") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* The first error stops the others and is returned; the change stands. */
TEST(Listeners_error_stops_the_rest_and_the_change_stands) {
  fixture f;
  lis a, b, c;
  ecs_instance i;
  bool existed = true, removed = false;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  b = mk(&f, 2, DO_NOTHING);
  c = mk(&f, 3, DO_NOTHING);
  b.ret = ECS_ERR_INVALID;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE,
                                  listener, &a),
               0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE,
                                  listener, &b),
               0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE,
                                  listener, &c),
               0);
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, f.e[0], &i, &existed),
               ECS_ERR_INVALID);
  CHECK(strcmp(ids(&f), "12") == 0);
  CHECK(!existed);
  CHECK(i != ECS_NO_INSTANCE && ecs_component_lookup(f.w, f.P, f.e[0]) == i);
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &removed),
               ECS_ERR_INVALID);
  CHECK(strcmp(ids(&f), "12") == 0);
  CHECK(removed);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[0]) == ECS_NO_INSTANCE);
  CHECK_WORLD(f.w);
  /* the names manager likewise */
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.N, ECS_EVENT_ADD | ECS_EVENT_SET |
                                                ECS_EVENT_REMOVE,
                                  listener, &b),
               0);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "a", 1), ECS_ERR_INVALID);
  CHECK(ecs_names_find(f.N, "a", 1) == f.e[0]);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "b", 1), ECS_ERR_INVALID);
  CHECK(ecs_names_find(f.N, "b", 1) == f.e[0]);
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[0], &removed), ECS_ERR_INVALID);
  CHECK(removed && ecs_names_get(f.N, f.e[0], NULL) == NULL);
  CHECK(strcmp(ids(&f), "222") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A listener of ADD that removes the instance or destroys the entity: add
** reports what is left (no instance). A listener of REMOVE that destroys
** the entity: its record is dead and waits for gc, like any. One that
** removes it again: removed once, reported once. One that grows the
** manager (its columns move): the right instance still goes.
*/
TEST(Listeners_that_remove_or_destroy_the_entity) {
  fixture f;
  lis a;
  ecs_instance i;
  bool existed = true, removed = false;
  uint32_t size;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_REMOVE);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_REMOVE,
                                  listener, &a),
               0);
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, f.e[0], &i, &existed), ECS_ERR_OK);
  CHECK(!existed && i == ECS_NO_INSTANCE);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[0]) == ECS_NO_INSTANCE);
  /* ADD, then the nested remove's REMOVE, whose own remove adds nothing */
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].event == ECS_EVENT_ADD &&
        f.log.at[1].event == ECS_EVENT_REMOVE && f.log.at[1].readable);
  f.log.n = 0;
  CHECK_EQ_INT(ecs_component_size(f.P), 0);
  CHECK_WORLD(f.w);
  /* REMOVE that removes the same entity again: once */
  a.action = DO_NOTHING;
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  f.log.n = 0;
  a.action = DO_REMOVE;
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[1], &removed), ECS_ERR_OK);
  CHECK(removed);
  CHECK_EQ_INT(f.log.n, 1);
  f.log.n = 0;
  CHECK_EQ_INT(ecs_component_size(f.P), 1);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[2]) == 0);
  CHECK_WORLD(f.w);
  /* ADD that destroys */
  a.action = DO_DESTROY;
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, f.e[3], &i, NULL), ECS_ERR_OK);
  CHECK(i == ECS_NO_INSTANCE && !ecs_alive(f.w, f.e[3]));
  CHECK_WORLD(f.w);
  /* REMOVE that destroys: the record stays, dead, until gc */
  size = ecs_component_size(f.P);
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[2], &removed), ECS_ERR_OK);
  CHECK(removed && !ecs_alive(f.w, f.e[2]));
  CHECK_EQ_INT(ecs_component_size(f.P), size);
  CHECK_EQ_INT(ecs_component_count(f.w, f.P), 0);
  CHECK_WORLD(f.w);
  CHECK_EQ_INT(ecs_world_gc(f.w, SIZE_MAX), 2);
  f.log.n = 0;
  /* REMOVE that adds 200 instances: the columns move under the remove */
  a.action = DO_NOTHING;
  CHECK_EQ_INT(add(&f, f.P, f.e[4]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[5]), ECS_ERR_OK);
  ((int32_t *)ecs_component_column(f.P, 0))[ecs_component_lookup(f.w, f.P, f.e[5])] = 55;
  a.action = DO_ADD_MANY;
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[4], &removed), ECS_ERR_OK);
  CHECK(removed);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[4]) == ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_size(f.P), 201);
  CHECK_EQ_INT(((int32_t *)ecs_component_column(f.P, 0))
                   [ecs_component_lookup(f.w, f.P, f.e[5])],
               55);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Two REMOVE listeners that remove each other's entity: each entity is
** reported once and removed once; no recursion without end. */
TEST(Listeners_removing_each_other) {
  fixture f;
  lis a;
  bool removed;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_REMOVE_OTHER);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &removed), ECS_ERR_OK);
  CHECK(removed);
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].e == f.e[0] && f.log.at[1].e == f.e[1]);
  CHECK(f.log.at[0].readable && f.log.at[1].readable);
  CHECK_EQ_INT(ecs_component_size(f.P), 1);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[2]) == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A listener whose change is reported to itself (on ADD, give a new
** entity the component) would recurse without end: the 65th nested
** notification fails with ECS_ERR_NESTING, which unwinds to the first
** call; every change made on the way stands and the world is consistent. */
static int chain_calls;
static ecs_err chain(ecs_world *w, void *manager, ecs_entity e,
                     ecs_event event, void *ud) {
  ecs_entity next;
  ecs_err err;
  (void)e, (void)event, (void)ud;
  chain_calls++;
  if ((err = ecs_create(w, &next)) != ECS_ERR_OK) return err;
  return ecs_component_add(w, (ecs_component *)manager, next, NULL, NULL);
}

TEST(Listeners_nesting_is_bounded) {
  fixture f;
  ecs_err err;
  CHECK(setup(&f));
  chain_calls = 0;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, chain, NULL), 0);
  err = add(&f, f.P, f.e[0]);
  CHECK_EQ_INT(err, ECS_ERR_NESTING);
  CHECK_EQ_INT(chain_calls, 64);
  CHECK_EQ_INT(ecs_component_count(f.w, f.P), 65); /* e[0] and 64 more */
  CHECK(strcmp(ecs_strerror(err), "listeners nested too deeply (limit 64)") == 0);
  CHECK_WORLD(f.w);
  /* the world stays usable: with the listener gone, add works */
  CHECK(ecs_manager_unlisten(f.w, f.P, chain, NULL));
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Names: ADD for a first name, SET for a new one, REMOVE before clear
** (still readable); a listener that clears or renames during REMOVE. */
TEST(Listeners_names_events) {
  fixture f;
  lis a;
  bool cleared = false;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.N, ECS_EVENT_ADD | ECS_EVENT_SET |
                                                ECS_EVENT_REMOVE,
                                  listener, &a),
               0);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "a", 1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "b", 1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(f.N, ECS_NULL, "b", 1), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[0], &cleared), ECS_ERR_OK);
  CHECK(cleared);
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[0], &cleared), ECS_ERR_OK);
  CHECK(!cleared);
  CHECK_EQ_INT(f.log.n, 4);
  CHECK(f.log.at[0].event == ECS_EVENT_ADD && f.log.at[0].manager == f.N &&
        f.log.at[0].e == f.e[0]);
  CHECK(f.log.at[1].event == ECS_EVENT_SET); /* the first name, after ADD */
  CHECK(f.log.at[2].event == ECS_EVENT_SET); /* the rename */
  CHECK(f.log.at[3].event == ECS_EVENT_REMOVE && f.log.at[3].readable);
  f.log.n = 0;
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[2], "c", 1), ECS_ERR_OK);
  CHECK(f.log.at[0].event == ECS_EVENT_ADD);
  f.log.n = 0;
  /* clearing the same name again from REMOVE: once */
  a.action = DO_CLEAR_NAME;
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[2], &cleared), ECS_ERR_OK);
  CHECK(cleared && ecs_names_get(f.N, f.e[2], NULL) == NULL);
  CHECK_EQ_INT(f.log.n, 1);
  f.log.n = 0;
  /* renaming from REMOVE (a SET inside): the clear still clears */
  a.action = DO_NOTHING;
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[3], "d", 1), ECS_ERR_OK);
  a.action = DO_RENAME;
  f.log.n = 0;
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[3], &cleared), ECS_ERR_OK);
  CHECK(ecs_names_get(f.N, f.e[3], NULL) == NULL);
  CHECK(ecs_names_find(f.N, "renamed", 7) == ECS_NULL);
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].event == ECS_EVENT_REMOVE &&
        f.log.at[1].event == ECS_EVENT_SET);
  f.log.n = 0;
  /* REMOVE that destroys the entity: nothing left to clear */
  a.action = DO_NOTHING;
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[4], "e", 1), ECS_ERR_OK);
  a.action = DO_DESTROY;
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[4], &cleared), ECS_ERR_OK);
  CHECK(cleared && !ecs_alive(f.w, f.e[4]));
  CHECK(ecs_names_find(f.N, "e", 1) == ECS_NULL);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* gc, clear and load report nothing (ecs.h); destroy reports REMOVE. */
TEST(Listeners_silent_paths) {
  fixture f;
  lis a;
  const ecs_manager_class *pc = NULL, *nc = NULL;
  unsigned char buf[64];
  size_t n = 0;
  ecs_reader in;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "a", 1), ECS_ERR_OK);
  for (size_t i = 0; i < ecs_manager_count(f.w); i++) {
    const ecs_manager_class *cls;
    void *self = ecs_manager_at(f.w, i, NULL, &cls);
    if (self == f.P) pc = cls;
    if (self == f.N) nc = cls;
    CHECK_EQ_INT(ecs_manager_listen(f.w, self, ECS_EVENT_ADD | ECS_EVENT_SET |
                                                   ECS_EVENT_REMOVE,
                                    listener, &a),
                 0);
  }
  CHECK(pc != NULL && nc != NULL);
  ecs_destroy(f.w, f.e[0]); /* REMOVE from P and names (ecs_destroy_report) */
  CHECK_EQ_INT(f.log.n, 2);
  f.log.n = 0;
  CHECK_EQ_INT(ecs_world_gc(f.w, SIZE_MAX), 2);
  {
    /* an empty P saved by hand: layout 2, one field x:i32, no owner
    ** (the list's terminator) */
    uint32_t words[] = {2, 1, (uint32_t)ECS_I32, 1};
    memcpy(buf, words, sizeof words);
    buf[16] = 'x';
    memset(buf + 17, 0, 4);
    n = 21;
  }
  in.data = buf;
  in.size = n;
  in.pos = 0;
  CHECK_EQ_INT(pc->load(f.w, f.P, &in), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_size(f.P), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  CHECK_EQ_INT(f.log.n, 2); /* that add (ADD, then SET), only */
  f.log.n = 0;
  pc->clear(f.w, f.P);
  nc->clear(f.w, f.N);
  CHECK_EQ_INT(f.log.n, 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}


/*
** destroy reports REMOVE (ecs_destroy_report): to each manager that has a
** REMOVE listener and a record of e, in registration order (P, Q, then
** names), e alive and its records readable; a listener's destroy of e
** does nothing (no second report); an error stops the rest, e dies all
** the same; ADD/SET-only listeners hear nothing; destroy_n reports per
** entity, in order.
*/
TEST(Listeners_destroy_reports_remove) {
  fixture f;
  lis a, b, c, d;
  bool done;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_NOTHING);
  b = mk(&f, 2, DO_DESTROY);
  c = mk(&f, 3, DO_NOTHING);
  d = mk(&f, 4, DO_NOTHING);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.Q, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[0], "a", 1), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.N, ECS_EVENT_REMOVE, listener, &c), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_ADD | ECS_EVENT_SET,
                                  listener, &d), 0);
  CHECK(ecs_destroy(f.w, f.e[0]));
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].manager == f.P && f.log.at[0].e == f.e[0]);
  CHECK(f.log.at[0].event == ECS_EVENT_REMOVE && f.log.at[0].readable);
  CHECK(f.log.at[1].manager == f.N && f.log.at[1].readable);
  CHECK(strcmp(ids(&f), "13") == 0);
  CHECK(!ecs_destroy(f.w, f.e[0])); /* dead: nothing */
  CHECK_EQ_INT(f.log.n, 0);
  /* a listener that destroys e: e dies once, reported once */
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &b), 0);
  CHECK(ecs_destroy(f.w, f.e[1]));
  CHECK(strcmp(ids(&f), "12") == 0);
  CHECK(!ecs_alive(f.w, f.e[1]));
  CHECK_WORLD(f.w);
  /* an error stops the rest; e is destroyed */
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &b));
  a.ret = ECS_ERR_READONLY;
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[2], "c", 1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_destroy_report(f.w, f.e[2], &done), ECS_ERR_READONLY);
  CHECK(done && !ecs_alive(f.w, f.e[2]));
  CHECK(strcmp(ids(&f), "1") == 0);
  CHECK_EQ_INT(ecs_destroy_report(f.w, f.e[2], &done), ECS_ERR_OK);
  CHECK(!done);
  a.ret = ECS_ERR_OK;
  /* destroy_n: per entity, in order */
  CHECK_EQ_INT(add(&f, f.P, f.e[3]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.P, f.e[4]), ECS_ERR_OK);
  {
    ecs_entity es[3];
    es[0] = f.e[4], es[1] = f.e[5], es[2] = f.e[3];
    CHECK_EQ_INT(ecs_destroy_n(f.w, es, 3), 3);
  }
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].e == f.e[4] && f.log.at[1].e == f.e[3]);
  f.log.n = 0;
  /* without REMOVE listeners destroy reports nothing (ADD/SET only) */
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &a));
  CHECK(ecs_manager_unlisten(f.w, f.N, listener, &c));
  CHECK_EQ_INT(add(&f, f.Q, f.e[6]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "44") == 0); /* ADD, then SET */
  CHECK(ecs_destroy(f.w, f.e[6]));
  CHECK_EQ_INT(f.log.n, 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A REMOVE listener that re-destroys and adds during destroy, nested:
** the entity it adds to dies with no report missing or doubled. */
TEST(Listeners_destroy_remove_nested) {
  fixture f;
  lis a;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_ADD_Q); /* gives e a Q while e is dying */
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK(ecs_destroy(f.w, f.e[0]));
  /* P's REMOVE adds Q; Q's turn comes after P's: its REMOVE too (whose
  ** listener's add overwrites, no ADD) */
  CHECK_EQ_INT(f.log.n, 2);
  CHECK(f.log.at[0].manager == f.P && f.log.at[1].manager == f.Q);
  CHECK(f.log.at[1].readable);
  CHECK(!ecs_alive(f.w, f.e[0]));
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** ADD is followed by SET: every ADD listener, then every SET listener (a
** SET-only listener hears a new record's values too). No SET when an ADD
** listener failed, or removed the record, or destroyed the entity.
*/
TEST(Listeners_add_is_followed_by_set) {
  fixture f;
  lis set_only, add_only, both;
  CHECK(setup(&f));
  set_only = mk(&f, 1, DO_NOTHING);
  add_only = mk(&f, 2, DO_NOTHING);
  both = mk(&f, 3, DO_NOTHING);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_SET, listener, &set_only), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD, listener, &add_only), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_ADD | ECS_EVENT_SET,
                                  listener, &both), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK(f.log.at[0].event == ECS_EVENT_ADD && f.log.at[1].event == ECS_EVENT_ADD);
  CHECK(f.log.at[2].event == ECS_EVENT_SET && f.log.at[2].readable);
  CHECK(f.log.at[3].event == ECS_EVENT_SET && f.log.at[3].readable);
  CHECK(strcmp(ids(&f), "2313") == 0);
  CHECK_EQ_INT(ecs_manager_notify(f.w, f.P, f.e[0], ECS_EVENT_SET), 0);
  CHECK(strcmp(ids(&f), "13") == 0); /* a SET alone: SET listeners only */
  /* an ADD listener that fails: the rest of the ADD pass and SET skipped */
  add_only.ret = ECS_ERR_READONLY;
  CHECK_EQ_INT(add(&f, f.P, f.e[1]), ECS_ERR_READONLY);
  CHECK(strcmp(ids(&f), "2") == 0);
  add_only.ret = ECS_ERR_OK;
  /* an ADD listener that removes the record, or destroys the entity */
  add_only.action = DO_REMOVE;
  CHECK_EQ_INT(add(&f, f.P, f.e[2]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "23") == 0);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[2]) == ECS_NO_INSTANCE);
  add_only.action = DO_DESTROY;
  CHECK_EQ_INT(add(&f, f.P, f.e[3]), ECS_ERR_OK);
  CHECK(strcmp(ids(&f), "23") == 0);
  CHECK(!ecs_alive(f.w, f.e[3]));
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** Each instance's REMOVE once, however the removals nest: a destroy from
** inside a remove's listeners, a remove from inside a destroy's, a
** component given to a dying entity after its manager's turn, one removed
** and added again from inside its own REMOVE (during a remove and during
** a destroy), and the transform's and names' own removes.
*/
TEST(Listeners_each_remove_reported_once) {
  fixture f;
  lis a, b, c;
  bool done;
  CHECK(setup(&f));
  a = mk(&f, 1, DO_DESTROY);
  b = mk(&f, 2, DO_REMOVE);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Q, ECS_EVENT_REMOVE, listener, &b), 0);
  /* P's REMOVE destroys e: Q's REMOVE comes from the destroy, P's not again */
  CHECK_EQ_INT(add(&f, f.P, f.e[0]), ECS_ERR_OK);
  CHECK_EQ_INT(add(&f, f.Q, f.e[0]), ECS_ERR_OK);
  f.log.n = 0;
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &done), ECS_ERR_OK);
  CHECK(done && !ecs_alive(f.w, f.e[0]));
  CHECK(strcmp(ids(&f), "12") == 0);
  CHECK_WORLD(f.w);
  /* Q's REMOVE (from a destroy) removes Q: once */
  CHECK_EQ_INT(add(&f, f.Q, f.e[1]), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, f.e[1]));
  CHECK(strcmp(ids(&f), "2") == 0);
  CHECK_WORLD(f.w);
  /* Q's REMOVE gives the dying e a P, whose turn came first: reported too */
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &a));
  a = mk(&f, 1, DO_NOTHING);
  b = mk(&f, 2, DO_ADD_P);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(add(&f, f.Q, f.e[2]), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, f.e[2]));
  CHECK(strcmp(ids(&f), "21") == 0);
  CHECK_WORLD(f.w);
  /* P removed and added again from inside its own REMOVE: the new one's
  ** REMOVE too, during a remove (which removes it) and during a destroy */
  CHECK(ecs_manager_unlisten(f.w, f.P, listener, &a));
  CHECK(ecs_manager_unlisten(f.w, f.Q, listener, &b));
  a = mk(&f, 1, DO_REMOVE_READD);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.P, ECS_EVENT_REMOVE, listener, &a), 0);
  CHECK_EQ_INT(add(&f, f.P, f.e[3]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[3], &done), ECS_ERR_OK);
  CHECK(done && ecs_component_lookup(f.w, f.P, f.e[3]) == ECS_NO_INSTANCE);
  CHECK(strcmp(ids(&f), "11") == 0);
  a.done = 0;
  CHECK_EQ_INT(add(&f, f.P, f.e[4]), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, f.e[4]));
  CHECK(strcmp(ids(&f), "11") == 0);
  CHECK_WORLD(f.w);
  /* names: a clear from inside a clear's REMOVE, once */
  c = mk(&f, 3, DO_CLEAR_NAME);
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.N, ECS_EVENT_REMOVE, listener, &c), 0);
  CHECK_EQ_INT(ecs_names_set(f.N, f.e[5], "n", 1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_clear(f.N, f.e[5], &done), ECS_ERR_OK);
  CHECK(done && strcmp(ids(&f), "3") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Listeners_listen_validates_its_arguments),
  CASE(Listeners_listen_out_of_memory),
  CASE(Listeners_run_in_order_filtered_by_mask_and_manager),
  CASE(Listeners_zero_cost_without_listeners),
  CASE(Listeners_unlisten_during_notification),
  CASE(Listeners_added_during_notification_run_from_the_next_event),
  CASE(Listeners_nested_notifications),
  CASE(Listeners_error_stops_the_rest_and_the_change_stands),
  CASE(Listeners_that_remove_or_destroy_the_entity),
  CASE(Listeners_removing_each_other),
  CASE(Listeners_names_events),
  CASE(Listeners_silent_paths),
  CASE(Listeners_nesting_is_bounded),
  CASE(Listeners_destroy_reports_remove),
  CASE(Listeners_destroy_remove_nested),
  CASE(Listeners_add_is_followed_by_set),
  CASE(Listeners_each_remove_reported_once),
};

TEST_MAIN(cases)
