/*
 * test_inplace.c: in-place reads (tri_inplace.h, tri_h2_track.h) against the
 * model in inplace_sim.h: servers that send frames back to back, in turn
 * across streams, or anything else; reads of every size.  Whatever the bets,
 * no byte is lost or misordered, in-place payload lands where its message
 * wants it, and each stream ends with exactly its payload.
 */
#include "inplace_sim.h"
#include "tri_test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static size_t put_frame(uint8_t *out, uint32_t len, uint8_t type, uint8_t flags,
                        int32_t sid) {
  out[0] = (uint8_t)(len >> 16);
  out[1] = (uint8_t)(len >> 8);
  out[2] = (uint8_t)len;
  out[3] = type;
  out[4] = flags;
  out[5] = (uint8_t)(sid >> 24);
  out[6] = (uint8_t)(sid >> 16);
  out[7] = (uint8_t)(sid >> 8);
  out[8] = (uint8_t)sid;
  for (uint32_t i = 0; i < len; i++) out[9 + i] = (uint8_t)next_rand();
  return 9 + len;
}

/* A server's frames: `rounds` rounds of DATA frames of `frame` bytes, one per
 * stream of `nstreams` in turn; `odd` in 1000 frames are something else
 * (another type, padded, END_STREAM, another size, an unknown stream). */
static size_t server_input(uint8_t *out, int nstreams, int rounds, uint32_t frame,
                           int odd) {
  size_t n = 0;
  for (int r = 0; r < rounds; r++)
    for (int s = 0; s < nstreams; s++) {
      int32_t sid = 1 + 2 * s;
      uint32_t len = frame;
      uint8_t type = TRI_H2_DATA, flags = 0;
      if ((int)(next_rand() % 1000) < odd) switch (next_rand() % 5) {
          case 0: type = 0x1; len = 30; break;             /* HEADERS */
          case 1: flags = TRI_H2_FLAG_PADDED; break;
          case 2: flags = TRI_H2_FLAG_END_STREAM; break;
          case 3: len = 1 + next_rand() % frame; break;
          default: sid = 9; break;                          /* not ours */
        }
      n += put_frame(out + n, len, type, flags, sid);
    }
  return n;
}

void test_inplace(void) {
  static uint8_t in[4u << 20];
  size_t sizes[8];
  /* Back to back on one stream, in turn across four, with odd frames. */
  const struct { int streams, rounds, odd; uint32_t frame; } cases[] = {
      {1, 40, 0, 16384}, {4, 10, 0, 16384},  {4, 10, 0, 65536},
      {3, 12, 50, 16384}, {4, 10, 200, 16384}, {2, 20, 500, 8192}};
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
    for (int trial = 0; trial < 20; trial++) {
      size_t n = server_input(in, cases[k].streams, cases[k].rounds, cases[k].frame,
                              cases[k].odd);
      static const size_t read_max[3] = {9000, 80000, 250000};
      for (int i = 0; i < 8; i++) sizes[i] = 1 + next_rand() % read_max[trial % 3];
      size_t want = 5000 + next_rand() % (trial % 3 == 2 ? 200000 : 60000);
      CHECK_EQ_INT(inplace_sim(in, n, sizes, 8, want), 0);
    }
  /* Garbage: any bytes, any reads. */
  for (int trial = 0; trial < 200; trial++) {
    size_t n = 1 + next_rand() % 200000;
    for (size_t i = 0; i < n; i++) in[i] = (uint8_t)(next_rand() % 4 ? 0 : next_rand());
    for (int i = 0; i < 8; i++) sizes[i] = 1 + next_rand() % 70000;
    CHECK_EQ_INT(inplace_sim(in, n, sizes, 8, 4096 + next_rand() % 60000), 0);
  }

  /* The bets pay: frames in turn, reads of 100 KB: most payload in place
   * (not the first round, read before the plans know the order). */
  size_t n = server_input(in, 4, 10, 16384, 0), placed = 0;
  for (int i = 0; i < 8; i++) sizes[i] = 100000;
  CHECK_EQ_INT(inplace_sim_placed(in, n, sizes, 8, 10 * 16384, &placed), 0);
  CHECK(placed >= 4 * 8 * 16384);
  tri_h2_track t;
  tri_h2_track_init(&t);
  tri_h2_track_feed(&t, in, 9 + 100); /* inside stream 1's first frame */
  CHECK_EQ_INT(t.left, 16384 - 100);
  CHECK_EQ_INT(t.stream_id, 1);
  uint32_t left;
  CHECK_EQ_INT(tri_h2_track_in_data(&t, &left), 1);
  CHECK_EQ_INT(left, 16384 - 100);
  tri_h2_track_feed(&t, in + 109, 16384 - 100 + 4); /* into the next header */
  CHECK_EQ_INT(tri_h2_track_in_data(&t, &left), 0);
}
