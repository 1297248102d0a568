/*
** clock.c -- ecs_clock (ecs.h): seconds from an arbitrary origin, for the
** systems' timings and the benches. CLOCK_MONOTONIC where POSIX has it,
** else C11's timespec_get (wall time), else processor time.
**
** Base layer (layers: alloc.h): no world.
*/
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <time.h>

#include "ecs.h"

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
