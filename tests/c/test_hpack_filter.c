/*
 * test_hpack_filter.c: which request metadata enters the HPACK dynamic
 * table (tri_hpack_filter.h), alone and on a detached connection's encoder.
 * No network, no I/O thread.
 */
#include <stdio.h>
#include <string.h>

#include "detached_call.h"
#include "session_script.h"
#include "tri_hpack_filter.h"
#include "tri_test.h"

#define U8(s) ((const uint8_t *)(s))

static void filter_alone(void) {
  tri_hpack_filter f;
  tri_hpack_filter_init(&f);
  /* New, then popular from the second use on. */
  CHECK(!tri_hpack_filter_popular(&f, U8("tenant"), 6, U8("acme"), 4));
  CHECK(tri_hpack_filter_popular(&f, U8("tenant"), 6, U8("acme"), 4));
  /* The name/value boundary counts. */
  CHECK(!tri_hpack_filter_popular(&f, U8("tenan"), 5, U8("tacme"), 5));
  /* A value that changes every time is never popular, and a constant pair
   * used alongside stays popular but for the rare slot collision. */
  int varying_popular = 0, constant_missed = 0;
  char id[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(id, sizeof id, "req-%d", i);
    varying_popular += tri_hpack_filter_popular(&f, U8("x-request-id"), 12,
                                                U8(id), (size_t)n);
    constant_missed += !tri_hpack_filter_popular(&f, U8("tenant"), 6,
                                                 U8("acme"), 4);
  }
  CHECK_EQ_INT(varying_popular, 0);
  CHECK(constant_missed <= 10);
}

/* 50 calls, each with its own x-request-id and the same tenant, through one
 * connection's HPACK encoder: the ids never enter the dynamic table (each
 * would take 52 bytes), the constant fields do. */
static void varying_metadata_not_indexed(void) {
  enum { N = 50 };
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  tri_channel *ch;
  tri_conn *conn;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  CHECK_EQ_INT(tri__conn_new_detached(&conn, ch), 0);
  script s;
  script_init(&s);
  script_settings(&s);
  tri__conn_feed(conn, s.p, s.len);
  script_free(&s);
  tri_call *calls[N];
  char id[32];
  for (int i = 0; i < N; i++) {
    CHECK_EQ_INT(tri_call_new(ch, &calls[i], "/s/M", 4, -1, 0), 0);
    int n = snprintf(id, sizeof id, "%08d", i * 7919);
    CHECK_EQ_INT(tri_call_add_metadata(calls[i], "x-request-id", 12, id, (size_t)n), 0);
    CHECK_EQ_INT(tri_call_add_metadata(calls[i], "tenant", 6, "acme", 4), 0);
    tri_call_set_request_borrowed(calls[i], U8("req"), 3);
    detached_submit(conn, calls[i]);
  }
  size_t table = nghttp2_session_get_hd_deflate_dynamic_table_size(conn->sess);
  CHECK(table > 0);    /* the constant fields were indexed */
  CHECK(table < 1024); /* 50 indexed ids alone would take 2600 bytes */
  detached_teardown(ch, conn, calls, N);
}

void test_hpack_filter(void) {
  filter_alone();
  varying_metadata_not_indexed();
}
