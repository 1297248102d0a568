/*
** plain.h -- Lua values as plain data (src/lua/plain.c), shared by the
** binding's snapshots and deltas.
*/
#ifndef ECSL_PLAIN_H
#define ECSL_PLAIN_H

#define ECSL_PLAIN_DEPTH 100 /* nesting of tables in one value */
#define ECSL_PLAIN_TEXT "plain data is nil, booleans, numbers, strings, " \
  "entity handles and tables of these without cycles or metatables"

/* Write the value at idx to out. @return NULL, or what makes it not plain
** data; *nomem when out (or the stack) ran out of memory. Never raises;
** allocates nothing Lua's collector sees. */
const char *ecsl_plain_encode(lua_State *L, int idx, ecs_writer *out,
                              bool *nomem);

/* The hash of the value at idx: equal plain values hash alike (a table's
** does not depend on the order of its pairs; integers and floats differ,
** as they are kept apart); anything else (a function, a table with a
** metatable or a cycle) by its identity. @return NULL (the result is a
** char * for symmetry with encode); *nomem when the stack could not grow.
** Never raises. */
const char *ecsl_plain_hash(lua_State *L, int idx, uint64_t *out, bool *nomem);

typedef struct ecsl_plain_dec {
  const unsigned char *p;
  size_t at, n;
  const char *fn; /* for the error: "fn: invalid or truncated data" */
} ecsl_plain_dec;

/* Push the value at d (advancing it); raises for anything encode could not
** have written. */
void ecsl_plain_decode(lua_State *L, ecsl_plain_dec *d);
uint64_t ecsl_plain_uint(lua_State *L, ecsl_plain_dec *d, size_t size);
int ecsl_plain_fail(lua_State *L, const ecsl_plain_dec *d);

#endif
