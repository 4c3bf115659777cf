/* test_sched.c: ghz's load schedules as values over time (no network). */
#include <math.h>

#include "tri_sched.h"
#include "tri_test.h"

#define CHECK_NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-9)

void test_sched(void) {
  tri_sched c = {TRI_SCHED_CONST, 100, 50, 0, 1, 0};
  CHECK(tri_sched_problem(&c) == NULL);
  CHECK_NEAR(tri_sched_at(&c, -1, 1), 100);
  CHECK_NEAR(tri_sched_at(&c, 30, 1), 100);

  /* step: +50 every 2 s from 100, up to 300, changing for at most 7 s. */
  tri_sched s = {TRI_SCHED_STEP, 100, 50, 300, 2, 7};
  CHECK(tri_sched_problem(&s) == NULL);
  CHECK_NEAR(tri_sched_at(&s, -0.5, 1), 100); /* warm-up */
  CHECK_NEAR(tri_sched_at(&s, 1.99, 1), 100);
  CHECK_NEAR(tri_sched_at(&s, 2.0, 1), 150);
  CHECK_NEAR(tri_sched_at(&s, 5.5, 1), 200);
  CHECK_NEAR(tri_sched_at(&s, 6.5, 1), 250);
  CHECK_NEAR(tri_sched_at(&s, 100, 1), 250); /* held after max_s = 7 s */
  s.max_s = 0;
  CHECK_NEAR(tri_sched_at(&s, 100, 1), 300); /* stops at end */

  /* line: -10/s from 50 down to 20; never below the floor. */
  tri_sched ln = {TRI_SCHED_LINE, 50, -10, 20, 0, 0};
  CHECK(tri_sched_problem(&ln) == NULL);
  CHECK_NEAR(tri_sched_at(&ln, 1.5, 1), 35);
  CHECK_NEAR(tri_sched_at(&ln, 10, 1), 20);
  ln.end = 0;
  CHECK_NEAR(tri_sched_at(&ln, 10, 1), 1); /* 50 - 100 clamped to the floor */

  tri_sched bad = {TRI_SCHED_STEP, 100, 5, 0, 0, 0};
  CHECK(tri_sched_problem(&bad) != NULL); /* a step without a duration */
  bad = (tri_sched){7, 100, 5, 0, 1, 0};
  CHECK(tri_sched_problem(&bad) != NULL);
  bad = (tri_sched){TRI_SCHED_LINE, 0, 5, 0, 1, 0};
  CHECK(tri_sched_problem(&bad) != NULL);
  bad = (tri_sched){TRI_SCHED_LINE, 10, NAN, 0, 1, 0};
  CHECK(tri_sched_problem(&bad) != NULL);
  bad = (tri_sched){TRI_SCHED_LINE, 10, 1, -1, 1, 0};
  CHECK(tri_sched_problem(&bad) != NULL);
}
