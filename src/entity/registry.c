/*
** registry.c -- the managers a world owns, by namespace and name (ecs.h,
** "Managers").
**
** Entity layer (layers: alloc.h). The registry sits below the managers
** because they register themselves here, and beside entity.c because an
** index's generation wrap must reach every manager (ecsi_purge_index).
** It calls managers only through their class hooks, so it depends on
** none of them.
*/
#include <string.h>

#include "ecs_private.h"

static ecsi_manager *find(const ecs_world *w, ecs_namespace ns,
                          const char *name) {
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].ns == ns && strcmp(w->manager[i].name, name) == 0)
      return &w->manager[i];
  return NULL;
}

/*
** Reserve first (array slot and name copy), then link: on any failure the
** world is unchanged and self is freed, as the header promises.
*/
ecs_err ecs_manager_register_in(ecs_world *w, ecs_namespace ns,
                                const char *name,
                                const ecs_manager_class *cls, void *self) {
  size_t len = strlen(name) + 1;
  void *p = w->manager;
  char *copy;
  ecs_err err = ECS_ERR_BAD_CLASS;
  if (cls->gc != NULL && cls->purge == NULL) goto fail; /* see ecs.h */
  err = ECS_ERR_INVALID; /* no rule: a value outside the enum */
  if (ns != ECS_NS_MANAGER && ns != ECS_NS_COMPONENT) goto fail;
  err = ECS_ERR_EXISTS;
  if (find(w, ns, name) != NULL) goto fail;
  err = ecsi_grow(w, &p, &w->manager_cap, w->manager_count + 1,
                  sizeof *w->manager, 8);
  if (err != ECS_ERR_OK) goto fail;
  w->manager = (ecsi_manager *)p;
  copy = (char *)ecsi_realloc(w, NULL, 0, len);
  err = ECS_ERR_NOMEM;
  if (copy == NULL) goto fail;
  memcpy(copy, name, len);
  w->manager[w->manager_count].name = copy;
  w->manager[w->manager_count].name_size = len;
  w->manager[w->manager_count].ns = ns;
  w->manager[w->manager_count].cls = cls;
  w->manager[w->manager_count].self = self;
  w->manager[w->manager_count].reported = 0;
  w->manager_count++;
  return ECS_ERR_OK;
fail:
  cls->free(w, self);
  return err;
}

void *ecs_manager_find_in(const ecs_world *w, ecs_namespace ns,
                          const char *name, const ecs_manager_class **cls) {
  ecsi_manager *m = find(w, ns, name);
  if (m == NULL) return NULL;
  if (cls != NULL) *cls = m->cls;
  return m->self;
}

ecs_err ecs_manager_register(ecs_world *w, const char *name,
                             const ecs_manager_class *cls, void *self) {
  return ecs_manager_register_in(w, ECS_NS_MANAGER, name, cls, self);
}

void *ecs_manager_find(const ecs_world *w, const char *name,
                       const ecs_manager_class **cls) {
  return ecs_manager_find_in(w, ECS_NS_MANAGER, name, cls);
}

size_t ecs_manager_count(const ecs_world *w) { return w->manager_count; }

void *ecs_manager_at(const ecs_world *w, size_t i, const char **name,
                     const ecs_manager_class **cls) {
  if (i >= w->manager_count) return NULL;
  if (name != NULL) *name = w->manager[i].name;
  if (cls != NULL) *cls = w->manager[i].cls;
  return w->manager[i].self;
}

/*
** Index `index` has just wrapped its generation (see ecs_destroy): every
** manager drops it from reach. Purges neither allocate nor fail, so
** destroy stays all-or-nothing. Managers without gc keep no records.
*/
void ecsi_purge_index(ecs_world *w, uint32_t index) {
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].cls->purge != NULL)
      w->manager[i].cls->purge(w, w->manager[i].self, index);
}

/* ------------------------------------------------------------------------
** Listeners. Kept in one array in the order they were added; a
** notification walks it for the reporting manager. That is O(listeners)
** per event, paid only while some listener exists (ecs_manager_notify
** checks the count inline): observers are few next to records. A
** listener may add or remove listeners: additions are appended (they see
** the next event, not this one), removals during a notification only
** clear fn, and the outermost notification compacts.
** --------------------------------------------------------------------- */
static bool registered(const ecs_world *w, const void *self) {
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].self == self) return true;
  return false;
}

