#include "tri_wire.h"

#include <stdint.h>
#include <string.h>

/* The power of ten tri_timeout_round_up rounds ns (> 0) to a multiple of. */
static int64_t round_step(int64_t ns) {
  int64_t step = 1, top = 1000; /* ns / step has three digits: ns < top */
  while (ns >= top && top <= INT64_MAX / 10) {
    step *= 10;
    top *= 10;
  }
  if (ns >= top) step *= 10; /* beyond the last power of ten that fits */
  return step;
}

int64_t tri_timeout_round_up(int64_t ns) {
  if (ns <= 0) return ns;
  int64_t step = round_step(ns);
  int64_t q = ns / step + (ns % step != 0);
  if (q > INT64_MAX / step) return ns;
  return q * step;
}

int tri_timeout_memo_text(tri_timeout_memo *m, int kind, int64_t ns,
                          char out[TRI_TIMEOUT_MAX]) {
  if (kind == TRI_TIMEOUT_TRIPLE && ns < 1000000) return 0; /* none left */
  if (kind == TRI_TIMEOUT_GRPC && ns <= 0)
    return tri_grpc_timeout_encode(ns, out);
  if (m->kind == kind + 1 && ns > m->lo && ns <= m->hi) {
    memcpy(out, m->text, (size_t)m->len + 1);
    return m->len;
  }
  int64_t r = tri_timeout_round_up(ns);
  int len = kind == TRI_TIMEOUT_GRPC ? tri_grpc_timeout_encode(r, out)
                                     : tri_triple_timeout_encode(r, out);
  /* Rounding is monotonic: when both ends of (lo, r] round to r, all of it
   * does. */
  int64_t lo = r - round_step(r > 1 ? r - 1 : 1);
  if (tri_timeout_round_up(lo + 1) == r && tri_timeout_round_up(r) == r) {
    m->kind = kind + 1;
    m->lo = lo;
    m->hi = r;
    m->len = len;
    memcpy(m->text, out, (size_t)len + 1);
  }
  return len;
}

int tri_grpc_timeout_encode(int64_t ns, char out[TRI_TIMEOUT_MAX]) {
  static const struct {
    int64_t ns;
    char unit;
  } units[] = {{1, 'n'},
               {1000, 'u'},
               {1000000, 'm'},
               {1000000000LL, 'S'},
               {60LL * 1000000000LL, 'M'},
               {3600LL * 1000000000LL, 'H'}};
  if (ns <= 0) {
    memcpy(out, "0n", 3);
    return 2;
  }
  int64_t v = ns;
  char unit = 'H';
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    v = ns / units[i].ns;
    unit = units[i].unit;
    if (v <= 99999999) break;
  }
  if (v > 99999999) v = 99999999;
  char tmp[12];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  out[n] = unit;
  out[n + 1] = 0;
  return n + 1;
}

int tri_grpc_timeout_decode(const char *s, size_t n, int64_t *ns) {
  if (n < 2 || n > 9) return -1;
  int64_t v = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  int64_t mul;
  switch (s[n - 1]) {
  case 'n': mul = 1; break;
  case 'u': mul = 1000; break;
  case 'm': mul = 1000000; break;
  case 'S': mul = 1000000000LL; break;
  case 'M': mul = 60LL * 1000000000LL; break;
  case 'H': mul = 3600LL * 1000000000LL; break;
  default: return -1;
  }
  *ns = v > INT64_MAX / mul ? INT64_MAX : v * mul;
  return 0;
}

int tri_triple_timeout_encode(int64_t ns, char out[TRI_TIMEOUT_MAX]) {
  int64_t ms = ns / 1000000;
  if (ms <= 0) return 0;
  if (ms > 9999999999LL) ms = 9999999999LL; /* at most 10 digits */
  char tmp[12];
  int n = 0;
  while (ms) {
    tmp[n++] = (char)('0' + ms % 10);
    ms /= 10;
  }
  for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  out[n] = 0;
  return n;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t tri_percent_decode(const char *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i] == '%' && i + 2 < n && hexval(in[i + 1]) >= 0 &&
        hexval(in[i + 2]) >= 0) {
      out[o++] = (char)(hexval(in[i + 1]) * 16 + hexval(in[i + 2]));
      i += 2;
    } else {
      out[o++] = in[i];
    }
  }
  return o;
}

