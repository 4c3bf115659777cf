/* test_load.c: the load generator's configuration checks and lifecycle,
 * without a network (no call is started, nothing connects).  Runs against
 * real servers are driven from Python (_triple.run_load). */
#include <math.h>
#include <string.h>

#include "tri_channel.h"
#include "tri_error.h"
#include "tri_load.h"
#include "tri_test.h"

static int try_new(const tri_load_config *c) {
  tri_load *l = NULL;
  int rv = tri_load_new(&l, c);
  if (rv == 0) tri_load_del(l);
  return rv;
}

/* One field changed from the defaults must be refused. */
#define REFUSED(field, value)                          \
  do {                                                 \
    tri_load_config x;                                 \
    tri_load_config_init(&x);                          \
    x.field = value;                                   \
    CHECK_EQ_INT(try_new(&x), TRI_ERR_INVALID);        \
  } while (0)

void test_load(void) {
  tri_load_config c;
  tri_load_config_init(&c);
  CHECK_EQ_INT(try_new(&c), 0);

  REFUSED(host, NULL);
  REFUSED(host, "");
  REFUSED(port, "");
  REFUSED(path, "no-slash");
  REFUSED(mode, 7);
  REFUSED(connections, 0);
  REFUSED(connections, 100000);
  REFUSED(concurrency, 0);
  REFUSED(duration_s, -1);
  REFUSED(duration_s, NAN);
  REFUSED(warmup_s, -0.5);
  REFUSED(rate, -1);
  REFUSED(timeout_s, NAN);
  REFUSED(payload_size, (size_t)1 << 40);
  REFUSED(hist_digits, 9);
  REFUSED(series_digits, 0);
  REFUSED(series_digits, 5);
  REFUSED(start_at_ns, -1);
  REFUSED(phase_ns, -1);
  REFUSED(channel.wire, 5);
  REFUSED(channel.dialect, 3);
  REFUSED(channel.dialect, -1);
  {
    /* Every mode runs on the Triple wire (BIDI's streams gRPC-framed). */
    tri_load_config x;
    tri_load_config_init(&x);
    x.channel.wire = TRI_WIRE_TRIPLE;
    x.channel.dialect = TRI_DIALECT_SPEC;
    CHECK_EQ_INT(try_new(&x), 0);
    x.mode = TRI_LOAD_UNARY_STREAM_PATH;
    CHECK_EQ_INT(try_new(&x), 0);
    x.mode = TRI_LOAD_BIDI;
    CHECK_EQ_INT(try_new(&x), 0);
  }
  {
    tri_load_config x;
    tri_load_config_init(&x);
    x.duration_s = 0; /* neither a duration nor a count */
    CHECK_EQ_INT(try_new(&x), TRI_ERR_INVALID);
    x.count = 10;
    CHECK_EQ_INT(try_new(&x), 0);
    x.mode = TRI_LOAD_BIDI;
    x.stream_messages = 0;
    CHECK_EQ_INT(try_new(&x), TRI_ERR_INVALID);
  }

  {
    /* The channel options are the table's defaults (tri_options.c). */
    tri_channel_opts d;
    tri_channel_opts_init(&d);
    CHECK(memcmp(&c.channel, &d, sizeof(d)) == 0);
    /* An option the load has no field of its own for reaches its channels:
     * tri_channel_new refuses a frame size under RFC 9113's minimum. */
    tri_load_config x;
    tri_load_config_init(&x);
    x.channel.max_frame_size = 100;
    CHECK_EQ_INT(try_new(&x), TRI_ERR_INVALID);
    /* TLS material is handed to every channel; bad roots say why. */
    char err[256] = "";
    tri_load_config_init(&x);
    x.channel.tls = 1;
    x.channel.tls_roots = "not a certificate";
    x.channel.tls_roots_len = strlen(x.channel.tls_roots);
    x.channel.error_out = err;
    x.channel.error_out_len = sizeof(err);
    CHECK(try_new(&x) != 0);
    CHECK(err[0] != 0);
    /* The load's copy keeps the numbers and forgets what was borrowed. */
    tri_load_config_init(&x);
    x.channel.keepalive_time_ms = 1234;
    x.channel.authority = "example.test";
    x.channel.user_agent = "agent";
    x.channel.error_out = err;
    x.channel.error_out_len = sizeof(err);
    tri_load *l;
    CHECK_EQ_INT(tri_load_new(&l, &x), 0);
    const tri_channel_opts *kept = &tri_load_config_of(l)->channel;
    CHECK_EQ_INT(kept->keepalive_time_ms, 1234);
    CHECK(kept->authority == NULL && kept->user_agent == NULL);
    CHECK(kept->tls_roots == NULL && kept->error_out == NULL);
    tri_load_del(l);
  }

  /* Every mode, open and closed loop, several connections: built and freed
   * without starting (nothing connects until the first call). */
  for (int mode = TRI_LOAD_UNARY; mode <= TRI_LOAD_BIDI; mode++) {
    for (int open = 0; open < 2; open++) {
      tri_load_config x;
      tri_load_config_init(&x);
      x.mode = mode;
      x.connections = 3;
      x.concurrency = 17;
      x.rate = open ? 1000 : 0;
      x.stream_messages = 4;
      x.payload_size = 0;
      tri_load *l;
      CHECK_EQ_INT(tri_load_new(&l, &x), 0);
      CHECK(tri_load_results(l) == NULL);
      tri_load_del(l);
    }
  }

  /* Waiting on a load that was never started ends at once, with empty
   * figures (a caller whose start failed can still read them). */
  tri_load *l;
  c.hist_digits = 2;
  CHECK_EQ_INT(tri_load_new(&l, &c), 0);
  CHECK_EQ_INT(tri_load_wait(l, 0), 0);
  const tri_load_result *r = tri_load_results(l);
  CHECK(r != NULL);
  if (r) {
    CHECK_EQ_INT(r->calls, 0);
    CHECK_EQ_INT(r->seconds, 0);
    CHECK(r->ncounters > 5);
    CHECK_EQ_INT(tri_hist_count(r->latency), 0);
    CHECK(r->latency == r->latency_corrected); /* closed loop: one figure */
    CHECK_EQ_INT(tri_hist_sig_digits(r->latency), 2);
  }
  const char *why;
  CHECK_EQ_INT(tri_load_status(l, &why), 0);
  CHECK(why && *why == 0);
  tri_load_del(l);
}
