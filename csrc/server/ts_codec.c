/*
 * ts_codec.c: the grpc.testing messages (see ts_codec.h).
 */
#include "server/ts_codec.h"

#include <string.h>

#include "tri_pb.h"
#include "tri_tjson.h"

/* ---- protobuf ------------------------------------------------------------ */

typedef struct {
  const uint8_t *p, *end;
} pbr;

static int pb_varint(pbr *r, uint64_t *v) {
  size_t k = tri_pb_varint_get(r->p, (size_t)(r->end - r->p), v);
  r->p += k;
  return k ? 0 : -1;
}

/* The next field: its number and wire type; the varint in *v (wire type 0)
 * or the bytes in data[0..len) (wire type 2); fixed32/64 are skipped.
 * Returns 1, 0 at the end, -1 when malformed (groups included). */
static int pb_next(pbr *r, uint32_t *field, int *wt, uint64_t *v,
                   const uint8_t **data, size_t *len) {
  if (r->p == r->end) return 0;
  uint64_t key;
  if (pb_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
    return -1;
  *field = (uint32_t)(key >> 3);
  *wt = (int)(key & 7);
  size_t left = (size_t)(r->end - r->p);
  switch (*wt) {
  case 0:
    return pb_varint(r, v) ? -1 : 1;
  case 1:
    if (left < 8) return -1;
    r->p += 8;
    return 1;
  case 5:
    if (left < 4) return -1;
    r->p += 4;
    return 1;
  case 2:
    if (pb_varint(r, v) || *v > (uint64_t)(r->end - r->p)) return -1;
    *data = r->p;
    *len = (size_t)*v;
    r->p += *len;
    return 1;
  default:
    return -1;
  }
}

/* Iterates the fields of p[0..n) into the named locals; `known(f, w)` is
 * the wire type field f must have (-1: unknown, skipped). */
#define PB_FIELDS(p, n)                                                    \
  pbr r_ = {(p), (p) + (n)};                                               \
  uint32_t f;                                                              \
  int wt, rv_;                                                             \
  uint64_t v = 0;                                                          \
  const uint8_t *d = NULL;                                                 \
  size_t dl = 0;                                                           \
  while ((rv_ = pb_next(&r_, &f, &wt, &v, &d, &dl)) == 1)
#define PB_END()                                                           \
  if (rv_ < 0) return -1

static int pb_boolvalue(const uint8_t *p, size_t n, int *out) {
  *out = 0;
  PB_FIELDS(p, n) {
    if (f == 1) {
      if (wt != 0) return -1;
      *out = v != 0;
    }
  }
  PB_END();
  return 0;
}

static int pb_payload(const uint8_t *p, size_t n, size_t *body_len) {
  *body_len = 0;
  PB_FIELDS(p, n) {
    if ((f == 1 && wt != 0) || (f == 2 && wt != 2)) return -1;
    if (f == 2) *body_len = dl;
  }
  PB_END();
  return 0;
}

static int pb_status(const uint8_t *p, size_t n, tri_ts_request *r) {
  r->has_status = 1;
  PB_FIELDS(p, n) {
    if ((f == 1 && wt != 0) || (f == 2 && wt != 2)) return -1;
    if (f == 1) r->status_code = (int32_t)(uint32_t)v;
    if (f == 2) r->status_msg = d, r->status_msg_len = dl;
  }
  PB_END();
  return 0;
}

static void ts_request_init(tri_ts_request *r) {
  memset(r, 0, sizeof(*r));
  r->response_compressed = r->expect_compressed = -1;
}

int tri_ts_decode_simple(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    int want = f == 1 || f == 2 || f == 4 || f == 5   ? 0
               : f == 3 || f == 6 || f == 7 || f == 8 ? 2
                                                      : -1;
    if (want >= 0 && wt != want) return -1;
    switch (f) {
    case 1: r->response_type = (int32_t)(uint32_t)v; break;
    case 2: r->response_size = (int32_t)(uint32_t)v; break;
    case 3: if (pb_payload(d, dl, &r->payload_len)) return -1; break;
    case 4: r->fill_username = v != 0; break;
    case 5: r->fill_oauth_scope = v != 0; break;
    case 6: if (pb_boolvalue(d, dl, &r->response_compressed)) return -1; break;
    case 7: if (pb_status(d, dl, r)) return -1; break;
    case 8: if (pb_boolvalue(d, dl, &r->expect_compressed)) return -1; break;
    }
  }
  PB_END();
  return 0;
}

static int pb_params(const uint8_t *p, size_t n, tri_ts_params *o) {
  o->size = o->interval_us = 0;
  o->compressed = -1;
  PB_FIELDS(p, n) {
    int want = f == 1 || f == 2 ? 0 : f == 3 ? 2 : -1;
    if (want >= 0 && wt != want) return -1;
    if (f == 1) o->size = (int32_t)(uint32_t)v;
    if (f == 2) o->interval_us = (int32_t)(uint32_t)v;
    if (f == 3 && pb_boolvalue(d, dl, &o->compressed)) return -1;
  }
  PB_END();
  return 0;
}

int tri_ts_decode_output(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    int want = f == 1 ? 0 : f == 2 || f == 3 || f == 7 ? 2 : -1;
    if (want >= 0 && wt != want) return -1;
    tri_ts_params prm;
    switch (f) {
    case 1: r->response_type = (int32_t)(uint32_t)v; break;
    case 2:
      if (pb_params(d, dl, &prm)) return -1;
      r->nparams++;
      break;
    case 3: if (pb_payload(d, dl, &r->payload_len)) return -1; break;
    case 7: if (pb_status(d, dl, r)) return -1; break;
    }
  }
  PB_END();
  return 0;
}

