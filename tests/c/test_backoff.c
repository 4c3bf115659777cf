/* test_backoff.c: grpc's connection backoff sequence (tri_backoff). */
#include "tri_backoff.h"
#include "tri_test.h"

#define MS 1000000LL

/* Delays follow initial * 1.6^k capped at max, each within +-20 %. */
static void sequence(void) {
  tri_backoff b;
  tri_backoff_init(&b, 1000, 120000, 42);
  double expect = 1000;
  int64_t started = 5 * MS;
  for (int k = 0; k < 20; k++) {
    int64_t want = (int64_t)(expect * MS), got = tri_backoff_next_delay(&b);
    CHECK(got > want - MS && got < want + MS);
    int64_t next = tri_backoff_failed(&b, started);
    int64_t delay = next - started;
    CHECK(delay >= (int64_t)(expect * 0.8 * MS) - 1);
    CHECK(delay <= (int64_t)(expect * 1.2 * MS) + 1);
    CHECK_EQ_INT(b.failures, k + 1);
    expect *= 1.6;
    if (expect > 120000) expect = 120000;
    started = next;
  }
  CHECK_EQ_INT(b.current_ns, 120000 * MS); /* capped */
  tri_backoff_reset(&b);
  CHECK_EQ_INT(b.failures, 0);
  CHECK_EQ_INT(tri_backoff_next_delay(&b), 1000 * MS);
}

/* Jitter spreads delays over the whole +-20 % band, and two seeds differ. */
static void jitter(void) {
  tri_backoff a, b;
  tri_backoff_init(&a, 1000, 1000, 1);
  tri_backoff_init(&b, 1000, 1000, 2);
  int64_t lo = INT64_MAX, hi = 0, same = 0;
  for (int i = 0; i < 1000; i++) {
    int64_t da = tri_backoff_failed(&a, 0), db = tri_backoff_failed(&b, 0);
    if (da < lo) lo = da;
    if (da > hi) hi = da;
    same += da == db;
  }
  CHECK(lo >= 800 * MS && lo < 820 * MS);
  CHECK(hi <= 1200 * MS && hi > 1180 * MS);
  CHECK(same < 10);
}

/* grpc core's floor: nothing below 100 ms; max is at least initial. */
static void limits(void) {
  tri_backoff b;
  tri_backoff_init(&b, 1, 0, 7);
  CHECK_EQ_INT(b.initial_ns, 100 * MS);
  CHECK_EQ_INT(b.max_ns, 100 * MS);
  tri_backoff_init(&b, 5000, 2000, 7);
  CHECK_EQ_INT(b.max_ns, 5000 * MS);
  tri_backoff_init(&b, 100, 200, 0); /* seed 0 still jitters */
  int64_t d1 = tri_backoff_failed(&b, 0), d2 = tri_backoff_failed(&b, 0);
  CHECK(d1 >= 80 * MS && d1 <= 120 * MS);
  CHECK(d2 >= 128 * MS && d2 <= 192 * MS);
}

void test_backoff(void) {
  sequence();
  jitter();
  limits();
}
