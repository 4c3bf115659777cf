/* test_ring.c: the ring of pre-encoded requests (no network). */
#include <stdlib.h>
#include <string.h>

#include "tri_error.h"
#include "tri_ring.h"
#include "tri_test.h"

void test_ring(void) {
  char body0[] = "first", body1[] = "second-body";
  char key[] = "authorization", value[] = "Bearer 1", binkey[] = "trace-bin";
  unsigned char binval[] = {0, 1, 2, 255};
  tri_ring_md md0[2] = {{key, strlen(key), value, strlen(value)},
                        {binkey, strlen(binkey), (const char *)binval, 4}};
  tri_ring_entry e[3] = {{(const uint8_t *)body0, 5, md0, 2},
                         {(const uint8_t *)body1, 11, NULL, 0},
                         {NULL, 0, md0, 1}};
  tri_ring *r;
  CHECK_EQ_INT(tri_ring_new(&r, e, 3), 0);
  /* Everything was copied: the caller's bytes may change or go away. */
  memset(body0, 'x', 5);
  memset(value, 'y', strlen(value));
  md0[0].key_len = 1;
  CHECK_EQ_INT(tri_ring_size(r), 3);
  CHECK_EQ_INT(tri_ring_max_len(r), 11);
  const tri_ring_entry *a = tri_ring_at(r, 0);
  CHECK_MEM(a->body, a->len, "first", 5);
  CHECK_EQ_INT(a->nmd, 2);
  CHECK_STR(a->md[0].key, a->md[0].key_len, "authorization");
  CHECK_STR(a->md[0].value, a->md[0].value_len, "Bearer 1");
  CHECK_MEM(a->md[1].value, a->md[1].value_len, binval, 4);
  CHECK(a->body != (const uint8_t *)body0);
  /* Call number i gets entry i mod n, for any i. */
  CHECK(tri_ring_at(r, 1) == tri_ring_at(r, 4));
  CHECK(tri_ring_at(r, 5) == tri_ring_at(r, UINT64_C(3) * 1000000007 + 2));
  CHECK_STR(tri_ring_at(r, 4)->body, tri_ring_at(r, 4)->len, "second-body");
  const tri_ring_entry *c = tri_ring_at(r, 2);
  CHECK_EQ_INT(c->len, 0);
  CHECK_EQ_INT(c->nmd, 1);
  CHECK_STR(c->md[0].key, c->md[0].key_len, "authorization");
  tri_ring_del(r);
  tri_ring_del(NULL);

  /* Refused: no entry, a NULL with a length, too many pairs. */
  CHECK_EQ_INT(tri_ring_new(&r, e, 0), TRI_ERR_INVALID);
  CHECK(r == NULL);
  tri_ring_entry bad = {NULL, 3, NULL, 0};
  CHECK_EQ_INT(tri_ring_new(&r, &bad, 1), TRI_ERR_INVALID);
  tri_ring_entry many = {(const uint8_t *)body1, 1, md0, TRI_RING_MAX_MD + 1};
  CHECK_EQ_INT(tri_ring_new(&r, &many, 1), TRI_ERR_INVALID);
  tri_ring_md nullval = {key, 3, NULL, 2};
  tri_ring_entry badmd = {NULL, 0, &nullval, 1};
  CHECK_EQ_INT(tri_ring_new(&r, &badmd, 1), TRI_ERR_INVALID);

  /* A big ring of distinct bodies keeps each one apart. */
  enum { N = 1000 };
  tri_ring_entry *big = calloc(N, sizeof(*big));
  uint32_t *vals = calloc(N, sizeof(*vals));
  CHECK(big && vals);
  if (!big || !vals) return;
  for (uint32_t i = 0; i < N; i++) {
    vals[i] = i * 2654435761u;
    big[i].body = (const uint8_t *)&vals[i];
    big[i].len = sizeof(vals[i]);
  }
  CHECK_EQ_INT(tri_ring_new(&r, big, N), 0);
  int same = 1;
  for (uint32_t i = 0; i < 3 * N; i++) {
    uint32_t v;
    memcpy(&v, tri_ring_at(r, i)->body, sizeof(v));
    same &= v == (i % N) * 2654435761u;
  }
  CHECK(same);
  tri_ring_del(r);
  free(big);
  free(vals);
}
