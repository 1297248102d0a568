/*
** value.h -- typed field values, with one set of rules (the value layer).
**
** Every read, write and conversion of a field value by its ecs_type goes
** through here: the binding (add/set/get/field, q:columns), the
** expression machine (q:apply, expression systems) and plugins. Nothing
** else switches over ecs_type: code that must treat each type apart in
** one pass (q:columns pushing a column) expands ECS_VALUE_TYPES, the one
** list of types with their C types.
**
** Out-of-range numbers, one rule per path (docs/components.md):
** - checked (the Lua API: add, set, set_field, q:columns write-back):
**   integer fields take integral values within the type's range, else the
**   call fails (ecs_value_fits); f32 stores the nearest float, magnitudes
**   beyond FLT_MAX becoming +-inf.
** - saturating (expressions and their stores, ecs_value_store_f64):
**   truncate toward zero, then clamp to the type's range; NaN stores 0;
**   bool stores v != 0; f32 as above.
**
** Layer: value, at the bottom beside alloc (layers: alloc.h); it knows no
** world. Includes ecs.h only.
*/
#ifndef ECS_VALUE_H
#define ECS_VALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "ecs.h"

/* One value in its widest form: .f for float kinds, .i for the others
** (bool 0/1, an entity handle, a lua ref). */
typedef union ecs_scalar {
  double f;
  int64_t i;
} ecs_scalar;

typedef enum ecs_kind {
  ECS_KIND_FLOAT,  /* f32 f64 */
  ECS_KIND_INT,    /* i8 ... u32 */
  ECS_KIND_BOOL,   /* bool */
  ECS_KIND_ENTITY, /* entity */
  ECS_KIND_REF     /* lua: a reference the binding owns */
} ecs_kind;

/*
** Every field type with the C type of its column and the member of
** ecs_scalar that carries its values: X(NAME, C type, member), member f
** for the float kinds and i for the others (bool 0/1, an entity handle, a
** lua ref). Written once: the conversions below and the code that must
** treat each type apart in one pass (q:columns pushing a column) expand
** it, so a new type in ECS_TYPES needs its line here, and nowhere else.
*/
#define ECS_VALUE_TYPES(X)                                                   \
  X(F32, float, f)                                                           \
  X(F64, double, f)                                                          \
  X(I8, int8_t, i)                                                           \
  X(I16, int16_t, i)                                                         \
  X(I32, int32_t, i)                                                         \
  X(I64, int64_t, i)                                                         \
  X(U8, uint8_t, i)                                                          \
  X(U16, uint16_t, i)                                                        \
  X(U32, uint32_t, i)                                                        \
  X(BOOL, uint8_t, i)                                                        \
  X(ENTITY, ecs_entity, i)                                                   \
  X(LUA, uint32_t, i)

/* The C type of each member of ecs_scalar, for explicit widening (clang's
** -Wdouble-promotion refuses the implicit float -> double):
** ECS_VALUE_MEMBER_##member. */
#define ECS_VALUE_MEMBER_f double
#define ECS_VALUE_MEMBER_i int64_t

/*
** The per-value conversions are static inline here, so that the paths
** that convert one value per call (the binding's get, set, field,
** set_field) or per row make no call for it: ecs_type_kind_inline,
** ecs_value_load_inline and ecs_value_store_inline are the bodies of
** ecs_type_kind, ecs_value_load and ecs_value_store, which stay functions
** for the plugin table (ecs_plugin.h) and behave the same.
*/
static inline ecs_kind ecs_type_kind_inline(ecs_type t) {
  switch (t) {
  case ECS_F32: case ECS_F64: return ECS_KIND_FLOAT;
  case ECS_BOOL: return ECS_KIND_BOOL;
  case ECS_ENTITY: return ECS_KIND_ENTITY;
  case ECS_LUA: return ECS_KIND_REF;
  default: return ECS_KIND_INT;
  }
}

/* One value at row of a column of type t; zero for a type out of range. */
static inline ecs_scalar ecs_value_load_inline(const void *col, ecs_type t,
                                               uint32_t row) {
  ecs_scalar v;
  v.i = 0;
#define ECS__GET(NAME, T, M)                                                 \
  case ECS_##NAME: v.M = (ECS_VALUE_MEMBER_##M)((const T *)col)[row]; break;
  switch (t) {
  ECS_VALUE_TYPES(ECS__GET)
  default: break;
  }
#undef ECS__GET
  return v;
}

/* Write v at row of a column of type t, as is (the caller applied its rule). */
static inline void ecs_value_store_inline(void *col, ecs_type t, uint32_t row,
                                          ecs_scalar v) {
#define ECS__PUT(NAME, T, M)                                                 \
  case ECS_##NAME: ((T *)col)[row] = (T)v.M; break;
  switch (t) {
  ECS_VALUE_TYPES(ECS__PUT)
  default: break;
  }
#undef ECS__PUT
}

/* @return what kind of value a field of type t holds. */
ecs_kind ecs_type_kind(ecs_type t);

/* The inclusive range of integer type t (0, 0 for the other kinds). */
int64_t ecs_type_min(ecs_type t);
int64_t ecs_type_max(ecs_type t);

/* Checked rule: may integer v be stored in a field of integer type t? */
bool ecs_value_fits(ecs_type t, int64_t v);

/* Saturating rule for one number and an integer or bool type t. */
int64_t ecs_value_saturate(ecs_type t, double v);

/* Read / write one value at row of a column of type t (written as is:
** the caller applied its rule): ecs_value_load_inline and
** ecs_value_store_inline as functions. */
ecs_scalar ecs_value_load(const void *col, ecs_type t, uint32_t row);
void ecs_value_store(void *col, ecs_type t, uint32_t row, ecs_scalar v);

/* The same for n rows: rows[j], or consecutive from rows[0] when
** contiguous. */
void ecs_value_load_rows(ecs_scalar *dst, const void *col, ecs_type t,
                         const uint32_t *rows, uint32_t n, bool contiguous);
void ecs_value_store_rows(void *col, ecs_type t, const uint32_t *rows,
                          const ecs_scalar *src, uint32_t n, bool contiguous);

/*
** Numeric columns as doubles, for the expression machine: load any
** numeric or bool type; store with the saturating rule. Whole blocks of
** ECSI_BLOCK contiguous rows take a loop the compiler vectorises.
*/
void ecs_value_load_f64(double *dst, const void *col, ecs_type t,
                        const uint32_t *rows, uint32_t n, bool contiguous);
void ecs_value_store_f64(void *col, ecs_type t, const uint32_t *rows,
                         const double *src, uint32_t n, bool contiguous);

#endif
