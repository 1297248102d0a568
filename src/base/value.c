/*
** value.c -- the value layer: typed field values and their rules
** (value.h, which holds the per-value conversions inline). With value.h
** the only code that switches over ecs_type, and the home of the
** field-type table (ecs_type_size, ecs_type_name, ecs_type_parse).
**
** Bottom layer, beside alloc (layers: alloc.h): it knows no world.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "value.h"
#include "ecs_private.h" /* ECSI_BLOCK */

/* ------------------------------------------------------------------------
** Field types (ecs.h, ECS_TYPES): size and name of each
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

/*
** The integer field types, written once: X(name, C type, least value,
** greatest value, 2^bits of the greatest: the first double above the
** range, exact, where the greatest one may not be (INT64_MAX is not a
** double)). Both rules (checked: ecs_value_fits; saturating:
** ecs_value_saturate and the stores of ecs_value_store_f64) come from it.
*/
#define ECSI_INT_TYPES(X)                                                    \
  X(I8, int8_t, INT8_MIN, INT8_MAX, 128.0)                                   \
  X(I16, int16_t, INT16_MIN, INT16_MAX, 32768.0)                             \
  X(I32, int32_t, INT32_MIN, INT32_MAX, 2147483648.0)                        \
  X(I64, int64_t, INT64_MIN, INT64_MAX, 9223372036854775808.0)               \
  X(U8, uint8_t, 0, UINT8_MAX, 256.0)                                        \
  X(U16, uint16_t, 0, UINT16_MAX, 65536.0)                                   \
  X(U32, uint32_t, 0, UINT32_MAX, 4294967296.0)

/* f32, f64, bool, entity and lua are the other five: a new integer type in
** ECS_TYPES needs its line above */
#define ECSI_ONE(...) +1
_Static_assert(0 ECSI_INT_TYPES(ECSI_ONE) + 5 == ECS_TYPE__COUNT,
               "an integer type of ECS_TYPES is missing from ECSI_INT_TYPES");
#undef ECSI_ONE

ecs_kind ecs_type_kind(ecs_type t) { return ecs_type_kind_inline(t); }

int64_t ecs_type_min(ecs_type t) {
#define ECSI_MIN(NAME, T, LEAST, GREATEST, END) case ECS_##NAME: return (LEAST);
  switch (t) {
  ECSI_INT_TYPES(ECSI_MIN)
  default: return 0;
  }
#undef ECSI_MIN
}

int64_t ecs_type_max(ecs_type t) {
#define ECSI_MAX(NAME, T, LEAST, GREATEST, END) case ECS_##NAME: return (int64_t)(GREATEST);
  switch (t) {
  ECSI_INT_TYPES(ECSI_MAX)
  default: return 0;
  }
#undef ECSI_MAX
}

bool ecs_value_fits(ecs_type t, int64_t v) {
  return ecs_type_kind(t) == ECS_KIND_INT && v >= ecs_type_min(t) &&
         v <= ecs_type_max(t);
}

/* saturate_I8(v) ... saturate_U32(v): v in (least, end) converts exactly
** after truncation (C11 6.3.1.4), everything else is a bound or 0 */
#define ECSI_SATURATE(NAME, T, LEAST, GREATEST, END)                         \
  static T saturate_##NAME(double v) {                                       \
    if (v >= (END)) return (T)(GREATEST);                                    \
    if (v > (double)(LEAST)) return (T)v;                                    \
    return v == v ? (T)(LEAST) : (T)0;                                       \
  }
ECSI_INT_TYPES(ECSI_SATURATE)
#undef ECSI_SATURATE

int64_t ecs_value_saturate(ecs_type t, double v) {
#define ECSI_SAT(NAME, T, LEAST, GREATEST, END) case ECS_##NAME: return (int64_t)saturate_##NAME(v);
  switch (t) {
  ECSI_INT_TYPES(ECSI_SAT)
  case ECS_BOOL: return v != 0.0;
  default: return 0;
  }
#undef ECSI_SAT
}

/* A new type in ECS_TYPES needs its line in value.h's ECS_VALUE_TYPES */
#define ECSI_ONE(...) +1
_Static_assert(0 ECS_VALUE_TYPES(ECSI_ONE) == ECS_TYPE__COUNT,
               "a type of ECS_TYPES is missing from ECS_VALUE_TYPES");
#undef ECSI_ONE

ecs_scalar ecs_value_load(const void *col, ecs_type t, uint32_t row) {
  return ecs_value_load_inline(col, t, row);
}

void ecs_value_store(void *col, ecs_type t, uint32_t row, ecs_scalar v) {
  ecs_value_store_inline(col, t, row, v);
}

