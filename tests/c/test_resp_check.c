/*
 * test_resp_check.c: the HTTP/2 message rules of one response
 * (tri_resp_check), field by field, block by block and DATA by DATA.  The
 * same rules end to end, through a connection: test_h2_rules.c.
 */
#include <stdlib.h>
#include <string.h>

#include "tri_resp_check.h"
#include "tri_test.h"

static int field(tri_resp_check *s, const char *n, const char *v, int trailer) {
  return tri_resp_check_field(s, (const uint8_t *)n, strlen(n),
                              (const uint8_t *)v, strlen(v), trailer);
}

static int field_n(tri_resp_check *s, const char *n, const void *v, size_t vl) {
  return tri_resp_check_field(s, (const uint8_t *)n, strlen(n), v, vl, 0);
}

/* A fresh check that has seen ":status: 200". */
static tri_resp_check after_status(void) {
  tri_resp_check s;
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, ":status", "200", 0), TRI_RESP_FIELD_OK);
  return s;
}

static void names(void) {
  static const char *good[] = {"x",
                               "content-type",
                               "grpc-status",
                               "grpc-message",
                               "x-!#$%&'*+-.^_`|~09az",
                               "grpc-accept-encoding",
                               "x-custom-bin",
                               "date",
                               NULL};
  static const char *bad[] = {"X",      "Content-Type", "x y", "x\ty", "x:y",
                              "x\"y",   "x(y",          "x,y", "x/y",  "x;y",
                              "x=y",    "x@y",          "x[y", "x{y",  "x\x7fy",
                              "x\x80y", "x\x01y",       NULL};
  for (int i = 0; good[i]; i++) {
    tri_resp_check s = after_status();
    CHECK_EQ_INT(field(&s, good[i], "v", 0), TRI_RESP_FIELD_OK);
  }
  for (int i = 0; bad[i]; i++) {
    tri_resp_check s = after_status();
    CHECK_EQ_INT(field(&s, bad[i], "v", 0), TRI_RESP_FIELD_BAD);
  }
  tri_resp_check s = after_status();
  CHECK_EQ_INT(tri_resp_check_field(&s, (const uint8_t *)"", 0,
                                    (const uint8_t *)"v", 1, 0),
               TRI_RESP_FIELD_BAD);
}

/* Every byte value at every position of values up to 24 bytes long (the
 * word-at-a-time scan and its byte-by-byte rest): valid exactly when the
 * byte is HTAB, SP..~ or from 0x80, and neither SP nor HTAB at an end. */
static void values(void) {
  uint8_t v[24];
  int wrong = 0;
  for (size_t len = 1; len <= sizeof(v); len++) {
    for (size_t pos = 0; pos < len; pos++) {
      for (int b = 0; b < 256; b++) {
        memset(v, 'a', len);
        v[pos] = (uint8_t)b;
        int ok = b == '\t' || (b >= 0x20 && b <= 0x7e) || b >= 0x80;
        if ((pos == 0 || pos == len - 1) && (b == ' ' || b == '\t')) ok = 0;
        tri_resp_check s = after_status();
        int got = field_n(&s, "x-v", v, len);
        if (got != (ok ? TRI_RESP_FIELD_OK : TRI_RESP_FIELD_BAD)) wrong++;
      }
    }
  }
  CHECK_EQ_INT(wrong, 0);
  tri_resp_check s = after_status();
  CHECK_EQ_INT(field(&s, "x-empty", "", 0), TRI_RESP_FIELD_OK);
  /* Known names get the value check too. */
  CHECK_EQ_INT(field(&s, "grpc-message", "a\nb", 0), TRI_RESP_FIELD_BAD);
  s = after_status();
  CHECK_EQ_INT(field(&s, "content-type", "application/grpc ", 0),
               TRI_RESP_FIELD_BAD);
}

static void status(void) {
  static const char *bad[] = {"",    "20",  "2000", "2x0", " 20",
                              "20 ", "101", "-20",  "+20", NULL};
  for (int i = 0; bad[i]; i++) {
    tri_resp_check s;
    memset(&s, 0, sizeof(s));
    CHECK_EQ_INT(field(&s, ":status", bad[i], 0), TRI_RESP_FIELD_BAD);
  }
  tri_resp_check s;
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, ":status", "503", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(s.status, 503);
  CHECK_EQ_INT(field(&s, ":status", "503", 0), TRI_RESP_FIELD_BAD); /* twice */
  /* Other pseudo-headers, request ones included, and any after a regular
   * field or in trailers. */
  static const char *other[] = {":path",      ":method",   ":scheme",
                                ":authority", ":protocol", ":foo",
                                ":",          ":Status",   NULL};
  for (int i = 0; other[i]; i++) {
    memset(&s, 0, sizeof(s));
    CHECK_EQ_INT(field(&s, other[i], "x", 0), TRI_RESP_FIELD_BAD);
  }
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, "content-type", "application/grpc", 0),
               TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, ":status", "200", 0), TRI_RESP_FIELD_BAD);
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, ":status", "200", 1), TRI_RESP_FIELD_BAD);
}

