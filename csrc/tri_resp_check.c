/* tri_resp_check.c: see tri_resp_check.h. */
#include "tri_resp_check.h"

#include <string.h>

#define NAME_CHAR 1  /* lowercase token character (RFC 9110 §5.6.2) */
#define VALUE_CHAR 2 /* field value character: HTAB, SP-~, obs-text */

static const uint8_t CHARS[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    2, 3, 2, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 3, 2, /* 0x20 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, /* 0x30 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x40 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, /* 0x50 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, /* 0x60 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 3, 2, 3, 0, /* 0x70 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x80 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x90 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xa0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xb0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xc0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xd0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xe0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xf0 */
};

/* Nonzero when every byte of p[0..n) has the class bit `cls`. */
static int all_of(const uint8_t *p, size_t n, uint8_t cls) {
  for (size_t i = 0; i < n; i++)
    if (!(CHARS[p[i]] & cls)) return 0;
  return 1;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* A value's characters, 8 at a time: a word without a byte under 0x20 and
 * without DEL holds value characters only (bytes from 0x80 are obs-text);
 * a word with one (HTAB is under 0x20 too) is looked at byte by byte. */
static int value_chars_ok(const uint8_t *v, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, v + i, 8);
    uint64_t del = x ^ (0x7full * ONES);
    if (((x - 0x20 * ONES) & ~x & HIGHS) || ((del - ONES) & ~del & HIGHS))
      break;
  }
  return all_of(v + i, n - i, VALUE_CHAR);
}

