/* tri_h2_track.c: HTTP/2 frame boundaries of a connection's input. */
#include "tri_h2_track.h"

#include <string.h>


void tri_h2_track_init(tri_h2_track *t) { memset(t, 0, sizeof(*t)); }

void tri_h2_track_feed(tri_h2_track *t, const uint8_t *p, size_t n) {
  while (n) {
    if (t->left) { /* inside a payload: skip it */
      size_t k = n < t->left ? n : t->left;
      t->left -= (uint32_t)k;
      p += k;
      n -= k;
      continue;
    }
    size_t k = TRI_H2_FRAME_HEADER - t->hdr_got;
    if (k > n) k = n;
    memcpy(t->hdr + t->hdr_got, p, k);
    t->hdr_got += k;
    p += k;
    n -= k;
    if (t->hdr_got < TRI_H2_FRAME_HEADER) break;
    t->hdr_got = 0;
    t->left = t->length = tri_h2_frame_length(t->hdr);
    t->type = t->hdr[3];
    t->flags = t->hdr[4];
    t->stream_id = tri_h2_frame_stream(t->hdr);
  }
}

int32_t tri_h2_track_in_data(const tri_h2_track *t, uint32_t *left) {
  if (t->hdr_got || t->type != TRI_H2_DATA || (t->flags & TRI_H2_FLAG_PADDED)) return 0;
  if (!t->left && (t->flags & TRI_H2_FLAG_END_STREAM)) return 0;
  *left = t->left;
  return t->stream_id;
}
