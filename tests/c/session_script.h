/*
 * session_script.h: builds HTTP/2 server frames for tests and fuzzers that
 * drive a detached connection (tri__conn_new_detached) without a network.
 * Header blocks are HPACK-encoded with nghttp2's deflater.  Everything goes
 * into a caller-owned growable byte script.
 */
#ifndef TRI_SESSION_SCRIPT_H
#define TRI_SESSION_SCRIPT_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t *p;
  size_t len, cap;
  nghttp2_hd_deflater *hd;
} script;

static inline void script_init(script *s) {
  memset(s, 0, sizeof(*s));
  nghttp2_hd_deflate_new(&s->hd, 4096);
}

static inline void script_free(script *s) {
  free(s->p);
  nghttp2_hd_deflate_del(s->hd);
}

static inline void script_put(script *s, const void *p, size_t n) {
  if (s->len + n > s->cap) {
    s->cap = (s->len + n) * 2 + 64;
    s->p = realloc(s->p, s->cap);
  }
  memcpy(s->p + s->len, p, n);
  s->len += n;
}

/* One frame: 9-byte header + payload. */
static inline void script_frame(script *s, uint8_t type, uint8_t flags,
                                int32_t sid, const void *payload, size_t n) {
  uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                  (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8),
                  (uint8_t)sid};
  script_put(s, h, 9);
  if (n) script_put(s, payload, n);
}

static inline void script_settings(script *s) {
  script_frame(s, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
}

/* HEADERS from name/value pairs (NULL-terminated list, at most 32 pairs); a
 * block over 16 KiB goes on in CONTINUATION frames. */
static inline void script_headers(script *s, int32_t sid, int end_stream,
                                  const char *const *nv) {
  nghttp2_nv arr[32];
  size_t n = 0;
  for (; nv[2 * n]; n++) {
    arr[n].name = (uint8_t *)nv[2 * n];
    arr[n].namelen = strlen(nv[2 * n]);
    arr[n].value = (uint8_t *)nv[2 * n + 1];
    arr[n].valuelen = strlen(nv[2 * n + 1]);
    arr[n].flags = NGHTTP2_NV_FLAG_NONE;
  }
  size_t cap = nghttp2_hd_deflate_bound(s->hd, arr, n);
  uint8_t *block = malloc(cap);
  ssize_t bl = nghttp2_hd_deflate_hd(s->hd, block, cap, arr, n);
  size_t len = bl > 0 ? (size_t)bl : 0, off = 0;
  do {
    size_t part = len - off < 16384 ? len - off : 16384;
    uint8_t flags = off + part == len ? NGHTTP2_FLAG_END_HEADERS : 0;
    if (off == 0 && end_stream) flags |= NGHTTP2_FLAG_END_STREAM;
    script_frame(s, off == 0 ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, flags,
                 sid, block + off, part);
    off += part;
  } while (off < len);
  free(block);
}

/* DATA carrying one gRPC message (5-byte prefix with `flags`). */
static inline void script_message(script *s, int32_t sid, uint8_t flags,
                                  const void *msg, size_t n, int end_stream) {
  uint8_t *buf = malloc(n + 5);
  buf[0] = flags;
  buf[1] = (uint8_t)(n >> 24);
  buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 8);
  buf[4] = (uint8_t)n;
  memcpy(buf + 5, msg, n);
  script_frame(s, NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0, sid,
               buf, n + 5);
  free(buf);
}

static inline void script_rst(script *s, int32_t sid, uint32_t code) {
  uint8_t p[4] = {(uint8_t)(code >> 24), (uint8_t)(code >> 16),
                  (uint8_t)(code >> 8), (uint8_t)code};
  script_frame(s, NGHTTP2_RST_STREAM, 0, sid, p, 4);
}

#endif