size_t tri_percent_encode(const char *in, size_t n, char *out) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c < 0x20 || c > 0x7E || c == '%') {
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    } else {
      out[o++] = (char)c;
    }
  }
  return o;
}

int tri_parse_status(const char *s, size_t n) {
  if (n == 0 || n > 10) return -1;
  long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v > 0x7fffffff ? -1 : (int)v;
}

tri_code tri_code_from_http(int http_status) {
  switch (http_status) {
  case 400: return TRI_CODE_INTERNAL;
  case 401: return TRI_CODE_UNAUTHENTICATED;
  case 403: return TRI_CODE_PERMISSION_DENIED;
  case 404: return TRI_CODE_UNIMPLEMENTED;
  case 429:
  case 502:
  case 503:
  case 504: return TRI_CODE_UNAVAILABLE;
  default: return TRI_CODE_UNKNOWN;
  }
}

tri_code tri_code_from_http_triple(int http_status) {
  switch (http_status) {
  case 400: return TRI_CODE_INVALID_ARGUMENT;
  case 401: return TRI_CODE_UNAUTHENTICATED;
  case 403: return TRI_CODE_PERMISSION_DENIED;
  case 404: return TRI_CODE_UNIMPLEMENTED;
  case 408: return TRI_CODE_DEADLINE_EXCEEDED;
  case 412: return TRI_CODE_FAILED_PRECONDITION;
  case 413:
  case 431: return TRI_CODE_RESOURCE_EXHAUSTED;
  case 429:
  case 502:
  case 503:
  case 504: return TRI_CODE_UNAVAILABLE;
  default: return TRI_CODE_UNKNOWN;
  }
}

tri_code tri_code_from_rst(uint32_t h2_error) {
  switch (h2_error) {
  case 0x7: return TRI_CODE_UNAVAILABLE;        /* REFUSED_STREAM */
  case 0x8: return TRI_CODE_CANCELLED;          /* CANCEL */
  case 0xb: return TRI_CODE_RESOURCE_EXHAUSTED; /* ENHANCE_YOUR_CALM */
  case 0xc: return TRI_CODE_PERMISSION_DENIED;  /* INADEQUATE_SECURITY */
  default: return TRI_CODE_INTERNAL;
  }
}

const char *tri_code_name(int code) {
  static const char *const names[] = {
      "OK",        "CANCELLED",         "UNKNOWN",
      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS",   "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED",       "OUT_OF_RANGE",
      "UNIMPLEMENTED",    "INTERNAL",          "UNAVAILABLE",
      "DATA_LOSS",        "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? names[code] : "UNKNOWN";
}

int tri_md_key_valid(const char *key, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = key[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' ||
          c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

int tri_md_key_is_bin(const char *key, size_t n) {
  return n > 4 && memcmp(key + n - 4, "-bin", 4) == 0;
}

int tri_md_value_valid(const char *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7E) return 0;
  return 1;
}

int tri_md_key_reserved(const char *key, size_t n) {
  static const char *const exact[] = {"te", "content-type", "user-agent",
                                      "content-length", "connection",
                                      "host", "transfer-encoding", 0};
  if (n >= 5 && memcmp(key, "grpc-", 5) == 0) return 1;
  for (int i = 0; exact[i]; i++)
    if (strlen(exact[i]) == n && memcmp(exact[i], key, n) == 0) return 1;
  return 0;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t tri_base64_encode(const uint8_t *in, size_t n, char *out) {
  size_t o = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | in[i + 2];
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
    out[o++] = b64[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)in[i] << 16;
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
  } else if (n - i == 2) {
    uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8);
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
  }
  return o;
}

static int b64val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

long tri_base64_decode(const char *in, size_t n, uint8_t *out) {
  while (n > 0 && in[n - 1] == '=') n--;
  if (n % 4 == 1) return -1;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64val(in[i]);
    if (v < 0) return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  return (long)o;
}
