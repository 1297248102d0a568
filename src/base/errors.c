/*
** errors.c -- the text of each error code (ecs.h ECS_ERRORS).
**
** Base layer (layers: alloc.h): every layer names its errors in messages
** (a redefinition's, a system's), so the texts sit below them all.
*/
#include "ecs.h"

static const char *const error_text[] = {
#define ECS__TEXT(name, msg) msg,
  ECS_ERRORS(ECS__TEXT)
#undef ECS__TEXT
};

const char *ecs_strerror(ecs_err err) {
  if ((unsigned)err >= (unsigned)ECS_ERR__COUNT) return "unknown error";
  return error_text[err];
}
