/* test_deadlines.c: the connection's deadline set (tri_deadlines). */
#include <stdint.h>

#include "tri_deadlines.h"
#include "tri_test.h"

/* Stand-ins for calls: the set never dereferences them. */
static struct tri_call *fake(int i) { return (struct tri_call *)(uintptr_t)(0x1000 + 16 * i); }

/* Every entry's slot maps back to it, every parent is due no later than its
 * children, and free slots plus entries account for every slot. */
static int consistent(const tri_deadlines *d) {
  if (d->n + d->nfree != d->cap) return 0;
  for (size_t i = 0; i < d->n; i++) {
    uint32_t s = d->heap[i].slot;
    if (s >= d->cap || d->pos[s] != i || !d->owner[s]) return 0;
    if (i && d->heap[(i - 1) / 2].at > d->heap[i].at) return 0;
  }
  for (size_t k = 0; k < d->nfree; k++)
    if (d->owner[d->free_slots[k]]) return 0;
  return 1;
}

/* Scattered deadlines come out earliest first, each with its own call. */
static void earliest_first(void) {
  enum { N = 500 };
  tri_deadlines d;
  tri_deadlines_init(&d, NULL);
  int64_t at[N];
  unsigned seed = 7;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    at[i] = (int64_t)((seed >> 8) % 100000);
    CHECK(tri_deadlines_add(&d, fake(i), at[i]) >= 0);
  }
  CHECK(consistent(&d));
  int64_t last = -1;
  int ordered = 1, matched = 1;
  while (tri_deadlines_count(&d)) {
    int64_t first = tri_deadlines_first_at(&d);
    int i = (int)(((uintptr_t)tri_deadlines_first(&d) - 0x1000) / 16);
    ordered &= first >= last;
    matched &= i >= 0 && i < N && at[i] == first;
    last = first;
    tri_deadlines_remove(&d, tri_deadlines_first_slot(&d));
  }
  CHECK(ordered);
  CHECK(matched);
  tri_deadlines_free(&d);
}

/* Removing from anywhere keeps the heap whole; slots are reused, so a set
 * that churns through many calls never holds more slots than its peak. */
static void churn_reuses_slots(void) {
  enum { LIVE = 100, ROUNDS = 20000 };
  tri_deadlines d;
  tri_deadlines_init(&d, NULL);
  int slot[LIVE];
  unsigned seed = 99;
  int64_t now = 0;
  for (int i = 0; i < LIVE; i++) slot[i] = tri_deadlines_add(&d, fake(i), now + i);
  int ok = 1;
  for (int r = 0; r < ROUNDS; r++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)((seed >> 8) % LIVE);
    tri_deadlines_remove(&d, slot[i]);
    /* Mostly increasing deadlines, as with one timeout per run, with some
     * out of order. */
    now += 1 + (int64_t)((seed >> 4) % 3);
    int64_t at = (seed & 1) ? now + LIVE : now - (int64_t)((seed >> 12) % 50);
    slot[i] = tri_deadlines_add(&d, fake(i), at);
    ok &= slot[i] >= 0 && slot[i] < LIVE + 64;
    if (r % 997 == 0) ok &= consistent(&d);
  }
  CHECK(ok);
  CHECK(consistent(&d));
  CHECK_EQ_INT(tri_deadlines_count(&d), LIVE);
  CHECK(d.cap <= 128); /* 64, doubled once for 100 live */
  tri_deadlines_free(&d);
  CHECK_EQ_INT(d.cap, 0);
  CHECK(d.heap == NULL);
}

/* Growth keeps entries and their slots; the last slot freed is the next one
 * taken. */
static void growth_and_reuse_order(void) {
  tri_deadlines d;
  tri_deadlines_init(&d, NULL);
  int first = tri_deadlines_add(&d, fake(0), 50);
  CHECK_EQ_INT(first, 0);
  for (int i = 1; i < 200; i++) tri_deadlines_add(&d, fake(i), 1000 - i);
  CHECK_EQ_INT(d.cap, 256);
  CHECK(consistent(&d));
  CHECK(tri_deadlines_first(&d) == fake(0)); /* 50 is still the earliest */
  tri_deadlines_remove(&d, 17);
  tri_deadlines_remove(&d, 42);
  CHECK_EQ_INT(tri_deadlines_add(&d, fake(300), 5), 42);
  CHECK_EQ_INT(tri_deadlines_add(&d, fake(301), 6), 17);
  CHECK(tri_deadlines_first(&d) == fake(300));
  CHECK(consistent(&d));
  tri_deadlines_free(&d);
}

/* An entry moved later or earlier keeps its slot and owner and is found
 * where its new deadline puts it (the server moves a stream from its delay
 * to its next job or deadline this way). */
static void update_moves_entries(void) {
  enum { N = 100 };
  tri_deadlines d;
  tri_deadlines_init(&d, NULL);
  int slot[N];
  for (int i = 0; i < N; i++) slot[i] = tri_deadlines_add(&d, fake(i), 10 * i);
  CHECK(tri_deadlines_first(&d) == fake(0));
  tri_deadlines_update(&d, slot[0], 10 * N); /* the earliest becomes the last */
  CHECK(consistent(&d));
  CHECK(tri_deadlines_first(&d) == fake(1));
  tri_deadlines_update(&d, slot[77], -1); /* one from the middle goes first */
  CHECK(consistent(&d));
  CHECK(tri_deadlines_first(&d) == fake(77));
  CHECK_EQ_INT(tri_deadlines_first_slot(&d), slot[77]);
  int64_t last = INT64_MIN;
  int seen_zero_last = 0;
  while (tri_deadlines_count(&d)) {
    int64_t at = tri_deadlines_first_at(&d);
    CHECK(at >= last);
    last = at;
    seen_zero_last = tri_deadlines_first(&d) == fake(0);
    tri_deadlines_remove(&d, tri_deadlines_first_slot(&d));
  }
  CHECK(seen_zero_last);
  tri_deadlines_free(&d);
}

void test_deadlines(void) {
  earliest_first();
  churn_reuses_slots();
  growth_and_reuse_order();
  update_moves_entries();
}