ecs_err ecs_manager_listen(ecs_world *w, const void *manager, unsigned events,
                           ecs_listener_fn fn, void *ud) {
  const unsigned known = ECS_EVENT_ADD | ECS_EVENT_REMOVE | ECS_EVENT_SET;
  void *p = w->listener;
  ecs_err err;
  if (fn == NULL || (events & known) == 0 || (events & ~known) != 0 ||
      !registered(w, manager))
    return ECS_ERR_INVALID;
  err = ecsi_grow(w, &p, &w->listener_cap, w->listener_count + 1,
                  sizeof *w->listener, 4);
  if (err != ECS_ERR_OK) return err;
  w->listener = (ecsi_listener *)p;
  w->listener[w->listener_count].manager = manager;
  w->listener[w->listener_count].events = events;
  w->listener[w->listener_count].fn = fn;
  w->listener[w->listener_count].ud = ud;
  w->listener_count++;
  w->head.listeners++;
  if (events & ECS_EVENT_REMOVE) w->remove_listeners++;
  return ECS_ERR_OK;
}

static void compact_listeners(ecs_world *w) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < w->listener_count; i++)
    if (w->listener[i].fn != NULL) w->listener[n++] = w->listener[i];
  w->listener_count = n;
  w->listener_dead = false;
}

bool ecs_manager_unlisten(ecs_world *w, const void *manager,
                          ecs_listener_fn fn, void *ud) {
  for (uint32_t i = 0; i < w->listener_count; i++) {
    ecsi_listener *l = &w->listener[i];
    if (l->fn == fn && fn != NULL && l->manager == manager && l->ud == ud) {
      l->fn = NULL;
      w->head.listeners--;
      if (l->events & ECS_EVENT_REMOVE) w->remove_listeners--;
      w->listener_dead = true;
      if (w->notifying == 0) compact_listeners(w);
      return true;
    }
  }
  return false;
}

/* How deep notifications may nest (ecs.h, ecs_manager_listen). */
#define MAX_NESTING 64u

/* The position of e in w->dying (its destroy is reporting), or -1. */
static int dying_at(const ecs_world *w, ecs_entity e) {
  for (uint32_t k = 0; k < w->dying_count; k++)
    if (w->dying[k] == e) return (int)k;
  return -1;
}

/* Deliver event to the listeners of self among the first n that take it;
** @return the first error (which stops the others). */
static ecs_err deliver(ecs_world *w, void *self, ecs_entity e, ecs_event event,
                       uint32_t n) {
  ecs_err err = ECS_ERR_OK;
  for (uint32_t i = 0; i < n && err == ECS_ERR_OK; i++) {
    const ecsi_listener l = w->listener[i]; /* the array may move */
    if (l.fn != NULL && l.manager == self && (l.events & (unsigned)event))
      err = l.fn(w, self, e, event, l.ud);
  }
  return err;
}

/* Is one of the first n listeners a SET listener of self? */
static bool set_listened(const ecs_world *w, const void *self, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (w->listener[i].fn != NULL && w->listener[i].manager == self &&
        (w->listener[i].events & ECS_EVENT_SET))
      return true;
  return false;
}

/* Has self, a registered manager, a record of the live entity e (its has
** hook; a class without one: yes)? */
static bool still_has(ecs_world *w, void *self, ecs_entity e) {
  if (!ecs_alive(w, e)) return false;
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].self == self)
      return w->manager[i].cls->has == NULL || w->manager[i].cls->has(w, self, e);
  return false;
}

/*
** An ADD is a write too: a new record's values were written. So ADD is
** followed by SET (ecs.h: "SET after add, set or set_field wrote"), every
** ADD listener first, then every SET listener, so that a SET listener
** never sees a record its ADD listeners have not. Not when an ADD
** listener failed, nor when one removed the record or destroyed e (no
** value of e is there to report). Every manager's ADD gets it here, in
** one place: components, the transform, names, plugins.
*/
ecs_err ecs_manager_notify_listeners(ecs_world *w, void *self, ecs_entity e,
                                     ecs_event event) {
  uint32_t n = w->listener_count; /* those added during this one wait */
  ecs_err err;
  if (event == ECS_EVENT_ADD && w->dying_count != 0) {
    int k = dying_at(w, e); /* a component given to a dying entity */
    if (k >= 0) w->dying_adds[k]++;
  }
  if (w->notifying >= MAX_NESTING) return ECS_ERR_NESTING;
  w->notifying++;
  err = deliver(w, self, e, event, n);
  if (event == ECS_EVENT_ADD && err == ECS_ERR_OK && set_listened(w, self, n) &&
      still_has(w, self, e))
    err = deliver(w, self, e, ECS_EVENT_SET, n);
  if (--w->notifying == 0 && w->listener_dead) compact_listeners(w);
  return err;
}

