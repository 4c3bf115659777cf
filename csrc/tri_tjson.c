#include "tri_tjson.h"

#include <string.h>

#include "tri_pb.h"
#include "tri_wire.h"

static const char *const names[] = {
    "ok",        "canceled",          "unknown",         "invalid_argument",
    "deadline_exceeded", "not_found", "already_exists",  "permission_denied",
    "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
    "unimplemented", "internal",      "unavailable",     "data_loss",
    "unauthenticated"};

const char *tri_tjson_code_name(int code) {
  return code >= 0 && code <= 16 ? names[code] : "unknown";
}

typedef tri_tjson_cur cursor;

void tri_tjson_ws(cursor *c) {
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static int hex4(const char *s, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char ch = s[i];
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                     : -1;
    if (d < 0) return -1;
    *v = *v * 16 + (unsigned)d;
  }
  return 0;
}

static size_t put_utf8(char *out, unsigned cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 63));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 63));
    out[2] = (char)(0x80 | (cp & 63));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 63));
  out[2] = (char)(0x80 | ((cp >> 6) & 63));
  out[3] = (char)(0x80 | (cp & 63));
  return 4;
}

int tri_tjson_lit(cursor *c, const char *lit) {
  size_t k = strlen(lit);
  if ((size_t)(c->end - c->p) < k || memcmp(c->p, lit, k)) return -1;
  c->p += k;
  return 0;
}

int tri_tjson_string(cursor *c, char *out, size_t cap, size_t *len) {
  size_t o = 0;
  if (c->p >= c->end || *c->p != '"') return -1;
  c->p++;
  while (c->p < c->end && *c->p != '"') {
    unsigned char ch = (unsigned char)*c->p++;
    if (ch < 0x20) return -1;
    if (ch != '\\') {
      if (out && o < cap) out[o] = (char)ch;
      o++;
      continue;
    }
    if (c->p >= c->end) return -1;
    char e = *c->p++;
    char lit = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r'
             : e == 'b' ? '\b' : e == 'f' ? '\f'
             : (e == '"' || e == '\\' || e == '/') ? e : 0;
    if (lit) {
      if (out && o < cap) out[o] = lit;
      o++;
      continue;
    }
    if (e != 'u' || c->end - c->p < 4) return -1;
    unsigned cp, lo;
    if (hex4(c->p, &cp)) return -1;
    c->p += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 && c->p[0] == '\\' &&
        c->p[1] == 'u' && hex4(c->p + 2, &lo) == 0 && lo >= 0xDC00 &&
        lo < 0xE000) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      c->p += 6;
    } else if (cp >= 0xD800 && cp < 0xE000) {
      cp = 0xFFFD; /* lone surrogate */
    }
    /* \uXXXX is 6 source bytes and at most 4 output bytes (12 for a pair). */
    char tmp[4];
    size_t k = put_utf8(tmp, cp);
    for (size_t i = 0; i < k; i++, o++)
      if (out && o < cap) out[o] = tmp[i];
  }
  if (c->p >= c->end) return -1;
  c->p++;
  if (len) *len = o;
  return 0;
}

static int skip_container(cursor *c, char open, char close, int depth) {
  if (depth > 64) return -1;
  c->p++;
  tri_tjson_ws(c);
  if (c->p < c->end && *c->p == close) {
    c->p++;
    return 0;
  }
  for (;;) {
    tri_tjson_ws(c);
    if (open == '{') {
      if (tri_tjson_string(c, NULL, SIZE_MAX, NULL)) return -1;
      tri_tjson_ws(c);
      if (c->p >= c->end || *c->p++ != ':') return -1;
    }
    if (tri_tjson_skip(c, depth + 1)) return -1;
    tri_tjson_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p == close) {
      c->p++;
      return 0;
    }
    return -1;
  }
}

int tri_tjson_skip(cursor *c, int depth) {
  tri_tjson_ws(c);
  if (c->p >= c->end) return -1;
  char ch = *c->p;
  if (ch == '"') return tri_tjson_string(c, NULL, SIZE_MAX, NULL);
  if (ch == '{') return skip_container(c, '{', '}', depth);
  if (ch == '[') return skip_container(c, '[', ']', depth);
  static const char *const lits[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(lits[i]);
    if ((size_t)(c->end - c->p) >= l && memcmp(c->p, lits[i], l) == 0) {
      c->p += l;
      return 0;
    }
  }
  if (ch == '-' || (ch >= '0' && ch <= '9')) {
    while (c->p < c->end && strchr("+-0123456789.eE", *c->p)) c->p++;
    return 0;
  }
  return -1;
}

