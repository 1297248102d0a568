/*
** bench_snapshot.c -- the core's ecs_world_save and ecs_world_load
** (snapshot.h) of N entities (default 1M) with Position{f32,f32},
** Velocity{f32,f32} and Health{i32}, next to what they cannot do
** without, measured in the same run: a memcpy of the snapshot's bytes
** and the XXH64 of them (its checksum). The save is timed twice: through
** the writer, and with ecs_snapshot_opts.room (as world:snapshot saves);
** the load twice: in place (the same owners: the columns are copied at
** the swap) and into a new world made and freed around it (ecs.restore:
** the columns hashed as they are copied, the maps built).
** Buffers are allocated and touched once up front, so page faults are not
** measured; best of RUNS.
** Usage: build/bench_snapshot_c [N]   (a Release build: build-rel/)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "component.h"
#include "ecs.h"
#include "snapshot.h"

#define RUNS 15

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf;

/* ecs_snapshot_opts.room: the next size bytes of the buffer */
static unsigned char *buf_room(void *ud, size_t size) {
  buf *b = (buf *)ud;
  if (size > b->cap - b->n) return NULL;
  b->n += size;
  return b->p + b->n - size;
}

static ecs_err buf_write(void *ud, const void *data, size_t size) {
  unsigned char *p = buf_room(ud, size);
  if (p == NULL) return ECS_ERR_NOMEM;
  memcpy(p, data, size);
  return ECS_ERR_OK;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000u;
  static const ecs_field_def pf[] = {{"x", ECS_F32}, {"y", ECS_F32}};
  static const ecs_field_def vf[] = {{"dx", ECS_F32}, {"dy", ECS_F32}};
  static const ecs_field_def hf[] = {{"hp", ECS_I32}};
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_component *P, *V, *H;
  ecs_entity *es = (ecs_entity *)malloc((size_t)n * sizeof *es);
  buf b;
  unsigned char *copy;
  double save = 1e9, load = 1e9, cpy = 1e9, hash = 1e9, room = 1e9, fresh = 1e9;
  volatile uint64_t sink = 0;
#ifdef __GLIBC__
  /* glibc gives a freed block above its mmap threshold back to the
  ** kernel, and trims the heap's top past another: every new world would
  ** fault its ~45 MB in afresh (80 ms here, against 3). The thresholds
  ** rise by themselves in a long-running program as blocks are freed
  ** (bench_snapshot.lua raises them by a warm-up): set here, so that the
  ** load is measured, not this allocator's first touches. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  if (w == NULL || es == NULL ||
      ecs_component_new(w, "Position", pf, 2, &P) != ECS_ERR_OK ||
      ecs_component_new(w, "Velocity", vf, 2, &V) != ECS_ERR_OK ||
      ecs_component_new(w, "Health", hf, 1, &H) != ECS_ERR_OK ||
      ecs_create_n(w, es, n) != ECS_ERR_OK)
    return 1;
  for (uint32_t i = 0; i < n; i++) {
    ecs_instance k;
    if (ecs_component_add(w, P, es[i], &k, NULL) != ECS_ERR_OK) return 1;
    ((float *)ecs_component_column(P, 0))[k] = (float)i;
    if (ecs_component_add(w, V, es[i], &k, NULL) != ECS_ERR_OK) return 1;
    if (ecs_component_add(w, H, es[i], &k, NULL) != ECS_ERR_OK) return 1;
  }
  b.cap = (size_t)n * 24u + 65536u;
  b.p = (unsigned char *)malloc(b.cap);
  copy = (unsigned char *)malloc(b.cap);
  if (b.p == NULL || copy == NULL) return 1;
  memset(b.p, 0, b.cap);
  memset(copy, 0, b.cap);
  for (int r = 0; r < RUNS; r++) {
    ecs_writer out;
    ecs_reader in;
    double t;
    out.write = buf_write;
    out.ud = &b;
    b.n = 0;
    t = ecs_clock();
    if (ecs_world_save(w, &out) != ECS_ERR_OK) return 1;
    t = ecs_clock() - t;
    if (t < save) save = t;
    {
      ecs_snapshot_opts opts;
      memset(&opts, 0, sizeof opts);
      opts.room = buf_room;
      b.n = 0;
      t = ecs_clock();
      if (ecs_world_save_opts(w, &out, &opts) != ECS_ERR_OK) return 1;
      t = ecs_clock() - t;
      if (t < room) room = t;
    }
    t = ecs_clock();
    memcpy(copy, b.p, b.n);
    t = ecs_clock() - t;
    if (t < cpy) cpy = t;
    t = ecs_clock();
    sink += ecs_snapshot_hash(b.p, b.n);
    t = ecs_clock() - t;
    if (t < hash) hash = t;
    in.data = b.p;
    in.size = b.n;
    in.pos = 0;
    t = ecs_clock();
    if (ecs_world_load(w, &in) != ECS_ERR_OK) return 1;
    t = ecs_clock() - t;
    if (t < load) load = t;
    { /* into a new world, as ecs.restore: made, its managers registered,
      ** loaded (every column copied and hashed in one pass, every map
      ** built), freed */
      ecs_world *w2;
      ecs_component *P2, *V2, *H2;
      in.pos = 0;
      t = ecs_clock();
      if ((w2 = ecs_world_new(NULL, NULL)) == NULL ||
          ecs_component_new(w2, "Position", pf, 2, &P2) != ECS_ERR_OK ||
          ecs_component_new(w2, "Velocity", vf, 2, &V2) != ECS_ERR_OK ||
          ecs_component_new(w2, "Health", hf, 1, &H2) != ECS_ERR_OK ||
          ecs_world_load(w2, &in) != ECS_ERR_OK)
        return 1;
      ecs_world_free(w2);
      t = ecs_clock() - t;
      if (t < fresh) fresh = t;
    }
  }
  printf("%u entities, snapshot %.1f MB\n", n, (double)b.n / 1e6);
  printf("  memcpy of the snapshot  %7.2f ms\n", cpy * 1e3);
  printf("  XXH64 of the snapshot   %7.2f ms\n", hash * 1e3);
  printf("  ecs_world_save          %7.2f ms  %.1fx the memcpy\n", save * 1e3, save / cpy);
  printf("  ecs_world_save_opts, room %5.2f ms  %.1fx the memcpy (copied and hashed in one pass)\n",
         room * 1e3, room / cpy);
  printf("  ecs_world_load          %7.2f ms  %.1fx the memcpy\n", load * 1e3, load / cpy);
  printf("  ... into a new world    %7.2f ms  %.1fx the memcpy (made, loaded, freed)\n",
         fresh * 1e3, fresh / cpy);
  ecs_world_free(w);
  free(es);
  free(b.p);
  free(copy);
  return 0;
}