/*
** REMOVE reports, each event once. One instance's REMOVE may be asked for
** twice: a remove of e from inside the listeners of e's own remove, a
** destroy of e from inside them, a remove of e from inside e's destroy.
** Two records answer "is it being reported already?": the stack of
** reports in progress (w->reporting: manager, entity, and whether the
** instance went meanwhile), and, for a destroy, which managers it has
** reported (bit k of each manager's `reported` for dying[k]), since the
** instances of a dying entity stay until it dies, after its reports.
** A call that finds its instance reported removes it without a report
** and marks the report taken; the outer call then knows that what it
** reported is gone, and that an instance there now is a new one, added
** (and its ADD reported) after: it reports that one too. So listeners
** that remove, re-add, remove again or destroy in any order see one
** REMOVE per instance that had an ADD (or existed before), never two,
** never none. A listener that re-adds on every REMOVE would go on for
** ever: after MAX_NESTING rounds the call fails with ECS_ERR_NESTING, as
** recursion does.
*/
static ecsi_manager *entry_of(ecs_world *w, const void *self) {
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].self == self) return &w->manager[i];
  return NULL;
}

/* The report in progress of the REMOVE of e's instance in self (not
** taken yet), or NULL. */
static ecsi_report *report_of(ecs_world *w, const void *self, ecs_entity e) {
  for (ecsi_report *r = w->reporting; r != NULL; r = r->outer)
    if (r->manager == self && r->e == e && !r->taken) return r;
  return NULL;
}

/* Is the REMOVE of e's instance in self reported already, by a report in
** progress or by e's destroy? With take, mark it taken: the caller
** removes the instance now. */
static bool reported(ecs_world *w, const void *self, ecs_entity e, bool take) {
  ecsi_report *r = report_of(w, self, e);
  if (r != NULL) {
    if (take) r->taken = true;
    return true;
  }
  if (w->dying_count != 0) {
    int k = dying_at(w, e);
    ecsi_manager *m;
    if (k >= 0 && k < 64 && (m = entry_of(w, self)) != NULL &&
        (m->reported >> k & 1u) != 0) {
      if (take) m->reported &= ~((uint64_t)1 << k);
      return true;
    }
  }
  return false;
}

/* Has the manager self an instance of e (its has hook)? */
static bool holds(ecs_world *w, const void *self, ecs_entity e) {
  const ecsi_manager *m = entry_of(w, self);
  return m != NULL && m->cls->has != NULL && ecs_alive(w, e) &&
         m->cls->has(w, self, e);
}

/* Report it, and again for an instance added back after a removal from
** inside (see above). *present: an instance whose REMOVE was reported is
** there on return (none was removed from inside, or the last one added
** back was reported). */
static ecs_err report_remove(ecs_world *w, void *self, ecs_entity e,
                             bool *present) {
  uint32_t rounds = 0;
  *present = false;
  for (;;) {
    ecsi_report r;
    ecs_err err;
    r.manager = self;
    r.e = e;
    r.taken = false;
    r.outer = w->reporting;
    w->reporting = &r;
    err = ecs_manager_notify_listeners(w, self, e, ECS_EVENT_REMOVE);
    w->reporting = r.outer;
    if (err != ECS_ERR_OK) return err;
    if (!r.taken) {
      *present = true;
      return err;
    }
    if (!holds(w, self, e)) return err;
    if (++rounds >= MAX_NESTING) return ECS_ERR_NESTING;
  }
}

ecs_err ecsi_notify_remove(ecs_world *w, void *self, ecs_entity e) {
  bool present;
  if (reported(w, self, e, true)) return ECS_ERR_OK;
  return report_remove(w, self, e, &present);
}