static int code_from_name(const char *s, size_t n) {
  for (int i = 1; i <= 16; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return i;
  if (n > 5 && memcmp(s, "code_", 5) == 0) {
    int v = tri_parse_status(s + 5, n - 5);
    if ((v >= 1 && v <= 16) || v == 17) return v;
  }
  return 2;
}

/* The code of a Java error body's "status": the HTTP status it carries
 * (Dubbo Java TriRpcStatus.grpcCodeToHttpStatus, inverted where it is one to
 * one; otherwise the Triple HTTP table). */
static int code_from_java_http(int http) {
  switch (http) {
  case 499: return 1;  /* CANCELLED */
  case 404: return 5;  /* NOT_FOUND (Java: UNIMPLEMENTED is 501) */
  case 501: return 12; /* UNIMPLEMENTED */
  case 504: return 4;  /* DEADLINE_EXCEEDED */
  case 500: return 13; /* INTERNAL (also UNKNOWN, DATA_LOSS) */
  case 409: return 10; /* ABORTED (also ALREADY_EXISTS) */
  case 429: return 8;  /* RESOURCE_EXHAUSTED */
  default: return (int)tri_code_from_http_triple(http);
  }
}

/* A "status" value.  dubbo-js writes the gRPC code as a JSON number
 * ({"status": 5, ...}); Dubbo Java writes the HTTP status as a string
 * ({"status": "404", ...}).  A number outside 1..16 is UNKNOWN (an error
 * body never means OK). */
static int status_value(cursor *c, int *code) {
  if (c->p < c->end && *c->p == '"') {
    const char *vs = c->p + 1;
    size_t vl;
    if (tri_tjson_string(c, NULL, SIZE_MAX, &vl)) return -1;
    if ((size_t)(c->p - 1 - vs) != vl) vl = 0; /* escapes: not digits */
    int http = vl == 3 ? tri_parse_status(vs, vl) : -1;
    *code = http >= 100 ? code_from_java_http(http) : code_from_name(vs, vl);
    return 0;
  }
  const char *s = c->p;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
  size_t n = (size_t)(c->p - s);
  if (n == 0) return -1;
  if (c->p < c->end && strchr(".eE", *c->p)) return -1; /* not an integer */
  int v = n <= 2 ? tri_parse_status(s, n) : -1;
  *code = v >= 1 && v <= 16 ? v : 2;
  return 0;
}

/* One {"type":..., "value":...} detail, appended to pb as an Any (field 3).
 * The Any is written after a 5-byte gap so its length can be filled in. */
static int detail(cursor *c, uint8_t *pb, size_t *pb_len, int depth) {
  tri_tjson_ws(c);
  if (c->p >= c->end || *c->p != '{') return tri_tjson_skip(c, depth);
  size_t start = *pb_len, at = start + 6; /* tag + up to 5 length bytes */
  char key[16];
  c->p++;
  for (;;) {
    tri_tjson_ws(c);
    if (c->p < c->end && *c->p == '}') {
      c->p++;
      break;
    }
    const char *ks = c->p;
    size_t kl;
    cursor probe = *c;
    if (tri_tjson_string(&probe, NULL, SIZE_MAX, &kl)) return -1;
    if (kl < sizeof(key) && (size_t)(probe.p - ks) == kl + 2) {
      memcpy(key, ks + 1, kl);
      key[kl] = 0;
    } else {
      key[0] = 0;
    }
    c->p = probe.p;
    tri_tjson_ws(c);
    if (c->p >= c->end || *c->p++ != ':') return -1;
    tri_tjson_ws(c);
    if (strcmp(key, "type") == 0 || strcmp(key, "value") == 0) {
      /* Decode the string 6 + 20 bytes ahead (room for the field header and
       * the type URL prefix), then put the field in place. */
      static const char prefix[] = "type.googleapis.com/";
      const size_t plen = sizeof(prefix) - 1;
      uint8_t *tmp = pb + at + 6 + plen;
      size_t slen;
      if (tri_tjson_string(c, (char *)tmp, SIZE_MAX, &slen)) return -1;
      size_t clen;
      if (key[0] == 't') {
        int has = slen >= plen && memcmp(tmp, prefix, plen) == 0;
        if (!has) {
          tmp -= plen;
          memcpy(tmp, prefix, plen);
          slen += plen;
        }
        clen = slen;
      } else {
        long bl = tri_base64_decode((const char *)tmp, slen, tmp); /* in place */
        if (bl < 0) return -1;
        clen = (size_t)bl;
      }
      uint8_t hdr[6];
      size_t h = 0;
      hdr[h++] = key[0] == 't' ? 0x0a : 0x12;
      h += tri_pb_varint_put(hdr + h, clen);
      memmove(pb + at + h, tmp, clen);
      memcpy(pb + at, hdr, h);
      at += h + clen;
    } else if (tri_tjson_skip(c, depth + 1)) {
      return -1;
    }
    tri_tjson_ws(c);
    if (c->p < c->end && *c->p == ',') c->p++;
  }
  /* Close the gap: tag 3 (length-delimited) and the Any's length. */
  size_t body = at - (start + 6);
  uint8_t hdr[6];
  size_t h = 0;
  hdr[h++] = 0x1a;
  h += tri_pb_varint_put(hdr + h, body);
  memmove(pb + start + h, pb + start + 6, body);
  memcpy(pb + start, hdr, h);
  *pb_len = start + h + body;
  return 0;
}

int tri_tjson_int32(cursor *c, int32_t *out) {
  tri_tjson_ws(c);
  int quoted = c->p < c->end && *c->p == '"';
  if (quoted) c->p++;
  int neg = c->p < c->end && *c->p == '-';
  if (neg) c->p++;
  int64_t x = 0;
  const char *b = c->p;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    x = x * 10 + (*c->p++ - '0');
    if (x > (int64_t)INT32_MAX + 1) return -1;
  }
  if (c->p == b || (quoted && tri_tjson_lit(c, "\""))) return -1;
  x = neg ? -x : x;
  if (x > INT32_MAX) return -1;
  *out = (int32_t)x;
  return 0;
}

