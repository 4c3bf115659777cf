/* test_mem.c: counted allocation and the nghttp2 arena. */
#include "tri_mem.h"
#include "tri_test.h"

void test_mem(void) {
  tri_stats st = {0};
  tri_arena a;
  tri_arena_init(&a, &st);
  void *p = tri_arena_alloc(&a, 20);
  void *q = tri_arena_alloc(&a, 100);
  CHECK(p && q);
  CHECK_EQ_INT(((uintptr_t)p) % 16, 0);
  CHECK_EQ_INT(st.allocations, 2);
  tri_arena_free(&a, p);
  void *r = tri_arena_alloc(&a, 24); /* same 24-byte class: recycled */
  CHECK(r == p);
  CHECK_EQ_INT(st.allocations, 2);
  memset(q, 7, 100);
  void *q2 = tri_arena_realloc(&a, q, 1000);
  CHECK(((unsigned char *)q2)[99] == 7);
  void *big = tri_arena_alloc(&a, 100000); /* beyond the classes */
  CHECK(big != NULL);
  tri_arena_free(&a, big);
  unsigned char *z = tri_arena_calloc(&a, 10, 10);
  int zero = 1;
  for (int i = 0; i < 100; i++) zero &= z[i] == 0;
  CHECK(zero);
  tri_arena_free(&a, z);
  tri_arena_free(&a, q2);
  tri_arena_free(&a, r);
  tri_arena_free_all(&a);
  void *fresh = tri_arena_realloc(&a, NULL, 8); /* realloc(NULL) allocates */
  CHECK(fresh != NULL);
  tri_arena_free(&a, fresh);
  tri_arena_free_all(&a);
  CHECK_EQ_INT(a.cached, 0);

  /* Classes: two per power of two, up to 128 KiB.  A freed block is
   * recycled for any size of its class, and only for those. */
  static const size_t same[][2] = {{17, 24},     {25, 32},      {90, 96},
                                   {97, 128},    {65546, 98304}, {98305, 131072}};
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
    void *x = tri_arena_alloc(&a, same[i][0]);
    tri_arena_free(&a, x);
    CHECK(tri_arena_alloc(&a, same[i][1]) == x);
    tri_arena_free(&a, x);
    void *y = tri_arena_alloc(&a, same[i][1] + 1); /* the next class up */
    CHECK(y != x);
    tri_arena_free(&a, y);
  }
  uint64_t allocs = st.allocations;
  void *huge = tri_arena_alloc(&a, 131073); /* too big to pool: never cached */
  tri_arena_free(&a, huge);
  void *huge2 = tri_arena_alloc(&a, 131073);
  CHECK_EQ_INT(st.allocations, allocs + 2);
  tri_arena_free(&a, huge2);
  tri_arena_free_all(&a);

  /* The cache is capped: blocks beyond max_cached go back to the heap. */
  a.max_cached = 64;
  void *b1 = tri_arena_alloc(&a, 32), *b2 = tri_arena_alloc(&a, 32),
       *b3 = tri_arena_alloc(&a, 32);
  tri_arena_free(&a, b1);
  tri_arena_free(&a, b2);
  tri_arena_free(&a, b3); /* over the cap: released */
  CHECK_EQ_INT(a.cached, 64);
  CHECK(tri_arena_alloc(&a, 32) == b2); /* recycled, newest first */
  CHECK_EQ_INT(a.cached, 32);

  /* Merge: another arena's free blocks move over (up to the cap). */
  tri_arena other;
  tri_arena_init(&other, &st);
  void *o1 = tri_arena_alloc(&other, 16), *o2 = tri_arena_alloc(&other, 16),
       *o3 = tri_arena_alloc(&other, 16);
  tri_arena_free(&other, o1);
  tri_arena_free(&other, o2);
  tri_arena_free(&other, o3);
  CHECK_EQ_INT(other.cached, 48);
  uint64_t before = st.allocations;
  tri_arena_merge(&a, &other); /* a: 32 + 16 + 16 = 64, the third released */
  CHECK_EQ_INT(other.cached, 0);
  CHECK_EQ_INT(a.cached, 64);
  void *m1 = tri_arena_alloc(&a, 10), *m2 = tri_arena_alloc(&a, 10);
  CHECK(m1 && m2 && m1 != m2);
  CHECK_EQ_INT(st.allocations, before); /* both came from the merged blocks */
  tri_arena_free(&a, m1);
  tri_arena_free(&a, m2);
  tri_arena_free(&a, b2); /* the block handed out before the cap test */
  tri_arena_free_all(&a);
  tri_arena_free_all(&other);
}