static int value_ok(const uint8_t *v, size_t n) {
  if (n == 0) return 1;
  if (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
    return 0;
  return value_chars_ok(v, n);
}

static int is(const uint8_t *p, size_t n, const char *lit, size_t lit_len) {
  return n == lit_len && memcmp(p, lit, n) == 0;
}
#define IS(p, n, lit) is(p, n, lit, sizeof(lit) - 1)

/* Decimal digits only, at least one, within INT64_MAX (leading zeros
 * allowed).  Returns 0, or -1 otherwise. */
static int parse_length(const uint8_t *p, size_t n, uint64_t *out) {
  if (n == 0) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    uint64_t d = (uint64_t)(p[i] - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int status_field(tri_resp_check *s, const uint8_t *v, size_t vl) {
  if ((s->flags & TRI_RESP_HAS_STATUS) || vl != 3) return TRI_RESP_FIELD_BAD;
  int code = 0;
  for (int i = 0; i < 3; i++) {
    if (v[i] < '0' || v[i] > '9') return TRI_RESP_FIELD_BAD;
    code = code * 10 + (v[i] - '0');
  }
  if (code == 101) return TRI_RESP_FIELD_BAD; /* no upgrade in HTTP/2 */
  s->status = (int16_t)code;
  s->flags |= TRI_RESP_HAS_STATUS;
  return TRI_RESP_FIELD_OK;
}

static int length_field(tri_resp_check *s, const uint8_t *v, size_t vl) {
  if (s->status == 204) {
    /* Forbidden there, but common as "0": taken as the length, dropped. */
    if ((s->flags & TRI_RESP_HAS_LENGTH) || vl != 1 || v[0] != '0')
      return TRI_RESP_FIELD_BAD;
    s->content_length = 0;
    s->flags |= TRI_RESP_HAS_LENGTH;
    return TRI_RESP_FIELD_DROP;
  }
  if (s->status / 100 == 1 || (s->flags & TRI_RESP_HAS_LENGTH) ||
      parse_length(v, vl, &s->content_length))
    return TRI_RESP_FIELD_BAD;
  s->flags |= TRI_RESP_HAS_LENGTH;
  return TRI_RESP_FIELD_OK;
}

/* "trailers" in any case: the only te a response may carry. */
static int te_trailers(const uint8_t *v, size_t vl) {
  static const char t[] = "trailers";
  if (vl != sizeof(t) - 1) return 0;
  for (size_t i = 0; i < vl; i++) {
    uint8_t c = v[i] >= 'A' && v[i] <= 'Z' ? (uint8_t)(v[i] + 32) : v[i];
    if (c != (uint8_t)t[i]) return 0;
  }
  return 1;
}

int tri_resp_check_field(tri_resp_check *s, const uint8_t *name, size_t nl,
                         const uint8_t *value, size_t vl, int trailer) {
  if (nl == 0) return TRI_RESP_FIELD_BAD;
  if (name[0] == ':') {
    /* Pseudo-headers: :status alone, first in a response, never in
     * trailers.  Its value is three digits, so no other value check. */
    if (trailer || (s->flags & TRI_RESP_REGULAR_SEEN) ||
        !IS(name, nl, ":status"))
      return TRI_RESP_FIELD_BAD;
    return status_field(s, value, vl);
  }
  if (!value_ok(value, vl)) return TRI_RESP_FIELD_BAD;
  /* The names with rules of their own, and the usual ones of a gRPC answer
   * (valid by sight: no character check), by length. */
  int rv = TRI_RESP_FIELD_OK, known = 0;
  switch (nl) {
    case 2:
      if (IS(name, nl, "te") && !te_trailers(value, vl))
        return TRI_RESP_FIELD_BAD;
      break;
    case 7:
      if (IS(name, nl, "upgrade")) return TRI_RESP_FIELD_BAD;
      break;
    case 10:
      if (IS(name, nl, "connection") || IS(name, nl, "keep-alive"))
        return TRI_RESP_FIELD_BAD;
      break;
    case 11: known = IS(name, nl, "grpc-status"); break;
    case 12:
      known = IS(name, nl, "content-type") || IS(name, nl, "grpc-message");
      break;
    case 13: known = IS(name, nl, "grpc-encoding"); break;
    case 14:
      if (IS(name, nl, "content-length")) {
        rv = length_field(s, value, vl);
        if (rv != TRI_RESP_FIELD_OK)
          return rv; /* a dropped one sets nothing else */
        known = 1;
      }
      break;
    case 16:
      if (IS(name, nl, "proxy-connection")) return TRI_RESP_FIELD_BAD;
      break;
    case 17:
      if (IS(name, nl, "transfer-encoding")) return TRI_RESP_FIELD_BAD;
      break;
    case 20: known = IS(name, nl, "grpc-accept-encoding"); break;
  }
  if (!known && !all_of(name, nl, NAME_CHAR)) return TRI_RESP_FIELD_BAD;
  s->flags |= TRI_RESP_REGULAR_SEEN;
  return rv;
}

int tri_resp_check_block(tri_resp_check *s, int first, int end_stream) {
  if (first || (s->flags & TRI_RESP_EXPECT_FINAL)) { /* a response */
    if (!(s->flags & TRI_RESP_HAS_STATUS)) return -1;
    if (s->status / 100 == 1) {
      /* Informational: the next block is the response, afresh. */
      s->flags = TRI_RESP_EXPECT_FINAL;
      s->status = 0;
      s->content_length = 0;
    } else {
      s->flags &= (uint8_t)~TRI_RESP_EXPECT_FINAL;
      if (s->status == 204 || s->status == 304) { /* no body, whatever said */
        s->content_length = 0;
        s->flags |= TRI_RESP_HAS_LENGTH;
      }
    }
  } else if (!end_stream) {
    return -1; /* trailers end the stream */
  }
  return end_stream ? tri_resp_check_data_end(s) : 0;
}

int tri_resp_check_data(tri_resp_check *s, size_t n) {
  s->received += n;
  if (s->flags & TRI_RESP_EXPECT_FINAL) return -1;
  if ((s->flags & TRI_RESP_HAS_LENGTH) && s->received > s->content_length)
    return -1;
  return 0;
}

int tri_resp_check_data_fits(const tri_resp_check *s, size_t n) {
  if (s->flags & TRI_RESP_EXPECT_FINAL) return 0;
  return !(s->flags & TRI_RESP_HAS_LENGTH) || s->received + n <= s->content_length;
}

int tri_resp_check_data_end(const tri_resp_check *s) {
  if (s->flags & TRI_RESP_EXPECT_FINAL) return -1;
  if ((s->flags & TRI_RESP_HAS_LENGTH) && s->received != s->content_length)
    return -1;
  return 0;
}