static void connection_specific(void) {
  static const char *bad[] = {"connection",       "keep-alive",
                              "proxy-connection", "transfer-encoding",
                              "upgrade",          NULL};
  for (int trailer = 0; trailer < 2; trailer++) {
    for (int i = 0; bad[i]; i++) {
      tri_resp_check s = after_status();
      CHECK_EQ_INT(field(&s, bad[i], "x", trailer), TRI_RESP_FIELD_BAD);
    }
  }
  tri_resp_check s = after_status();
  CHECK_EQ_INT(field(&s, "te", "trailers", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, "te", "TRAILERS", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, "te", "gzip", 0), TRI_RESP_FIELD_BAD);
  s = after_status();
  CHECK_EQ_INT(field(&s, "te", "trailers, gzip", 0), TRI_RESP_FIELD_BAD);
}

static void content_length(void) {
  tri_resp_check s = after_status();
  CHECK_EQ_INT(field(&s, "content-length", "10", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, "content-length", "10", 0),
               TRI_RESP_FIELD_BAD); /* twice */
  s = after_status();
  CHECK_EQ_INT(field(&s, "content-length", "10", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 0), 0);
  CHECK_EQ_INT(tri_resp_check_data(&s, 4), 0);
  CHECK_EQ_INT(tri_resp_check_data(&s, 6), 0);
  CHECK_EQ_INT(tri_resp_check_data_end(&s), 0);
  CHECK_EQ_INT(tri_resp_check_data(&s, 1), -1); /* over the length */
  /* Short at the end: by DATA, or by trailers. */
  s = after_status();
  field(&s, "content-length", "10", 0);
  tri_resp_check_block(&s, 1, 0);
  tri_resp_check_data(&s, 9);
  CHECK_EQ_INT(tri_resp_check_data_end(&s), -1);
  CHECK_EQ_INT(field(&s, "grpc-status", "0", 1), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 0, 1), -1);
  /* Again in trailers: twice. */
  CHECK_EQ_INT(field(&s, "content-length", "10", 1), TRI_RESP_FIELD_BAD);
  static const char *bad[] = {
      "", "1O", "-1", "+1", "1 0", "0x10", "9223372036854775808", NULL};
  for (int i = 0; bad[i]; i++) {
    s = after_status();
    CHECK_EQ_INT(field(&s, "content-length", bad[i], 0), TRI_RESP_FIELD_BAD);
  }
  s = after_status();
  CHECK_EQ_INT(field(&s, "content-length", "9223372036854775807", 0),
               TRI_RESP_FIELD_OK);
  s = after_status();
  CHECK_EQ_INT(field(&s, "content-length", "00000000000000000000007", 0),
               TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(s.content_length, 7);
  /* 204: "0" is taken and dropped, anything else is a fault; 204 and 304
   * have no body whatever they declare. */
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "204", 0);
  CHECK_EQ_INT(field(&s, "content-length", "0", 0), TRI_RESP_FIELD_DROP);
  CHECK_EQ_INT(field(&s, "content-length", "0", 0), TRI_RESP_FIELD_BAD);
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "204", 0);
  CHECK_EQ_INT(field(&s, "content-length", "5", 0), TRI_RESP_FIELD_BAD);
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "304", 0);
  CHECK_EQ_INT(field(&s, "content-length", "5", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 0), 0);
  CHECK_EQ_INT(tri_resp_check_data(&s, 1), -1);
}

static void blocks(void) {
  /* No :status in the response. */
  tri_resp_check s;
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, "content-type", "application/grpc", 0),
               TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 0), -1);
  /* Trailers must end the stream. */
  s = after_status();
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 0), 0);
  CHECK(tri_resp_check_trailer(&s));
  CHECK_EQ_INT(tri_resp_check_block(&s, 0, 0), -1);
  CHECK_EQ_INT(tri_resp_check_block(&s, 0, 1), 0);
  /* A 1xx: the next block is the response, with a :status of its own. */
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(field(&s, ":status", "100", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, "content-length", "0", 0), TRI_RESP_FIELD_BAD);
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "103", 0);
  CHECK_EQ_INT(field(&s, "link", "</x>", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 0), 0);
  CHECK(!tri_resp_check_trailer(&s));
  CHECK_EQ_INT(tri_resp_check_data(&s, 1), -1); /* no body before the response */
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "100", 0);
  tri_resp_check_block(&s, 1, 0);
  CHECK_EQ_INT(tri_resp_check_data_end(&s), -1);
  CHECK_EQ_INT(field(&s, ":status", "200", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(field(&s, "content-length", "3", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 0, 0), 0);
  CHECK(tri_resp_check_trailer(&s));
  CHECK_EQ_INT(tri_resp_check_data(&s, 3), 0);
  CHECK_EQ_INT(tri_resp_check_data_end(&s), 0);
  /* The final response after a 1xx needs its :status. */
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "100", 0);
  tri_resp_check_block(&s, 1, 0);
  CHECK_EQ_INT(field(&s, "content-type", "application/grpc", 0),
               TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 0, 0), -1);
  /* A 1xx with END_STREAM. */
  memset(&s, 0, sizeof(s));
  field(&s, ":status", "100", 0);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 1), -1);
  /* Trailers-only: one block with END_STREAM. */
  s = after_status();
  CHECK_EQ_INT(field(&s, "grpc-status", "5", 0), TRI_RESP_FIELD_OK);
  CHECK_EQ_INT(tri_resp_check_block(&s, 1, 1), 0);
}

void test_resp_check(void) {
  names();
  values();
  status();
  connection_specific();
  content_length();
  blocks();
}
