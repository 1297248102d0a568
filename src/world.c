/*
** world.c -- world lifetime, allocation, error texts and the clock.
*/
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ecs_private.h"

static const char *const error_text[] = {
#define ECS__TEXT(name, msg) msg,
  ECS_ERRORS(ECS__TEXT)
#undef ECS__TEXT
};

const char *ecs_strerror(ecs_err err) {
  if ((unsigned)err >= (unsigned)ECS_ERR__COUNT) return "unknown error";
  return error_text[err];
}

/* The default allocator: lua_Alloc's contract over realloc/free. */
static void *default_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

/* osize means nothing when p is NULL (lua_Alloc passes a type tag there). */
void *ecsi_realloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  void *np = w->alloc(w->alloc_ud, p, osize, nsize);
  size_t old = p != NULL ? osize : 0;
  if (np != NULL || nsize == 0) {
    w->bytes = w->bytes - old + nsize;
    if (nsize > old) w->allocated += nsize - old;
  }
  return np;
}

/* Counted first: p may be the world itself (ecs_world_free). */
void ecsi_free(ecs_world *w, void *p, size_t size) {
  if (p != NULL) {
    w->bytes -= size;
    w->alloc(w->alloc_ud, p, size, 0);
  }
}

/* What ecs_world_allocator hands out: the world's allocator, counted. */
static void *counted_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  return ecsi_realloc((ecs_world *)ud, p, osize, nsize);
}

/*
** Doubling growth. Sizes are checked against overflow of both uint32_t
** capacity and size_t bytes before anything is allocated.
*/
ecs_err ecsi_grow(ecs_world *w, void **p, uint32_t *cap, uint32_t need,
                  size_t elem, uint32_t min_cap) {
  uint32_t ncap = *cap ? *cap : min_cap;
  void *np;
  if (need <= *cap) return ECS_ERR_OK;
  while (ncap < need) {
    if (ncap > UINT32_MAX / 2) {
      ncap = need;
      break;
    }
    ncap *= 2;
  }
  if ((size_t)ncap > SIZE_MAX / elem) return ECS_ERR_NOMEM;
  np = ecsi_realloc(w, *p, (size_t)*cap * elem, (size_t)ncap * elem);
  if (np == NULL) return ECS_ERR_NOMEM;
  *p = np;
  *cap = ncap;
  return ECS_ERR_OK;
}

ecs_world *ecs_world_new(ecs_alloc_fn alloc, void *ud) {
  ecs_world *w;
  if (alloc == NULL) alloc = default_alloc;
  w = (ecs_world *)alloc(ud, NULL, 0, sizeof *w);
  if (w == NULL) return NULL;
  memset(w, 0, sizeof *w);
  w->alloc = alloc;
  w->alloc_ud = ud;
  w->bytes = sizeof *w;
  w->allocated = sizeof *w;
  return w;
}

/* Managers are freed in reverse order of registration. */
void ecs_world_free(ecs_world *w) {
  if (w == NULL) return;
  ecsi_systems_free(w); /* systems point to queries: first */
  ecsi_queries_free(w); /* queries point into managers: next */
  while (w->manager_count > 0) {
    ecsi_manager *m = &w->manager[--w->manager_count];
    m->cls->free(w, m->self);
    ecsi_free(w, m->name, m->name_size);
  }
  ecsi_free(w, w->manager, (size_t)w->manager_cap * sizeof *w->manager);
  ecsi_refs_free(w);
  ecsi_entities_free(w);
  ecsi_free(w, w, sizeof *w);
}

/* The world is never const where it was made, so the counter may move. */
ecs_alloc_fn ecs_world_allocator(const ecs_world *w, void **ud) {
  if (ud != NULL) *ud = (void *)(uintptr_t)w;
  return counted_alloc;
}

size_t ecs_world_memory(const ecs_world *w, uint64_t *allocated) {
  if (allocated != NULL) *allocated = w->allocated;
  return w->bytes;
}

/* ------------------------------------------------------------------------
** Field types
** --------------------------------------------------------------------- */
static const size_t type_size[] = {
#define ECS__SIZE(name, text, ctype) sizeof(ctype),
  ECS_TYPES(ECS__SIZE)
#undef ECS__SIZE
};
static const char *const type_name[] = {
#define ECS__NAME(name, text, ctype) text,
  ECS_TYPES(ECS__NAME)
#undef ECS__NAME
};

size_t ecs_type_size(ecs_type t) {
  return (unsigned)t < (unsigned)ECS_TYPE__COUNT ? type_size[t] : 0;
}

const char *ecs_type_name(ecs_type t) {
  return (unsigned)t < (unsigned)ECS_TYPE__COUNT ? type_name[t] : NULL;
}

int ecs_type_parse(const char *s, size_t len) {
  for (int t = 0; t < (int)ECS_TYPE__COUNT; t++)
    if (strlen(type_name[t]) == len && memcmp(type_name[t], s, len) == 0)
      return t;
  return -1;
}

/* ------------------------------------------------------------------------
** Manager registry
** --------------------------------------------------------------------- */
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
  ecs_err err = ECS_ERR_INVALID;
  if (cls->gc != NULL && cls->purge == NULL) goto fail; /* see ecs.h */
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

size_t ecs_world_gc(ecs_world *w, size_t budget) {
  size_t total = 0;
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].cls->gc != NULL)
      total += w->manager[i].cls->gc(w, w->manager[i].self, budget);
  return total;
}

const char *ecs_world_check(const ecs_world *w) {
  const char *bad = ecsi_entities_check(w);
  if (bad == NULL) bad = ecsi_queries_check(w);
  if (bad == NULL) bad = ecsi_systems_check(w);
  for (uint32_t i = 0; bad == NULL && i < w->manager_count; i++)
    if (w->manager[i].cls->check != NULL)
      bad = w->manager[i].cls->check(w, w->manager[i].self);
  return bad;
}

/* ------------------------------------------------------------------------
** Clock: CLOCK_MONOTONIC where POSIX has it, else C11's timespec_get
** (wall time), else processor time.
** --------------------------------------------------------------------- */
double ecs_clock(void) {
#if defined(CLOCK_MONOTONIC)
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
#if defined(TIME_UTC)
  {
    struct timespec tu;
    if (timespec_get(&tu, TIME_UTC) == TIME_UTC)
      return (double)tu.tv_sec + (double)tu.tv_nsec * 1e-9;
  }
#endif
  return (double)clock() / (double)CLOCKS_PER_SEC;
}
