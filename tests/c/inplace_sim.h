/*
 * inplace_sim.h: tri_inplace against a model of the connection, for the C
 * test and the fuzz target.
 *
 * Streams 1, 3, 5 and 7 each reassemble `want` bytes of DATA payload into a
 * buffer of their own, as tri__call_on_data does (no copy when a payload
 * byte arrives at the address it belongs at).  The input (any bytes: frames
 * or garbage) is read in chunks of the given sizes: with a plan when
 * tri_inplace makes one, the "kernel" writing the chunk across the vector in
 * order, else into the read buffer.  The pieces settle returns are fed to
 * the model in order.  It checks that:
 *  - the pieces of each read, concatenated, are exactly the bytes read;
 *  - an in-place payload piece reaches its stream at the very address the
 *    stream's next byte goes to (so the receiver copies nothing);
 *  - no piece is fed from the buffer of a stream that has ended (END_STREAM
 *    fed: the real call may be freed by then);
 *  - in the end each stream holds exactly its DATA payload bytes of the input.
 * Returns 0, or the number of the check that failed.
 */
#ifndef INPLACE_SIM_H
#define INPLACE_SIM_H

#include <stdlib.h>
#include <string.h>

#include "tri_h2_track.h"
#include "tri_inplace.h"

#define SIM_STREAMS 4
#define SIM_RBUF (256u << 10) /* as the connection's */

typedef struct {
  int32_t sid;
  uint8_t *buf;
  size_t len, want, cap;
  int32_t next;
  int closed; /* its DATA with END_STREAM was fed: the call may be gone */
} sim_stream;

typedef struct {
  sim_stream s[SIM_STREAMS];
  tri_h2_track rx;      /* the model's own view of the frames fed */
  int32_t last_data;    /* stream of the last DATA frame header fed */
  uint32_t frame_max;   /* longest DATA frame seen */
  int failed;
} sim_conn;

static inline sim_stream *sim_find(sim_conn *c, int32_t sid) {
  for (int i = 0; i < SIM_STREAMS; i++)
    if (c->s[i].sid == sid) return &c->s[i];
  return NULL;
}

static inline int sim_lookup(void *ctx, int32_t sid, tri_inplace_target *out) {
  sim_stream *s = sim_find(ctx, sid);
  if (!s || s->closed) return 0;
  out->dst = s->buf + s->len;
  out->room = s->want >= TRI_INPLACE_MIN ? s->want : 0;
  out->next = s->next;
  return 1;
}

/* Feeds n bytes to the model: payload of the streams' DATA is kept. */
static inline void sim_feed(sim_conn *c, const uint8_t *p, size_t n, int in_place) {
  for (int i = 0; i < SIM_STREAMS; i++)
    if (c->s[i].closed && p >= c->s[i].buf && p < c->s[i].buf + c->s[i].cap)
      c->failed = 7;
  while (n) {
    tri_h2_track *t = &c->rx;
    if (t->left) {
      size_t k = n < t->left ? n : t->left;
      sim_stream *s = sim_find(c, t->stream_id);
      if (t->type == TRI_H2_DATA && !(t->flags & TRI_H2_FLAG_PADDED) && s && s->want) {
        size_t m = k < s->want ? k : s->want;
        uint8_t *dest = s->buf + s->len;
        if (p != dest) {
          if (in_place) c->failed = 2; /* in place, yet not where it belongs */
          memmove(dest, p, m);
        }
        s->len += m;
        s->want -= m;
      } else if (in_place) {
        c->failed = 3; /* in place, yet nobody's payload */
      }
      tri_h2_track_feed(t, p, k);
      p += k;
      n -= k;
      if (!t->left && t->type == TRI_H2_DATA && (t->flags & TRI_H2_FLAG_END_STREAM) && s)
        s->closed = 1;
      continue;
    }
    size_t k = TRI_H2_FRAME_HEADER - t->hdr_got;
    if (k > n) k = n;
    tri_h2_track_feed(t, p, k);
    p += k;
    n -= k;
    if (!t->hdr_got && t->type == TRI_H2_DATA) { /* a DATA header, complete */
      sim_stream *prev = sim_find(c, c->last_data);
      if (prev) prev->next = t->stream_id;
      c->last_data = t->stream_id;
      if (t->length > c->frame_max) c->frame_max = t->length;
    }
  }
}