/* One case per type of value.h's list, with its C type T and the member M
** of ecs_scalar: one switch, then a loop with no dispatch inside. */
void ecs_value_load_rows(ecs_scalar *dst, const void *col, ecs_type t,
                         const uint32_t *rows, uint32_t n, bool contiguous) {
#define ECSI_GETN(NAME, T, M)                                                \
  case ECS_##NAME: {                                                         \
    const T *src = (const T *)col;                                           \
    if (contiguous)                                                          \
      for (uint32_t j = 0; j < n; j++)                                       \
        dst[j].M = (ECS_VALUE_MEMBER_##M)src[rows[0] + j];                   \
    else                                                                     \
      for (uint32_t j = 0; j < n; j++)                                       \
        dst[j].M = (ECS_VALUE_MEMBER_##M)src[rows[j]];                       \
  } break;
  switch (t) {
  ECS_VALUE_TYPES(ECSI_GETN)
  default: break;
  }
#undef ECSI_GETN
}

void ecs_value_store_rows(void *col, ecs_type t, const uint32_t *rows,
                          const ecs_scalar *src, uint32_t n, bool contiguous) {
#define ECSI_PUTN(NAME, T, M)                                                \
  case ECS_##NAME: {                                                         \
    T *dst = (T *)col;                                                       \
    if (contiguous)                                                          \
      for (uint32_t j = 0; j < n; j++) dst[rows[0] + j] = (T)src[j].M;       \
    else                                                                     \
      for (uint32_t j = 0; j < n; j++) dst[rows[j]] = (T)src[j].M;           \
  } break;
  switch (t) {
  ECS_VALUE_TYPES(ECSI_PUTN)
  default: break;
  }
#undef ECSI_PUTN
}

/* ------------------------------------------------------------------------
** Columns as doubles (the expression machine)
**
** Arithmetic runs over whole blocks (ECSI_BLOCK lanes); loads and stores
** have a whole-block contiguous fast path so the compiler vectorises them.
** --------------------------------------------------------------------- */

/* Load n values of a column into dst, in place (rows from row[0]) or
** gathered through row[]. */
void ecs_value_load_f64(double *restrict dst, const void *base, ecs_type t,
                        const uint32_t *row, uint32_t n, bool contiguous) {
#define ECSI_LOAD(T)                                                         \
  {                                                                          \
    const T *restrict src = (const T *)base;                                 \
    if (contiguous && n == ECSI_BLOCK) {                                     \
      src += row[0];                                                         \
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) dst[j] = (double)src[j];     \
    } else if (contiguous) {                                                 \
      src += row[0];                                                         \
      for (uint32_t j = 0; j < n; j++) dst[j] = (double)src[j];              \
    } else {                                                                 \
      for (uint32_t j = 0; j < n; j++) dst[j] = (double)src[row[j]];         \
    }                                                                        \
  }                                                                          \
  break;
  switch (t) {
  case ECS_F32: ECSI_LOAD(float)
  case ECS_F64: ECSI_LOAD(double)
  case ECS_I8: ECSI_LOAD(int8_t)
  case ECS_I16: ECSI_LOAD(int16_t)
  case ECS_I32: ECSI_LOAD(int32_t)
  case ECS_I64: ECSI_LOAD(int64_t)
  case ECS_U8: case ECS_BOOL: ECSI_LOAD(uint8_t)
  case ECS_U16: ECSI_LOAD(uint16_t)
  case ECS_U32: ECSI_LOAD(uint32_t)
  default: /* entity and lua fields are not numbers: zeros */
    for (uint32_t j = 0; j < n; j++) dst[j] = 0.0;
    break;
  }
#undef ECSI_LOAD
}

/*
** Round to float; magnitudes beyond float's range become +-inf. Defined by
** IEC 60559 (C11 Annex F, which gcc and clang follow), and branch-free, so
** the store loop vectorises.
*/
static float to_f32(double v) { return (float)v; }

void ecs_value_store_f64(void *base, ecs_type t, const uint32_t *row,
                         const double *restrict src, uint32_t n, bool contiguous) {
#define ECSI_STORE(T, CONV)                                                  \
  {                                                                          \
    T *restrict dst = (T *)base;                                             \
    if (contiguous && n == ECSI_BLOCK) {                                     \
      dst += row[0];                                                         \
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) dst[j] = (T)(CONV);          \
    } else if (contiguous) {                                                 \
      dst += row[0];                                                         \
      for (uint32_t j = 0; j < n; j++) dst[j] = (T)(CONV);                   \
    } else {                                                                 \
      for (uint32_t j = 0; j < n; j++) dst[row[j]] = (T)(CONV);              \
    }                                                                        \
  }                                                                          \
  break;
#define ECSI_INT(NAME, T, LEAST, GREATEST, END)                              \
  case ECS_##NAME: ECSI_STORE(T, saturate_##NAME(src[j]))
  switch (t) {
  case ECS_F32: ECSI_STORE(float, to_f32(src[j]))
  case ECS_F64: ECSI_STORE(double, src[j])
  ECSI_INT_TYPES(ECSI_INT)
  case ECS_BOOL: ECSI_STORE(uint8_t, src[j] != 0.0)
  default: break;
  }
#undef ECSI_INT
#undef ECSI_STORE
}

