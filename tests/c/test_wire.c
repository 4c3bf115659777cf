/* test_wire.c: timeout encodings, percent coding, status maps, base64,
 * metadata validation. */
#include "tri_test.h"
#include "tri_wire.h"

static void grpc_timeouts(void) {
  char b[TRI_TIMEOUT_MAX];
  int n;
  n = tri_grpc_timeout_encode(0, b);
  CHECK_STR(b, n, "0n");
  n = tri_grpc_timeout_encode(-5, b);
  CHECK_STR(b, n, "0n");
  n = tri_grpc_timeout_encode(1, b);
  CHECK_STR(b, n, "1n");
  n = tri_grpc_timeout_encode(99999999, b); /* 8 digits still fit in ns */
  CHECK_STR(b, n, "99999999n");
  n = tri_grpc_timeout_encode(100000000, b);
  CHECK_STR(b, n, "100000u");
  n = tri_grpc_timeout_encode(3000000000LL, b);
  CHECK_STR(b, n, "3000000u");
  n = tri_grpc_timeout_encode(2999999999LL, b); /* truncates */
  CHECK_STR(b, n, "2999999u");
  n = tri_grpc_timeout_encode(200000LL * 1000000000LL, b);
  CHECK_STR(b, n, "200000S");
  n = tri_grpc_timeout_encode(INT64_MAX, b);
  CHECK_STR(b, n, "2562047H");
  int64_t ns;
  CHECK_EQ_INT(tri_grpc_timeout_decode("3000000u", 8, &ns), 0);
  CHECK_EQ_INT(ns, 3000000000LL);
  CHECK_EQ_INT(tri_grpc_timeout_decode("1H", 2, &ns), 0);
  CHECK_EQ_INT(ns, 3600000000000LL);
  CHECK_EQ_INT(tri_grpc_timeout_decode("10x", 3, &ns), -1);
  CHECK_EQ_INT(tri_grpc_timeout_decode("m", 1, &ns), -1);
  CHECK_EQ_INT(tri_grpc_timeout_decode("123456789S", 10, &ns), -1);
  CHECK_EQ_INT(tri_grpc_timeout_decode("-1S", 3, &ns), -1);
}

/* Remaining times round up to three significant digits: one header value
 * (one HPACK table entry) for every call made with the same timeout. */
static void timeout_rounding(void) {
  CHECK_EQ_INT(tri_timeout_round_up(0), 0);
  CHECK_EQ_INT(tri_timeout_round_up(-7), -7);
  CHECK_EQ_INT(tri_timeout_round_up(999), 999);
  CHECK_EQ_INT(tri_timeout_round_up(1001), 1010);
  CHECK_EQ_INT(tri_timeout_round_up(9999987000LL), 10000000000LL);
  CHECK_EQ_INT(tri_timeout_round_up(9990000001LL), 10000000000LL);
  CHECK_EQ_INT(tri_timeout_round_up(9989999999LL), 9990000000LL);
  CHECK_EQ_INT(tri_timeout_round_up(1234000000LL), 1240000000LL);
  CHECK_EQ_INT(tri_timeout_round_up(INT64_MAX), INT64_MAX); /* no overflow */
  /* Never earlier, at most 1 % later. */
  for (int64_t v = 1; v < 4000000000LL; v = v * 3 + 7) {
    int64_t r = tri_timeout_round_up(v);
    CHECK(r >= v && (double)(r - v) <= (double)v * 0.01 + 1);
  }
  char a[TRI_TIMEOUT_MAX], b[TRI_TIMEOUT_MAX];
  int na = tri_grpc_timeout_encode(tri_timeout_round_up(9999987000LL), a);
  int nb = tri_grpc_timeout_encode(tri_timeout_round_up(9999123456LL), b);
  CHECK_STR(a, na, "10000000u");
  CHECK_STR(b, nb, "10000000u");
}

static void triple_timeouts(void) {
  char b[TRI_TIMEOUT_MAX];
  CHECK_EQ_INT(tri_triple_timeout_encode(999999, b), 0); /* < 1 ms: omitted */
  int n = tri_triple_timeout_encode(2999999999LL, b);
  CHECK_STR(b, n, "2999");
}

