/* tri_inplace.c: a read that lands DATA payload in its messages (tri_inplace.h). */
#include "tri_inplace.h"

#include <string.h>

/* A stream the plan has touched: where its message continues after what the
 * plan already gave it, and what it still wants. */
typedef struct {
  int32_t sid;
  int ended; /* its frame in the plan ends the stream: no more bets on it */
  tri_inplace_target t;
} touched;

static touched *find(touched *seen, int n, int32_t sid) {
  for (int i = 0; i < n; i++)
    if (seen[i].sid == sid) return &seen[i];
  return NULL;
}

int tri_inplace_plan_make(tri_inplace_plan *pl, const tri_h2_track *t,
                          uint32_t frame_bet, tri_inplace_lookup lookup, void *ctx,
                          uint8_t *rbuf, size_t rbuf_cap) {
  if (t->hdr_got || t->type != TRI_H2_DATA || (t->flags & TRI_H2_FLAG_PADDED) ||
      !t->stream_id)
    return 0;
  touched seen[1 + TRI_INPLACE_FRAMES];
  int nseen = 1;
  seen[0].sid = t->stream_id;
  seen[0].ended = (t->flags & TRI_H2_FLAG_END_STREAM) != 0;
  if (!lookup(ctx, t->stream_id, &seen[0].t)) return 0;
  /* The current frame's rest: certain, when the message wants it all. */
  size_t first = t->left < seen[0].t.room ? t->left : seen[0].t.room;
  pl->iov[0] = (struct iovec){first ? seen[0].t.dst : rbuf, first};
  pl->niov = 1;
  pl->bets = 0;
  pl->placed = 0;
  seen[0].t.dst += first;
  seen[0].t.room -= first;
  size_t bet_bytes = 0;
  int32_t next = first == t->left ? seen[0].t.next : 0; /* else: more of this frame */
  while (next && frame_bet && pl->bets < TRI_INPLACE_FRAMES) {
    touched *s = find(seen, nseen, next);
    if (!s) {
      s = &seen[nseen];
      s->sid = next;
      s->ended = 0;
      if (!lookup(ctx, next, &s->t)) break;
      nseen++;
    }
    if (s->ended || !s->t.room) break;
    size_t n = s->t.room < frame_bet ? s->t.room : frame_bet;
    if (bet_bytes + TRI_H2_FRAME_HEADER + n > rbuf_cap - TRI_INPLACE_TAIL_MIN) break;
    pl->iov[pl->niov++] = (struct iovec){pl->hdr[pl->bets], TRI_H2_FRAME_HEADER};
    pl->iov[pl->niov++] = (struct iovec){s->t.dst, n};
    pl->bet_sid[pl->bets++] = next;
    bet_bytes += TRI_H2_FRAME_HEADER + n;
    s->t.dst += n;
    s->t.room -= n;
    if (n < frame_bet) break; /* its message ends in that frame: what follows is unknown */
    next = s->t.next;
  }
  if (!pl->bets && first < TRI_INPLACE_MIN) return 0; /* not worth a readv */
  /* The bets' bytes and this part fit the read buffer together (settle). */
  pl->iov[pl->niov++] = (struct iovec){rbuf, rbuf_cap - bet_bytes};
  pl->total = 0;
  for (int i = 0; i < pl->niov; i++) pl->total += pl->iov[i].iov_len;
  return 1;
}

/* Bet k (header slot at iov[1 + 2k], payload at iov[2 + 2k]) won, given the
 * header that came. */
static int bet_won(const tri_inplace_plan *pl, int k, const uint8_t *h) {
  size_t bet = pl->iov[2 + 2 * k].iov_len;
  uint32_t len = tri_h2_frame_length(h);
  if (h[3] != TRI_H2_DATA || (h[4] & TRI_H2_FLAG_PADDED) ||
      tri_h2_frame_stream(h) != pl->bet_sid[k])
    return 0;
  if (k + 1 < pl->bets) /* more bets follow: exactly this frame, not the last */
    return len == bet && !(h[4] & TRI_H2_FLAG_END_STREAM);
  return len >= bet; /* the last: what follows goes to the read buffer anyway */
}

int tri_inplace_settle(tri_inplace_plan *pl, size_t r, tri_inplace_piece *pieces) {
  int n = 0;
  size_t first = pl->iov[0].iov_len < r ? pl->iov[0].iov_len : r;
  if (first) pieces[n++] = (tri_inplace_piece){pl->iov[0].iov_base, first, 1};
  pl->placed = first;
  r -= first;
  int i = 1; /* the next iovec */
  for (int k = 0; k < pl->bets && r; k++, i += 2) {
    if (r < TRI_H2_FRAME_HEADER || !bet_won(pl, k, pl->hdr[k])) break;
    size_t got = pl->iov[i + 1].iov_len < r - TRI_H2_FRAME_HEADER
                     ? pl->iov[i + 1].iov_len
                     : r - TRI_H2_FRAME_HEADER;
    pieces[n++] = (tri_inplace_piece){pl->hdr[k], TRI_H2_FRAME_HEADER, 1};
    if (got) pieces[n++] = (tri_inplace_piece){pl->iov[i + 1].iov_base, got, 1};
    pl->placed += got;
    r -= TRI_H2_FRAME_HEADER + got;
  }
  if (!r) return n;
  /* From iov[i] on, r bytes went where the vector put them, the read
   * buffer's share (`tail`) last.  Gather them in order at the front of the
   * read buffer: the tail moves up, the rest is copied in before it. */
  size_t before = 0;
  for (int j = i; j < pl->niov - 1; j++) before += pl->iov[j].iov_len;
  size_t tail = r > before ? r - before : 0;
  uint8_t *rbuf = pl->iov[pl->niov - 1].iov_base;
  size_t moved = r - tail;
  if (tail && moved) memmove(rbuf + moved, rbuf, tail);
  size_t at = 0;
  for (int j = i; j < pl->niov - 1 && at < moved; j++) {
    size_t k = pl->iov[j].iov_len < moved - at ? pl->iov[j].iov_len : moved - at;
    memcpy(rbuf + at, pl->iov[j].iov_base, k);
    at += k;
  }
  pieces[n++] = (tri_inplace_piece){rbuf, r, 0};
  return n;
}
