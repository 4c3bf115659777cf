/* test_options.c: the table of channel options (tri_options). */
#include <string.h>

#include "tri_error.h"
#include "tri_options.h"
#include "tri_test.h"

/* tri_channel_opts_init writes the defaults the core has always had. */
static void defaults(void) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  CHECK_EQ_INT(o.max_recv_bytes, 4 << 20);
  CHECK_EQ_INT(o.max_send_bytes, -1);
  CHECK_EQ_INT(o.stream_window, (16u << 20) - 1);
  CHECK_EQ_INT(o.conn_window, (1u << 30) - 1);
  CHECK_EQ_INT(o.max_frame_size, 64u << 10);
  CHECK(strcmp(o.user_agent, TRI_USER_AGENT) == 0);
  CHECK_EQ_INT(o.write_buffer_size, 32u << 10);
  CHECK_EQ_INT(o.write_buffer_delay_us, 200);
  CHECK_EQ_INT(o.wire, TRI_WIRE_GRPC);
  CHECK_EQ_INT(o.dialect, TRI_DIALECT_AUTO);
  CHECK_EQ_INT(o.compress, TRI_COMPRESS_NONE);
  CHECK(strcmp(o.triple_codec, "proto") == 0);
  CHECK(o.authority == NULL && o.service_group == NULL && o.tls_roots == NULL);
  CHECK_EQ_INT(o.tls, 0);
  CHECK_EQ_INT(o.write_stall_timeout_ms, 10000);
  CHECK_EQ_INT(o.keepalive_time_ms, 0);
  CHECK_EQ_INT(o.keepalive_timeout_ms, 20000);
  CHECK_EQ_INT(o.max_pings_without_data, 2);
  CHECK_EQ_INT(o.initial_reconnect_backoff_ms, 1000);
  CHECK_EQ_INT(o.max_reconnect_backoff_ms, 120000);
  CHECK_EQ_INT(o.min_connect_timeout_ms, 20000);
}

/* Every row names a distinct field inside tri_channel_opts, reads back its
 * default, and finds itself by name. */
static void rows(void) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  size_t n = tri_channel_option_count();
  CHECK(n >= 29);
  for (size_t i = 0; i < n; i++) {
    const tri_option *opt = &tri_channel_options[i];
    CHECK(opt->offset + opt->size <= sizeof(o));
    CHECK(tri_channel_option_find(opt->name, strlen(opt->name)) == opt);
    CHECK(strcmp(tri_option_type_name(opt->type), "?") != 0);
    for (size_t j = 0; j < i; j++)
      CHECK(tri_channel_options[j].offset != opt->offset);
    if (opt->type == TRI_OPT_STR)
      CHECK(tri_option_get_str(&o, opt) == opt->def_str);
    else if (opt->type != TRI_OPT_PEM)
      CHECK_EQ_INT(tri_option_get_int(&o, opt), opt->def);
  }
  CHECK(tri_channel_option_find("max_send", 8) != NULL);
  CHECK(tri_channel_option_find("max_sen", 7) == NULL);
  CHECK(tri_channel_option_find("nope", 4) == NULL);
}

static const tri_option *row(const char *name) {
  return tri_channel_option_find(name, strlen(name));
}

/* Each type's rule: refused values leave the field as it was. */
static void setters(void) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  const tri_option *frame = row("max_frame_size");
  CHECK_EQ_INT(tri_option_set_int(&o, frame, 16383), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_option_set_int(&o, frame, 16777216), TRI_ERR_INVALID);
  CHECK_EQ_INT(o.max_frame_size, 64u << 10);
  CHECK_EQ_INT(tri_option_set_int(&o, frame, 16384), 0);
  CHECK_EQ_INT(o.max_frame_size, 16384);
  const tri_option *send = row("max_send");
  CHECK_EQ_INT(tri_option_set_int(&o, send, 1000), 0);
  CHECK_EQ_INT(o.max_send_bytes, 1000);
  CHECK_EQ_INT(tri_option_set_int(&o, send, -7), 0);
  CHECK_EQ_INT(o.max_send_bytes, -1);
  const tri_option *ka = row("keepalive_time_ms");
  CHECK_EQ_INT(tri_option_set_int(&o, ka, -1), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_option_set_int(&o, ka, INT64_C(1) << 40), 0);
  CHECK_EQ_INT(o.keepalive_time_ms, 0x7fffffff); /* clamped */
  const tri_option *permit = row("keepalive_permit_without_calls");
  CHECK_EQ_INT(tri_option_set_int(&o, permit, 2), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_option_set_int(&o, permit, 1), 0);
  CHECK_EQ_INT(o.keepalive_permit_without_calls, 1);
  const tri_option *wire = row("wire");
  CHECK_EQ_INT(tri_option_choice(wire, "triple"), TRI_WIRE_TRIPLE);
  CHECK_EQ_INT(tri_option_choice(wire, "http"), -1);
  CHECK_EQ_INT(tri_option_set_int(&o, wire, 2), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_option_set_int(&o, wire, TRI_WIRE_TRIPLE), 0);
  CHECK_EQ_INT(o.wire, TRI_WIRE_TRIPLE);
  CHECK_EQ_INT(tri_option_choice(row("dialect"), "spec"), TRI_DIALECT_SPEC);
  CHECK_EQ_INT(tri_option_set_str(&o, row("codec"), "json", 4), 0);
  CHECK(strcmp(o.triple_codec, "json") == 0);
  CHECK_EQ_INT(tri_option_set_str(&o, row("root_certificates"), "PEM", 3), 0);
  CHECK(o.tls_roots && o.tls_roots_len == 3);
  CHECK_EQ_INT(tri_option_set_str(&o, frame, "x", 1), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_option_set_int(&o, row("codec"), 1), TRI_ERR_INVALID);
}

void test_options(void) {
  defaults();
  rows();
  setters();
}
