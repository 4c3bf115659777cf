#include "tri_frame.h"

#include <string.h>

void tri_frame_put_prefix(uint8_t out[TRI_FRAME_PREFIX], uint8_t flags,
                          uint32_t len) {
  out[0] = flags;
  out[1] = (uint8_t)(len >> 24);
  out[2] = (uint8_t)(len >> 16);
  out[3] = (uint8_t)(len >> 8);
  out[4] = (uint8_t)len;
}

void tri_frame_decoder_init(tri_frame_decoder *d) { memset(d, 0, sizeof(*d)); }

tri_frame_event_type tri_frame_decode(tri_frame_decoder *d, const uint8_t *in,
                                      size_t n, size_t *used,
                                      tri_frame_event *ev) {
  *used = 0;
  if (d->in_body) {
    if (d->got == d->length) {
      /* Report the end before consuming anything of the next message. */
      d->in_body = 0;
      d->hdr_got = 0;
      return TRI_FRAME_END;
    }
    if (n == 0) return TRI_FRAME_NEED_MORE;
    size_t take = d->length - d->got;
    if (take > n) take = n;
    d->got += (uint32_t)take;
    ev->data = in;
    ev->len = take;
    *used = take;
    return TRI_FRAME_CHUNK;
  }
  size_t take = TRI_FRAME_PREFIX - d->hdr_got;
  if (take > n) take = n;
  memcpy(d->hdr + d->hdr_got, in, take);
  d->hdr_got += take;
  *used = take;
  if (d->hdr_got < TRI_FRAME_PREFIX) return TRI_FRAME_NEED_MORE;
  d->length = ((uint32_t)d->hdr[1] << 24) | ((uint32_t)d->hdr[2] << 16) |
              ((uint32_t)d->hdr[3] << 8) | d->hdr[4];
  d->got = 0;
  d->in_body = 1;
  ev->flags = d->hdr[0];
  ev->length = d->length;
  return TRI_FRAME_HEADER;
}

int tri_frame_decoder_partial(const tri_frame_decoder *d) {
  return d->hdr_got > 0 && (!d->in_body || d->got < d->length);
}