int tri_tjson_bool(cursor *c, int *out) {
  tri_tjson_ws(c);
  if (tri_tjson_lit(c, "true") == 0) *out = 1;
  else if (tri_tjson_lit(c, "false") == 0) *out = 0;
  else if (tri_tjson_lit(c, "null") == 0) *out = -1;
  else return -1;
  return 0;
}

int tri_tjson_object(cursor *c,
                     int (*member)(cursor *, const char *, size_t, void *),
                     void *arg) {
  tri_tjson_ws(c);
  if (tri_tjson_lit(c, "{")) return -1;
  tri_tjson_ws(c);
  if (tri_tjson_lit(c, "}") == 0) return 0;
  for (;;) {
    char key[TRI_TJSON_KEY_MAX];
    size_t kl;
    tri_tjson_ws(c);
    if (tri_tjson_string(c, key, sizeof(key), &kl)) return -1;
    if (kl > sizeof(key)) kl = 0; /* a long key: not the caller's */
    tri_tjson_ws(c);
    if (tri_tjson_lit(c, ":") || member(c, key, kl, arg)) return -1;
    tri_tjson_ws(c);
    if (tri_tjson_lit(c, ",") == 0) continue;
    return tri_tjson_lit(c, "}");
  }
}

int tri_tjson_error_parse(const char *json, size_t n, int *code, char *msg,
                          size_t *msg_len, uint8_t *pb, size_t *pb_len) {
  cursor c = {json, json + n};
  int have_code = 0;
  size_t detail_len = 0;
  uint8_t *details = pb + n + 64; /* built after the room the header needs */
  *msg_len = 0;
  tri_tjson_ws(&c);
  if (c.p >= c.end || *c.p != '{') return -1;
  c.p++;
  for (;;) {
    tri_tjson_ws(&c);
    if (c.p < c.end && *c.p == '}') {
      c.p++;
      break;
    }
    const char *ks = c.p;
    size_t kl;
    if (tri_tjson_string(&c, NULL, SIZE_MAX, &kl)) return -1;
    const char *kname = ks + 1;
    tri_tjson_ws(&c);
    if (c.p >= c.end || *c.p++ != ':') return -1;
    tri_tjson_ws(&c);
    if (kl == 4 && memcmp(kname, "code", 4) == 0) {
      const char *vs = c.p + 1;
      size_t vl;
      if (tri_tjson_string(&c, NULL, SIZE_MAX, &vl)) return -1;
      *code = code_from_name(vs, (size_t)(c.p - 1 - vs) == vl ? vl : 0);
      have_code = 2; /* a "code" wins over a "status" */
    } else if (kl == 6 && memcmp(kname, "status", 6) == 0) {
      int v;
      if (status_value(&c, &v)) return -1;
      if (have_code < 2) *code = v;
      if (!have_code) have_code = 1;
    } else if (kl == 7 && memcmp(kname, "message", 7) == 0) {
      if (tri_tjson_string(&c, msg, SIZE_MAX, msg_len)) return -1;
    } else if (kl == 7 && memcmp(kname, "details", 7) == 0) {
      if (c.p >= c.end || *c.p != '[') return -1;
      c.p++;
      for (;;) {
        tri_tjson_ws(&c);
        if (c.p < c.end && *c.p == ']') {
          c.p++;
          break;
        }
        if (detail(&c, details, &detail_len, 1)) return -1;
        tri_tjson_ws(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
      }
    } else if (tri_tjson_skip(&c, 1)) {
      return -1;
    }
    tri_tjson_ws(&c);
    if (c.p < c.end && *c.p == ',') c.p++;
  }
  if (!have_code) return -1;
  /* google.rpc.Status{1: code, 2: message, 3: details...} */
  size_t o = 0;
  pb[o++] = 0x08;
  o += tri_pb_varint_put(pb + o, (uint64_t)*code);
  if (*msg_len) {
    pb[o++] = 0x12;
    o += tri_pb_varint_put(pb + o, *msg_len);
    memcpy(pb + o, msg, *msg_len);
    o += *msg_len;
  }
  memmove(pb + o, details, detail_len);
  *pb_len = o + detail_len;
  return 0;
}
