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

ecs_err ecs_write_u32(ecs_writer *out, uint32_t v) {
  return ecs_write(out, &v, sizeof v);
}

ecs_err ecs_read_u32(ecs_reader *in, uint32_t *v) {
  return ecs_read(in, v, sizeof *v);
}