/* What the memo must give for `ns`: the encoding of the rounded value. */
static int memo_expected(int kind, int64_t ns, char out[TRI_TIMEOUT_MAX]) {
  if (kind == TRI_TIMEOUT_TRIPLE)
    return ns < 1000000
               ? 0
               : tri_triple_timeout_encode(tri_timeout_round_up(ns), out);
  return tri_grpc_timeout_encode(tri_timeout_round_up(ns), out);
}

/* The memo gives exactly the uncached value, whatever the sequence of
 * remaining times: a countdown (the usual case: one timeout, later calls),
 * jumps, both kinds in turn, powers of ten and their neighbours, and values
 * near the 1 ms edge of the Triple encoding. */
static void timeout_memo(void) {
  tri_timeout_memo m;
  memset(&m, 0, sizeof(m));
  char got[TRI_TIMEOUT_MAX], want[TRI_TIMEOUT_MAX];
  int wrong = 0, checked = 0;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 200000; i++) {
    int64_t ns;
    int kind = (i / 1000) % 2;
    if (i % 3 == 0) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ns = (int64_t)(x % 100000000000ull) >> (x % 37);
    } else if (i % 3 == 1) {
      int64_t p = 1;
      for (int k = 0; k < i % 19; k++) p *= 10;
      ns = p + (i % 7) - 3;
    } else {
      ns = 10000000000LL - (int64_t)i * 997; /* a 10 s timeout counting down */
    }
    if (i % 11 == 0) ns = 1000000 + (i % 5) - 2;
    int n = tri_timeout_memo_text(&m, kind, ns, got);
    int w = memo_expected(kind, ns, want);
    checked++;
    if (n != w || (n && memcmp(got, want, (size_t)n + 1))) wrong++;
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK(checked == 200000);
  /* Zero and below: "0n" on gRPC, nothing on Triple. */
  CHECK_EQ_INT(tri_timeout_memo_text(&m, TRI_TIMEOUT_GRPC, 0, got), 2);
  CHECK_STR(got, 2, "0n");
  CHECK_EQ_INT(tri_timeout_memo_text(&m, TRI_TIMEOUT_TRIPLE, -1, got), 0);
  CHECK_EQ_INT(tri_timeout_memo_text(&m, TRI_TIMEOUT_TRIPLE, 999999, got), 0);
  /* 9.9995 s left: rounded up to 10 s. */
  CHECK_EQ_INT(tri_timeout_memo_text(&m, TRI_TIMEOUT_TRIPLE, 9999500000LL, got),
               5);
  CHECK_STR(got, 5, "10000");
  CHECK_EQ_INT(tri_timeout_memo_text(&m, TRI_TIMEOUT_GRPC, 9999500000LL, got),
               9);
  CHECK_STR(got, 9, "10000000u");
}

static void percent(void) {
  char out[64];
  size_t n = tri_percent_decode("caf%C3%A9 %25 done", 18, out);
  CHECK_STR(out, n, "caf\xc3\xa9 % done");
  n = tri_percent_decode("bad %zz and %4", 14, out); /* lenient */
  CHECK_STR(out, n, "bad %zz and %4");
  n = tri_percent_decode("%", 1, out);
  CHECK_STR(out, n, "%");
  n = tri_percent_decode("lower %e2%82%ac", 15, out);
  CHECK_STR(out, n, "lower \xe2\x82\xac");
  char enc[64];
  n = tri_percent_encode("a%b\n\xc3\xa9", 6, enc);
  CHECK_STR(enc, n, "a%25b%0A%C3%A9");
  /* Round trip of every byte value. */
  char all[256], big[768], back[768];
  for (int i = 0; i < 256; i++) all[i] = (char)i;
  size_t en = tri_percent_encode(all, 256, big);
  size_t dn = tri_percent_decode(big, en, back);
  CHECK_MEM(back, dn, all, 256);
}