int tri_ts_decode_input(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    if ((f == 1 || f == 2) && wt != 2) return -1;
    if (f == 1 && pb_payload(d, dl, &r->payload_len)) return -1;
    if (f == 2 && pb_boolvalue(d, dl, &r->expect_compressed)) return -1;
  }
  PB_END();
  return 0;
}

int tri_ts_next_params(const uint8_t *p, size_t n, size_t *off,
                       tri_ts_params *out) {
  if (*off > n) return -1;
  pbr r = {p + *off, p + n};
  uint32_t f;
  int wt, rv;
  uint64_t v;
  const uint8_t *d = NULL;
  size_t dl = 0;
  while ((rv = pb_next(&r, &f, &wt, &v, &d, &dl)) == 1) {
    if (f != 2) continue;
    if (wt != 2 || pb_params(d, dl, out)) return -1;
    *off = (size_t)(r.p - p);
    return 1;
  }
  *off = n;
  return rv;
}

/* Payload{1: type, 2: size zero bytes} without its key and length. */
static size_t payload_len(uint32_t size, int32_t type) {
  size_t n = 0;
  if (type) n += 1 + tri_pb_varint_len((uint64_t)(int64_t)type);
  if (size) n += 1 + tri_pb_varint_len(size) + size;
  return n;
}

size_t tri_ts_payload_msg_len(uint32_t size, int32_t type) {
  size_t inner = payload_len(size, type);
  return 1 + tri_pb_varint_len(inner) + inner;
}

size_t tri_ts_payload_msg_put(uint8_t *out, uint32_t size, int32_t type) {
  size_t inner = payload_len(size, type), n = 0;
  out[n++] = 0x0a; /* field 1, length-delimited */
  n += tri_pb_varint_put(out + n, inner);
  if (type) {
    out[n++] = 0x08; /* Payload.type */
    n += tri_pb_varint_put(out + n, (uint64_t)(int64_t)type);
  }
  if (size) {
    out[n++] = 0x12; /* Payload.body */
    n += tri_pb_varint_put(out + n, size);
    memset(out + n, 0, size);
    n += size;
  }
  return n;
}

size_t tri_ts_aggregated_put(uint8_t *out, int32_t total) {
  if (!total) return 0;
  out[0] = 0x08;
  return 1 + tri_pb_varint_put(out + 1, (uint64_t)(int64_t)total);
}

/* ---- protojson (SimpleRequest only) ------------------------------------ */

/* Matches a key by its proto name or its lowerCamelCase JSON name. */
static int jkey(const char *k, size_t kl, const char *proto, const char *camel) {
  return (kl == strlen(proto) && memcmp(k, proto, kl) == 0) ||
         (kl == strlen(camel) && memcmp(k, camel, kl) == 0);
}

static int j_payload(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "body", "body")) {
    tri_tjson_ws(c);
    if (tri_tjson_lit(c, "null") == 0) return 0;
    size_t n;
    if (tri_tjson_string(c, NULL, 0, &n)) return -1;
    r->payload_len = n / 4 * 3; /* about right: the body is not used */
    return 0;
  }
  return tri_tjson_skip(c, 1);
}

static int j_status(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "code", "code")) return tri_tjson_int32(c, &r->status_code);
  if (jkey(k, kl, "message", "message")) {
    static _Thread_local char msg[TRI_TS_MAX_STATUS_MSG];
    tri_tjson_ws(c);
    if (tri_tjson_string(c, msg, sizeof(msg), &r->status_msg_len)) return -1;
    if (r->status_msg_len > sizeof(msg)) r->status_msg_len = sizeof(msg);
    r->status_msg = (const uint8_t *)msg;
    return 0;
  }
  return tri_tjson_skip(c, 1);
}

static int j_simple(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "response_type", "responseType")) {
    tri_tjson_ws(c);
    if (c->p < c->end && *c->p == '"' && tri_tjson_lit(c, "\"COMPRESSABLE\"") == 0) {
      r->response_type = 0;
      return 0;
    }
    return tri_tjson_int32(c, &r->response_type);
  }
  if (jkey(k, kl, "response_size", "responseSize"))
    return tri_tjson_int32(c, &r->response_size);
  if (jkey(k, kl, "payload", "payload")) return tri_tjson_object(c, j_payload, r);
  if (jkey(k, kl, "response_compressed", "responseCompressed"))
    return tri_tjson_bool(c, &r->response_compressed);
  if (jkey(k, kl, "expect_compressed", "expectCompressed"))
    return tri_tjson_bool(c, &r->expect_compressed);
  if (jkey(k, kl, "response_status", "responseStatus")) {
    r->has_status = 1;
    return tri_tjson_object(c, j_status, r);
  }
  return tri_tjson_skip(c, 1);
}

int tri_ts_decode_simple_json(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  if (!n) return -1; /* before any arithmetic on p, which may be NULL */
  tri_tjson_cur c = {(const char *)p, (const char *)p + n};
  if (tri_tjson_object(&c, j_simple, r)) return -1;
  tri_tjson_ws(&c);
  return c.p == c.end ? 0 : -1;
}