/* Runs the input through; `sizes` (nsizes >= 1) gives the read sizes in
 * turn.  `want` bytes per stream.  *placed (may be NULL): payload bytes that
 * stayed where they landed. */
static inline int inplace_sim_placed(const uint8_t *in, size_t n, const size_t *sizes,
                                     int nsizes, size_t want, size_t *placed) {
  static uint8_t rbuf[SIM_RBUF], got[SIM_RBUF * 2];
  sim_conn c;
  memset(&c, 0, sizeof(c));
  for (int i = 0; i < SIM_STREAMS; i++) {
    c.s[i].sid = 1 + 2 * i;
    c.s[i].want = want;
    c.s[i].cap = want;
    c.s[i].buf = malloc(want ? want : 1);
  }
  tri_h2_track_init(&c.rx);
  size_t pos = 0;
  for (int turn = 0; pos < n && !c.failed; turn++) {
    size_t r = sizes[turn % nsizes];
    if (r > n - pos) r = n - pos;
    tri_inplace_plan pl;
    if (tri_inplace_plan_make(&pl, &c.rx, c.frame_max, sim_lookup, &c, rbuf, SIM_RBUF)) {
      if (r > pl.total) r = pl.total;
      size_t at = 0; /* the kernel: the vector in order */
      for (int i = 0; i < pl.niov && at < r; i++) {
        size_t k = pl.iov[i].iov_len < r - at ? pl.iov[i].iov_len : r - at;
        memcpy(pl.iov[i].iov_base, in + pos + at, k);
        at += k;
      }
      tri_inplace_piece pieces[2 + 2 * TRI_INPLACE_FRAMES];
      int np = tri_inplace_settle(&pl, r, pieces);
      if (placed) *placed += pl.placed;
      size_t cat = 0;
      for (int i = 0; i < np; i++) {
        if (cat + pieces[i].n > sizeof(got)) return 4;
        memcpy(got + cat, pieces[i].p, pieces[i].n);
        cat += pieces[i].n;
      }
      if (cat != r || memcmp(got, in + pos, r)) c.failed = 1;
      for (int i = 0; i < np && !c.failed; i++) {
        uintptr_t at = (uintptr_t)pieces[i].p, slots = (uintptr_t)&pl.hdr;
        int slot = at >= slots && at < slots + sizeof(pl.hdr); /* a header slot */
        sim_feed(&c, pieces[i].p, pieces[i].n, pieces[i].in_place && !slot);
      }
    } else {
      if (r > SIM_RBUF) r = SIM_RBUF;
      memcpy(rbuf, in + pos, r);
      sim_feed(&c, rbuf, r, 0);
    }
    pos += r;
  }
  /* Each stream holds its payload: parse the input again, plainly. */
  if (!c.failed) {
    tri_h2_track t;
    tri_h2_track_init(&t);
    size_t off[SIM_STREAMS] = {0};
    for (size_t i = 0; i < pos && !c.failed; i++) {
      if (t.left && t.type == TRI_H2_DATA && !(t.flags & TRI_H2_FLAG_PADDED)) {
        sim_stream *s = sim_find(&c, t.stream_id);
        if (s) {
          size_t k = (size_t)(s - c.s);
          if (off[k] < want && s->buf[off[k]] != in[i]) c.failed = 5;
          off[k]++;
        }
      }
      tri_h2_track_feed(&t, in + i, 1);
    }
    for (int i = 0; i < SIM_STREAMS && !c.failed; i++)
      if (c.s[i].len != (off[i] < want ? off[i] : want)) c.failed = 6;
  }
  for (int i = 0; i < SIM_STREAMS; i++) free(c.s[i].buf);
  return c.failed;
}

static inline int inplace_sim(const uint8_t *in, size_t n, const size_t *sizes, int nsizes,
                              size_t want) {
  return inplace_sim_placed(in, n, sizes, nsizes, want, NULL);
}

#endif
