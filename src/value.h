/*
** value.h -- typed field values, with one set of rules (the value layer).
**
** Every read, write and conversion of a field value by its ecs_type goes
** through here: the binding (add/set/get/field, q:columns), the
** expression machine (q:apply, expression systems) and plugins. Nothing
** else switches over ecs_type.
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
** the caller applied its rule). */
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
