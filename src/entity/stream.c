/*
** stream.c -- the byte streams managers save to and load from (ecs.h,
** ecs_writer and ecs_reader).
**
** Entity layer, beside the registry (layers: alloc.h): the manager class
** names these types and nothing here calls into a manager. A reader
** never trusts a count it reads: it fails with ECS_ERR_CORRUPT before
** copying past the end, so a manager's load can check a count against
** what remains (in->size - in->pos) before it allocates for it.
*/
#include <string.h>

#include "checksum.h"
#include "ecs_private.h"

ecs_err ecs_write(ecs_writer *out, const void *data, size_t size) {
  if (size == 0) return ECS_ERR_OK;
  return out->write(out->ud, data, size);
}

ecs_err ecs_read(ecs_reader *in, void *data, size_t size) {
  if (in->pos > in->size || size > in->size - in->pos) return ECS_ERR_CORRUPT;
  if (size > 0) memcpy(data, in->data + in->pos, size);
  in->pos += size;
  return ECS_ERR_OK;
}

ecs_err ecsi_read_hashed(ecs_world *w, ecs_reader *in, void *data,
                         size_t size) {
  if (w->load_hash == NULL) return ecs_read(in, data, size);
  if (in->pos > in->size || size > in->size - in->pos) return ECS_ERR_CORRUPT;
  ecsi_xxh64_cursor_copy(w->load_hash, (unsigned char *)data,
                         in->data + in->pos, size);
  in->pos += size;
  return ECS_ERR_OK;
}

/*
** Little-endian byte by byte, whatever the machine (compilers turn this
** into one store or load on little-endian machines), so that the counts
** of a snapshot read the same everywhere (snapshot.h).
*/
ecs_err ecs_write_u32(ecs_writer *out, uint32_t v) {
  unsigned char b[4];
  b[0] = (unsigned char)v;
  b[1] = (unsigned char)(v >> 8);
  b[2] = (unsigned char)(v >> 16);
  b[3] = (unsigned char)(v >> 24);
  return ecs_write(out, b, sizeof b);
}

ecs_err ecs_read_u32(ecs_reader *in, uint32_t *v) {
  unsigned char b[4];
  ecs_err err = ecs_read(in, b, sizeof b);
  if (err != ECS_ERR_OK) return err;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
       (uint32_t)b[3] << 24;
  return ECS_ERR_OK;
}