/*
** destroy's REMOVE: managers in registration order, each that has a
** REMOVE listener and has e (its has hook) at the moment its turn comes,
** and whose instance of e is not being reported already (an outer remove
** of it). A listener may change anything (register managers, add or
** remove listeners, components of e), so the arrays are read by index
** each time; e itself stays alive meanwhile (a nested destroy of it does
** nothing: ecs_destroy_report). A component given to e after its
** manager's turn (an ADD of e counted in dying_adds) is reported in
** another pass, which skips the managers reported already. O(managers x
** listeners) per pass, paid only while the world has a REMOVE listener.
*/
static bool has_remove_listener(const ecs_world *w, const void *self) {
  for (uint32_t i = 0; i < w->listener_count; i++)
    if (w->listener[i].fn != NULL && w->listener[i].manager == self &&
        (w->listener[i].events & ECS_EVENT_REMOVE))
      return true;
  return false;
}

ecs_err ecsi_notify_destroy(ecs_world *w, ecs_entity e) {
  uint32_t k = w->dying_count - 1, passes = 0, adds;
  const uint64_t bit = k < 64 ? (uint64_t)1 << k : 0;
  bool marked = false, present;
  ecs_err err = ECS_ERR_OK;
  w->dying_adds[k] = 0;
  do {
    adds = w->dying_adds[k];
    for (uint32_t i = 0; i < w->manager_count && err == ECS_ERR_OK; i++) {
      void *self = w->manager[i].self;
      const ecs_manager_class *cls = w->manager[i].cls;
      if (!ecs_alive(w, e)) break;
      if (cls->has == NULL || (w->manager[i].reported & bit) != 0 ||
          !has_remove_listener(w, self) || report_of(w, self, e) != NULL ||
          !cls->has(w, self, e))
        continue;
      err = report_remove(w, self, e, &present); /* not reported yet */
      /* the instance there now was reported: it goes with e */
      if (present && i < w->manager_count && w->manager[i].self == self) {
        w->manager[i].reported |= bit;
        marked = true;
      }
    }
    if (err == ECS_ERR_OK && w->dying_adds[k] != adds &&
        ++passes >= MAX_NESTING)
      err = ECS_ERR_NESTING;
  } while (err == ECS_ERR_OK && w->dying_adds[k] != adds && ecs_alive(w, e));
  if (marked)
    for (uint32_t i = 0; i < w->manager_count; i++) w->manager[i].reported &= ~bit;
  return err;
}

void ecs_manager_stats_at(const ecs_world *w, size_t i,
                          ecs_manager_stats *out) {
  out->records = out->live = out->bytes = 0;
  if (i < w->manager_count && w->manager[i].cls->stats != NULL)
    w->manager[i].cls->stats(w, w->manager[i].self, out);
}

/*
** Only the last manager can go (its index is the registry's length, so no
** other manager's index, which journals and systems may hold, moves), and
** only while nothing listens to it or is reporting about it: listeners
** hold its address.
*/
bool ecsi_manager_unregister_last(ecs_world *w, void *self) {
  ecsi_manager *m;
  if (w->manager_count == 0) return false;
  m = &w->manager[w->manager_count - 1];
  if (m->self != self || m->reported != 0) return false;
  for (uint32_t i = 0; i < w->listener_count; i++)
    if (w->listener[i].manager == self) return false; /* removed ones too */
  for (const ecsi_report *r = w->reporting; r != NULL; r = r->outer)
    if (r->manager == self) return false;
  w->manager_count--;
  m->cls->free(w, m->self);
  ecsi_free(w, m->name, m->name_size);
  return true;
}

/* Managers are freed in reverse order of registration, listeners with
** them. */
void ecsi_managers_free(ecs_world *w) {
  while (w->manager_count > 0) {
    ecsi_manager *m = &w->manager[--w->manager_count];
    m->cls->free(w, m->self);
    ecsi_free(w, m->name, m->name_size);
  }
  ecsi_free(w, w->manager, (size_t)w->manager_cap * sizeof *w->manager);
  w->manager = NULL;
  w->manager_cap = 0;
  ecsi_free(w, w->listener, (size_t)w->listener_cap * sizeof *w->listener);
  w->listener = NULL;
  w->listener_count = w->listener_cap = 0;
  w->head.listeners = 0;
  w->remove_listeners = 0;
}

/* Every manager's lazy gc, in registration order, each with the budget. */
size_t ecs_world_gc(ecs_world *w, size_t budget) {
  size_t total = 0;
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].cls->gc != NULL)
      total += w->manager[i].cls->gc(w, w->manager[i].self, budget);
  return total;
}
