/*
** harness.h -- a minimal C test harness.
**
** Each test file defines its cases with TEST(Suite_case_description), lists
** them in a TEST_LIST, and ends with TEST_MAIN(list). The runner prints one
** line per failure and a closing "N passed, N failed" line; the exit status
** is non-zero when anything failed.
*/
#ifndef ECS_TEST_HARNESS_H
#define ECS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_case {
  const char *name;
  void (*fn)(int *failed);
} test_case;

#define TEST(name) static void name(int *test_failed_)
#define CASE(name) { #name, name }

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
              #cond);                                                    \
      *test_failed_ = 1;                                                 \
      return;                                                            \
    }                                                                    \
  } while (0)

#define CHECK_EQ_INT(a, b)                                               \
  do {                                                                   \
    long long a_ = (long long)(a), b_ = (long long)(b);                  \
    if (a_ != b_) {                                                      \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, \
              __LINE__, #a, #b, a_, b_);                                 \
      *test_failed_ = 1;                                                 \
      return;                                                            \
    }                                                                    \
  } while (0)

/* The world passes every invariant check. */
#define CHECK_WORLD(w)                                                   \
  do {                                                                   \
    const char *bad_ = ecs_world_check(w);                               \
    if (bad_ != NULL) {                                                  \
      fprintf(stderr, "%s:%d: world check: %s\n", __FILE__, __LINE__,    \
              bad_);                                                     \
      *test_failed_ = 1;                                                 \
      return;                                                            \
    }                                                                    \
  } while (0)

static inline int test_run(const test_case *cases, size_t n) {
  int passed = 0, failed = 0;
  const char *only = getenv("TEST_ONLY");
  for (size_t i = 0; i < n; i++) {
    int f = 0;
    if (only != NULL && strstr(cases[i].name, only) == NULL) continue;
    cases[i].fn(&f);
    if (f) {
      failed++;
      fprintf(stderr, "FAIL %s\n", cases[i].name);
    } else {
      passed++;
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}

#define TEST_MAIN(list)                                                  \
  int main(void) {                                                       \
    return test_run(list, sizeof(list) / sizeof((list)[0]));             \
  }

/*
** A counting allocator for lua_Alloc-style hosts: tracks live blocks and
** bytes, and counts growing allocations (a new block or a larger one) in
** calls. The fail_at-th growth fails (1-based; 0 = never); with sticky set,
** every growth from the fail_at-th on fails, as Lua's own memory tests do.
** Shrinking never fails: Lua assumes it cannot.
*/
typedef struct test_alloc {
  long blocks, bytes, calls, fail_at;
  int sticky;
} test_alloc;

static inline void *test_allocf(void *ud, void *p, size_t osize, size_t nsize) {
  test_alloc *a = (test_alloc *)ud;
  void *np;
  if (nsize == 0) {
    if (p != NULL) {
      a->blocks--;
      a->bytes -= (long)osize;
      free(p);
    }
    return NULL;
  }
  if (p == NULL || nsize > osize) {
    a->calls++;
    if (a->fail_at != 0 &&
        (a->calls == a->fail_at || (a->sticky && a->calls > a->fail_at)))
      return NULL;
  }
  np = realloc(p, nsize);
  if (np == NULL) return NULL;
  if (p == NULL) a->blocks++;
  a->bytes += (long)nsize - (long)(p ? osize : 0);
  return np;
}

#endif
