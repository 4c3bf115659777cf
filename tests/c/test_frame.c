/* test_frame.c: the 5-byte envelope and its incremental decoder. */
#include <stdlib.h>

#include "tri_frame.h"
#include "tri_test.h"

/* Decodes `in` fed in pieces of `step` bytes; collects messages. */
typedef struct {
  int messages;
  uint8_t flags[8];
  uint8_t body[8][64];
  size_t len[8];
} collected;

static void feed_all(const uint8_t *in, size_t n, size_t step, collected *out,
                     tri_frame_decoder *d) {
  memset(out, 0, sizeof(*out));
  tri_frame_decoder_init(d);
  size_t pos = 0;
  while (pos <= n) {
    size_t piece = n - pos < step ? n - pos : step;
    const uint8_t *p = in + pos;
    size_t left = piece;
    for (;;) {
      size_t used;
      tri_frame_event ev;
      tri_frame_event_type t = tri_frame_decode(d, p, left, &used, &ev);
      p += used;
      left -= used;
      if (t == TRI_FRAME_NEED_MORE) break;
      int m = out->messages;
      if (t == TRI_FRAME_HEADER) out->flags[m] = ev.flags;
      if (t == TRI_FRAME_CHUNK) {
        memcpy(out->body[m] + out->len[m], ev.data, ev.len);
        out->len[m] += ev.len;
      }
      if (t == TRI_FRAME_END) out->messages++;
    }
    if (pos == n) break;
    pos += piece;
  }
}

static void any_split(void) {
  uint8_t wire[64];
  size_t n = 0;
  tri_frame_put_prefix(wire, 0, 3);
  memcpy(wire + 5, "abc", 3);
  n = 8;
  tri_frame_put_prefix(wire + n, 0, 0); /* empty message */
  n += 5;
  tri_frame_put_prefix(wire + n, 1, 10);
  memcpy(wire + n + 5, "0123456789", 10);
  n += 15;
  for (size_t step = 1; step <= n; step++) {
    collected c;
    tri_frame_decoder d;
    feed_all(wire, n, step, &c, &d);
    CHECK_EQ_INT(c.messages, 3);
    CHECK_MEM(c.body[0], c.len[0], "abc", 3);
    CHECK_EQ_INT(c.len[1], 0);
    CHECK_EQ_INT(c.flags[2], 1);
    CHECK_MEM(c.body[2], c.len[2], "0123456789", 10);
    CHECK(!tri_frame_decoder_partial(&d));
  }
}

static void prefix_is_big_endian(void) {
  uint8_t p[5];
  tri_frame_put_prefix(p, 1, 0x01020304);
  const uint8_t want[5] = {1, 1, 2, 3, 4};
  CHECK_MEM(p, 5, want, 5);
}

static void truncation_is_visible(void) {
  uint8_t wire[16];
  tri_frame_put_prefix(wire, 0, 10);
  memcpy(wire + 5, "abc", 3);
  for (size_t cut = 1; cut <= 8; cut++) {
    collected c;
    tri_frame_decoder d;
    feed_all(wire, cut, cut, &c, &d);
    CHECK_EQ_INT(c.messages, 0);
    CHECK(tri_frame_decoder_partial(&d));
  }
}

static void large_length_reported_before_body(void) {
  uint8_t wire[5];
  tri_frame_put_prefix(wire, 0, 0xFFFFFFFFu);
  tri_frame_decoder d;
  tri_frame_decoder_init(&d);
  size_t used;
  tri_frame_event ev;
  CHECK_EQ_INT(tri_frame_decode(&d, wire, 5, &used, &ev), TRI_FRAME_HEADER);
  CHECK_EQ_INT(ev.length, 0xFFFFFFFFu);
  CHECK_EQ_INT(used, 5);
}

void test_frame(void) {
  prefix_is_big_endian();
  any_split();
  truncation_is_visible();
  large_length_reported_before_body();
}