static void status_maps(void) {
  CHECK_EQ_INT(tri_parse_status("0", 1), 0);
  CHECK_EQ_INT(tri_parse_status("16", 2), 16);
  CHECK_EQ_INT(tri_parse_status("", 0), -1);
  CHECK_EQ_INT(tri_parse_status("1a", 2), -1);
  CHECK_EQ_INT(tri_parse_status("-1", 2), -1);
  CHECK_EQ_INT(tri_code_from_http(400), TRI_CODE_INTERNAL);
  CHECK_EQ_INT(tri_code_from_http(401), TRI_CODE_UNAUTHENTICATED);
  CHECK_EQ_INT(tri_code_from_http(403), TRI_CODE_PERMISSION_DENIED);
  CHECK_EQ_INT(tri_code_from_http(404), TRI_CODE_UNIMPLEMENTED);
  CHECK_EQ_INT(tri_code_from_http(429), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_code_from_http(502), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_code_from_http(503), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_code_from_http(504), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_code_from_http(500), TRI_CODE_UNKNOWN);
  CHECK_EQ_INT(tri_code_from_rst(0x0), TRI_CODE_INTERNAL);
  CHECK_EQ_INT(tri_code_from_rst(0x1), TRI_CODE_INTERNAL);
  CHECK_EQ_INT(tri_code_from_rst(0x7), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_code_from_rst(0x8), TRI_CODE_CANCELLED);
  CHECK_EQ_INT(tri_code_from_rst(0xb), TRI_CODE_RESOURCE_EXHAUSTED);
  CHECK_EQ_INT(tri_code_from_rst(0xc), TRI_CODE_PERMISSION_DENIED);
  CHECK(strcmp(tri_code_name(4), "DEADLINE_EXCEEDED") == 0);
  CHECK(strcmp(tri_code_name(99), "UNKNOWN") == 0);
}

static void metadata_rules(void) {
  CHECK(tri_md_key_valid("x-user.id_1", 11));
  CHECK(!tri_md_key_valid("Upper", 5));
  CHECK(!tri_md_key_valid("", 0));
  CHECK(!tri_md_key_valid("sp ace", 6));
  CHECK(tri_md_key_is_bin("k-bin", 5));
  CHECK(!tri_md_key_is_bin("-bin", 4));
  CHECK(tri_md_value_valid("printable ~", 11));
  CHECK(!tri_md_value_valid("tab\t", 4));
  CHECK(tri_md_key_reserved("grpc-timeout", 12));
  CHECK(tri_md_key_reserved("te", 2));
  CHECK(!tri_md_key_reserved("x-te", 4));
}

static void base64(void) {
  char out[16];
  uint8_t back[16];
  size_t n = tri_base64_encode((const uint8_t *)"\x00\x01", 2, out);
  CHECK_STR(out, n, "AAE"); /* unpadded */
  CHECK_EQ_INT(tri_base64_len(2), 3);
  CHECK_EQ_INT(tri_base64_decode("AAE", 3, back), 2);
  CHECK_EQ_INT(tri_base64_decode("AAE=", 4, back), 2); /* padded accepted */
  CHECK_MEM(back, 2, "\x00\x01", 2);
  n = tri_base64_encode((const uint8_t *)"foobar", 6, out);
  CHECK_STR(out, n, "Zm9vYmFy");
  CHECK_EQ_INT(tri_base64_decode("Zm9v!", 5, back), -1);
  CHECK_EQ_INT(tri_base64_decode("Z", 1, back), -1);
  for (size_t len = 0; len < 10; len++) {
    uint8_t src[10];
    for (size_t i = 0; i < len; i++) src[i] = (uint8_t)(0xF0 + i);
    n = tri_base64_encode(src, len, out);
    CHECK_EQ_INT(n, tri_base64_len(len));
    CHECK_EQ_INT(tri_base64_decode(out, n, back), (long)len);
    CHECK_MEM(back, len, src, len);
  }
}

void test_wire(void) {
  grpc_timeouts();
  timeout_rounding();
  triple_timeouts();
  timeout_memo();
  percent();
  status_maps();
  metadata_rules();
  base64();
}
