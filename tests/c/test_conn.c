/*
 * test_conn.c: the connection's watchdogs (write stall, connect timeout,
 * keepalive) and the channel's reaction to a failed attempt (backoff), on
 * detached connections whose fake socket can be made to block
 * (tri__conn_set_write_budget).  No network, no I/O thread.
 */
#include <time.h>

#include "detached_call.h"
#include "session_script.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_error.h"
#include "tri_int.h"
#include "tri_test.h"

#define MS 1000000LL

typedef struct {
  tri_channel *ch;
  tri_conn *conn;
  tri_call *calls[8];
  int n;
} harness;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void setup_opts(harness *h, const tri_channel_opts *o) {
  memset(h, 0, sizeof(*h));
  tri_channel_new(&h->ch, o);
  tri__conn_new_detached(&h->conn, h->ch);
}

static void default_opts(tri_channel_opts *o) {
  tri_channel_opts_init(o);
  o->host = "127.0.0.1";
  o->port = "1";
}

/* The server's SETTINGS: the attempt has succeeded. */
static void feed_settings(harness *h) {
  script s;
  script_init(&s);
  script_settings(&s);
  tri__conn_feed(h->conn, s.p, s.len);
  script_free(&s);
}

static tri_call *start(harness *h, int64_t timeout_ns) {
  tri_call *c;
  tri_call_new(h->ch, &c, "/s/M", 4, timeout_ns, 0);
  tri_call_set_request_borrowed(c, (const uint8_t *)"req", 3);
  detached_submit(h->conn, c);
  h->calls[h->n++] = c;
  return c;
}

static void teardown(harness *h) {
  detached_teardown(h->ch, h->conn, h->calls, h->n);
}

static int message_is(tri_call *c, const char *want) {
  const char *m;
  size_t n;
  tri_call_message(c, &m, &n);
  return n == strlen(want) && memcmp(m, want, n) == 0;
}

static int message_starts(tri_call *c, const char *want) {
  const char *m;
  size_t n;
  tri_call_message(c, &m, &n);
  return n >= strlen(want) && memcmp(m, want, strlen(want)) == 0;
}

/* A peer that takes nothing: once the stall timeout has passed without a
 * byte written, the connection dies and every call ends UNAVAILABLE. */
static void write_stall_kills(void) {
  tri_channel_opts o;
  default_opts(&o);
  o.write_stall_timeout_ms = 30;
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri__conn_set_write_budget(h.conn, 0);
  tri_call *a = start(&h, -1), *b = start(&h, 5000 * MS);
  CHECK(h.conn->write_since != 0);
  tri__conn_tick(h.conn);
  CHECK(!tri_call_done(a) && !tri_call_done(b));
  sleep_ms(40);
  tri__conn_tick(h.conn);
  CHECK(tri_call_done(a) && tri_call_done(b));
  CHECK_EQ_INT(tri_call_code(a), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_call_code(b), TRI_CODE_UNAVAILABLE);
  CHECK(message_is(a, "connection stalled: no write progress for 30 ms"));
  CHECK(tri__conn_unusable(h.conn));
  CHECK_EQ_INT(tri_channel_stats(h.ch)->write_stalls, 1);
  teardown(&h);
}

/* A slow peer is not a stalled one: every byte taken restarts the clock. */
static void slow_writes_are_progress(void) {
  tri_channel_opts o;
  default_opts(&o);
  o.write_stall_timeout_ms = 30;
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri__conn_set_write_budget(h.conn, 0);
  tri_call *a = start(&h, -1);
  int64_t last = tri__now(), longest = 0;
  for (int i = 0; i < 6; i++) { /* 6 x 15 ms, one byte each time */
    sleep_ms(15);
    tri__conn_set_write_budget(h.conn, 1);
    tri__conn_tick(h.conn);
    int64_t now = tri__now();
    if (now - last > longest) longest = now - last;
    last = now;
  }
  if (longest < 30 * MS) { /* a loaded machine may oversleep; then it stalled */
    CHECK(!tri_call_done(a));
    CHECK(!tri__conn_unusable(h.conn));
  }
  tri__conn_set_write_budget(h.conn, -1); /* the peer reads again */
  tri__conn_tick(h.conn);
  if (!tri__conn_unusable(h.conn)) {
    CHECK_EQ_INT(h.conn->write_since, 0);
    sleep_ms(40);
    tri__conn_tick(h.conn);
    CHECK(!tri__conn_unusable(h.conn)); /* nothing waits: no stall */
  }
  teardown(&h);
}

/* While the output is blocked, new calls wait outside the session: one that
 * expires or is cancelled meanwhile never gets a stream (nor an RST_STREAM);
 * the others are submitted, in order, once the output drains. */
static void calls_held_while_blocked(void) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri__conn_set_write_budget(h.conn, 0);
  tri_call *a = start(&h, -1); /* submitted; its frames block */
  CHECK(a->in_session && !a->held);
  tri_call *b = start(&h, 20 * MS), *c = start(&h, -1), *d = start(&h, -1);
  CHECK(b->held && c->held && d->held);
  CHECK(!b->in_session && !c->in_session);
  int32_t next_sid = nghttp2_session_get_next_stream_id(h.conn->sess);
  tri_call_cancel(d, TRI_CODE_CANCELLED, "Cancelled");
  tri__conn_run_ops(h.conn);
  CHECK(tri_call_done(d) && !d->held);
  CHECK_EQ_INT(tri_call_code(d), TRI_CODE_CANCELLED);
  sleep_ms(30);
  tri__conn_tick(h.conn);
  CHECK(tri_call_done(b) && !b->held);
  CHECK_EQ_INT(tri_call_code(b), TRI_CODE_DEADLINE_EXCEEDED);
  CHECK(c->held && !tri_call_done(c));
  CHECK_EQ_INT(nghttp2_session_get_next_stream_id(h.conn->sess), next_sid);
  tri__conn_set_write_budget(h.conn, -1); /* the peer reads again */
  tri__conn_tick(h.conn);
  CHECK(!c->held && c->in_session);
  CHECK_EQ_INT(c->stream_id, next_sid); /* b and d never took a stream id */
  CHECK(!h.conn->held);
  teardown(&h);
}

/* Calls started before the server's SETTINGS wait outside the session (as
 * grpc starts no stream before them): one whose metadata is over the
 * SETTINGS_MAX_HEADER_LIST_SIZE they bring is refused without being sent
 * (sent, a field nghttp2 cannot decode would have been a connection error
 * at the server), the others go out once they have arrived. */
static void calls_held_until_settings(void) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  tri_call *a = start(&h, -1);
  static char big[100000];
  memset(big, 'b', sizeof(big));
  tri_call *b;
  tri_call_new(h.ch, &b, "/s/M", 4, -1, 0);
  tri_call_add_metadata(b, "x-big", 5, big, sizeof(big));
  tri_call_set_request_borrowed(b, (const uint8_t *)"req", 3);
  detached_submit(h.conn, b);
  h.calls[h.n++] = b;
  tri_call *c = start(&h, -1);
  CHECK(a->held && b->held && c->held);
  CHECK(!a->in_session && !tri_call_done(b));
  script s;
  script_init(&s);
  const uint8_t limit[6] = {0, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 0, 1, 0,
                            0};
  script_frame(&s, NGHTTP2_SETTINGS, 0, 0, limit, sizeof(limit));
  CHECK_EQ_INT(tri__conn_feed(h.conn, s.p, s.len), 0);
  script_free(&s);
  CHECK(!h.conn->held);
  CHECK(a->in_session && c->in_session);
  CHECK_EQ_INT(a->stream_id, 1);
  CHECK_EQ_INT(c->stream_id, 3); /* b never took a stream id */
  CHECK(tri_call_done(b) && !b->in_session);
  CHECK_EQ_INT(tri_call_code(b), TRI_CODE_RESOURCE_EXHAUSTED);
  CHECK(message_starts(b, "request metadata of 100"));
  static const char want[] =
      "server's (SETTINGS_MAX_HEADER_LIST_SIZE) limit of 65536";
  const char *m;
  size_t n;
  tri_call_message(b, &m, &n);
  CHECK(memmem(m, n, want, sizeof(want) - 1) != NULL);
  CHECK(!h.conn->dead);
  teardown(&h);
}

/* Timeout 0 turns the watchdog off. */
static void write_stall_off(void) {
  tri_channel_opts o;
  default_opts(&o);
  o.write_stall_timeout_ms = 0;
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri__conn_set_write_budget(h.conn, 0);
  tri_call *a = start(&h, -1);
  sleep_ms(20);
  tri__conn_tick(h.conn);
  CHECK(!tri_call_done(a));
  CHECK(!tri__conn_unusable(h.conn));
  teardown(&h);
}

/* No SETTINGS from the server by the connect deadline: the attempt fails. */
static void connect_timeout(void) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  h.conn->connect_deadline = tri__now() + 50 * MS;
  tri_call *a = start(&h, -1);
  tri__conn_tick(h.conn);
  CHECK(!tri_call_done(a));
  sleep_ms(60);
  tri__conn_tick(h.conn);
  CHECK_EQ_INT(tri_call_code(a), TRI_CODE_UNAVAILABLE);
  CHECK(message_starts(a, "connection attempt to 127.0.0.1:1 timed out after "));
  CHECK(!atomic_load(&h.conn->established));
  teardown(&h);
  /* SETTINGS in time: the deadline is gone. */
  setup_opts(&h, &o);
  h.conn->connect_deadline = tri__now() + 20 * MS;
  feed_settings(&h);
  CHECK(atomic_load(&h.conn->established));
  CHECK_EQ_INT(h.conn->connect_deadline, 0);
  sleep_ms(25);
  tri__conn_tick(h.conn);
  CHECK(!tri__conn_unusable(h.conn));
  teardown(&h);
}

/* Keepalive: a PING after keepalive_time without reading; an ACK keeps the
 * connection, silence kills it after keepalive_timeout. */
static void keepalive(void) {
  tri_channel_opts o;
  default_opts(&o);
  o.keepalive_time_ms = 20;
  o.keepalive_timeout_ms = 20;
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri_call *a = start(&h, -1);
  tri__conn_tick(h.conn);
  CHECK_EQ_INT(h.conn->ping_sent, 0);
  sleep_ms(25);
  tri__conn_tick(h.conn);
  CHECK(h.conn->ping_sent != 0);
  script s;
  script_init(&s);
  script_frame(&s, NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, "\0\0\0\0\0\0\0\0", 8);
  tri__conn_feed(h.conn, s.p, s.len);
  script_free(&s);
  CHECK_EQ_INT(h.conn->ping_sent, 0);
  sleep_ms(25);
  tri__conn_tick(h.conn); /* second PING (max_pings_without_data is 2) */
  CHECK(h.conn->ping_sent != 0);
  CHECK(!tri_call_done(a));
  sleep_ms(25);
  tri__conn_tick(h.conn);
  CHECK(tri_call_done(a));
  CHECK_EQ_INT(tri_call_code(a), TRI_CODE_UNAVAILABLE);
  CHECK(message_is(a, "keepalive ping not acknowledged within 20 ms"));
  CHECK_EQ_INT(tri_channel_stats(h.ch)->keepalive_timeouts, 1);
  teardown(&h);
  /* No call open (and no permit_without_calls): no PING. */
  setup_opts(&h, &o);
  feed_settings(&h);
  sleep_ms(25);
  tri__conn_tick(h.conn);
  CHECK_EQ_INT(h.conn->ping_sent, 0);
  teardown(&h);
}

/* The channel: a connection that failed before the server's SETTINGS puts
 * the channel in backoff (calls are refused at once, with the cause); one
 * that worked and then broke is replaced at once.  The detached connection is
 * installed as the channel's current one, which then owns it (retires and
 * frees it). */
static void channel_backoff(void) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  tri_channel *ch = h.ch;
  ch->conn = h.conn;
  int64_t started = h.conn->attempt_start; /* the channel frees it once retired */
  tri__conn_kill(h.conn, TRI_CODE_UNAVAILABLE, "failed to connect to 127.0.0.1:1: refused");
  tri_conn *got;
  char why[400];
  int rv = tri__channel_conn(ch, NULL, &got, why, sizeof(why));
  CHECK_EQ_INT(rv, TRI_ERR_BACKOFF);
  CHECK(got == NULL);
  CHECK(strstr(why, "connection backoff: 1 connection attempt failed, the next one in ") == why);
  CHECK(strstr(why, "last error: failed to connect to 127.0.0.1:1: refused") != NULL);
  CHECK(ch->next_attempt >= started + 800 * MS);
  CHECK(ch->next_attempt <= started + 1200 * MS);
  CHECK_EQ_INT(tri_channel_stats(ch)->connect_failures, 1);
  rv = tri__channel_conn(ch, NULL, &got, why, sizeof(why)); /* counted once */
  CHECK_EQ_INT(rv, TRI_ERR_BACKOFF);
  CHECK_EQ_INT(ch->backoff.failures, 1);
  CHECK_EQ_INT(tri_channel_stats(ch)->connects, 0); /* no attempt was made */
  /* A call started now fails at once, with that message; it is notified
   * unless it asked not to be for an ending inside tri_call_start. */
  tri_call *c;
  tri_call_new(ch, &c, "/s/M", 4, -1, 0);
  tri_call_set_notify(c, &c);
  CHECK_EQ_INT(tri_call_start(c), 1);
  CHECK(tri_call_done(c));
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_UNAVAILABLE);
  CHECK(message_starts(c, "connection backoff: 1 connection attempt failed"));
  void *tokens[4];
  CHECK_EQ_INT(tri_channel_poll_completions(ch, tokens, 4, 0), 1);
  CHECK(tokens[0] == &c);
  tri_call_release(c);
  tri_call_new(ch, &c, "/s/M", 4, -1, 0);
  tri_call_set_notify_events(c, &c, TRI_EV_DONE | TRI_EV_QUIET_START);
  CHECK_EQ_INT(tri_call_start(c), 1);
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_UNAVAILABLE);
  CHECK_EQ_INT(tri_channel_poll_completions(ch, tokens, 4, 0), 0);
  tri_call_release(c);
  tri_channel_del(ch);

  /* Worked, then broke: the next connection opens at once (a live one, to a
   * closed loopback port) and the backoff restarts. */
  setup_opts(&h, &o);
  ch = h.ch;
  ch->backoff.failures = 3;
  ch->backoff.current_ns = 4000 * MS;
  ch->conn = h.conn;
  feed_settings(&h);
  tri__conn_kill(h.conn, TRI_CODE_UNAVAILABLE, "connection closed by peer");
  rv = tri__channel_conn(ch, NULL, &got, why, sizeof(why));
  CHECK_EQ_INT(rv, 0);
  CHECK(got != NULL);
  CHECK_EQ_INT(ch->backoff.failures, 0);
  CHECK_EQ_INT(ch->next_attempt, 0);
  CHECK_EQ_INT(tri_channel_stats(ch)->connect_failures, 0);
  CHECK_EQ_INT(tri_channel_stats(ch)->connects, 1);
  if (got) tri__conn_unref(got);
  tri_channel_del(ch); /* joins the live connection's thread */
}

/* Wire and Triple dialect must be known values. */
static void unknown_wire_or_dialect_refused(void) {
  tri_channel_opts o;
  default_opts(&o);
  tri_channel *ch = NULL;
  o.dialect = TRI_DIALECT_SPEC + 1;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), TRI_ERR_INVALID);
  o.dialect = -1;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), TRI_ERR_INVALID);
  o.dialect = TRI_DIALECT_GO;
  o.wire = 2;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), TRI_ERR_INVALID);
  o.wire = TRI_WIRE_TRIPLE;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  tri_channel_del(ch);
}

/* A finished connection's nghttp2 blocks go back to the channel, and the
 * next connection's session is built from them, not from new allocations. */
static void arena_reused_across_connections(void) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  memset(&h, 0, sizeof(h));
  tri_channel_new(&h.ch, &o);
  tri_stats *st = tri_channel_stats(h.ch);
  uint64_t a0 = st->allocations;
  tri__conn_new_detached(&h.conn, h.ch);
  feed_settings(&h);
  for (int i = 0; i < 4; i++) start(&h, -1);
  uint64_t first = st->allocations - a0;
  tri__conn_kill(h.conn, TRI_CODE_CANCELLED, "done");
  for (int i = 0; i < h.n; i++) tri_call_release(h.calls[i]);
  h.n = 0;
  tri__conn_unref(h.conn);
  tri__conn_free(h.conn);
  size_t kept = h.ch->spare[0].cached + h.ch->spare[1].cached;
  CHECK(kept > 0);
  /* Two connections' worth are kept, the larger: a second arena is kept, a
   * third one smaller than both is freed. */
  tri_arena extra;
  tri_arena_init(&extra, st);
  tri_arena_free(&extra, tri_arena_alloc(&extra, 100));
  tri__channel_arena_put(h.ch, &extra);
  CHECK_EQ_INT(extra.cached, 0);
  CHECK_EQ_INT(h.ch->spare[0].cached + h.ch->spare[1].cached, kept + 128);
  tri_arena_free(&extra, tri_arena_alloc(&extra, 10));
  tri__channel_arena_put(h.ch, &extra);
  CHECK_EQ_INT(extra.cached, 0);
  CHECK_EQ_INT(h.ch->spare[0].cached + h.ch->spare[1].cached, kept + 128);
  uint64_t a1 = st->allocations;
  tri__conn_new_detached(&h.conn, h.ch);
  feed_settings(&h);
  for (int i = 0; i < 4; i++) start(&h, -1);
  uint64_t second = st->allocations - a1;
  /* The first connection allocated its session blocks; the second only what
   * is not nghttp2's (the connection struct, its output queue). */
  CHECK(second + 10 < first);
  teardown(&h);
}

/* The deadline heap stays a heap while calls with scattered deadlines come
 * and go: every parent is due no later than its children, every call knows
 * its slot, and the root is the earliest deadline left. */
static int heap_ok(tri_conn *conn) {
  const tri_deadlines *d = &conn->deadlines;
  for (size_t i = 0; i < d->n; i++) {
    tri_call *c = d->owner[d->heap[i].slot];
    if (!c || c->deadline_slot != (int)d->heap[i].slot) return 0;
    if (d->pos[d->heap[i].slot] != i) return 0;
    if (d->heap[i].at != c->deadline) return 0;
    if (i && d->heap[(i - 1) / 2].at > d->heap[i].at) return 0;
  }
  return 1;
}

static void deadline_heap_order(void) {
  enum { N = 300 };
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri_call *calls[N];
  unsigned seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    int64_t timeout = (int64_t)(10 + (seed >> 8) % 1000) * 1000 * MS; /* 10..1009 s */
    h.n = 0;
    calls[i] = start(&h, timeout);
  }
  CHECK_EQ_INT(tri_deadlines_count(&h.conn->deadlines), N);
  CHECK(heap_ok(h.conn));
  int live = N, ok = 1;
  for (int i = 0; i < N; i++) { /* end two in three, scattered */
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 8) % 3 == 0) continue;
    tri_call_cancel(calls[i], TRI_CODE_CANCELLED, "done early");
    tri__conn_run_ops(h.conn);
    live--;
    ok &= heap_ok(h.conn) && (int)tri_deadlines_count(&h.conn->deadlines) == live;
  }
  CHECK(ok);
  int64_t earliest = INT64_MAX;
  for (int i = 0; i < N; i++)
    if (!tri_call_done(calls[i]) && calls[i]->deadline < earliest)
      earliest = calls[i]->deadline;
  CHECK(live > 0 && tri_deadlines_first_at(&h.conn->deadlines) == earliest);
  detached_teardown(h.ch, h.conn, calls, N);
}

/* A window of responses that arrives in one read is not parsed to the end
 * before the loop's work runs: once a quarter of the calls in flight have
 * completed, the I/O hook runs (and queued ops and the output go out), and
 * the rest of the bytes are parsed after.  A single completed call waits for
 * the end of the read as before. */
typedef struct {
  tri_call **calls;
  int n;
  int runs;       /* hook invocations */
  int done_first; /* calls done at the first invocation */
} window_probe;

static int window_hook(void *arg) {
  window_probe *p = arg;
  int done = 0;
  for (int i = 0; i < p->n; i++) done += tri_call_done(p->calls[i]);
  if (!p->runs++) p->done_first = done;
  return -1;
}

static void window_of_responses(int n, window_probe *probe) {
  tri_channel_opts o;
  default_opts(&o);
  harness h;
  setup_opts(&h, &o);
  feed_settings(&h);
  tri_call *calls[64];
  for (int i = 0; i < n; i++) {
    tri_call_new(h.ch, &calls[i], "/s/M", 4, -1, 0);
    tri_call_set_request_borrowed(calls[i], (const uint8_t *)"req", 3);
    detached_submit(h.conn, calls[i]);
  }
  const char *const headers[] = {":status", "200", "content-type", "application/grpc",
                                 NULL};
  const char *const trailers[] = {"grpc-status", "0", NULL};
  uint8_t body[200];
  memset(body, 'r', sizeof(body));
  script s;
  script_init(&s);
  for (int i = 0; i < n; i++) {
    script_headers(&s, 1 + 2 * i, 0, headers);
    script_message(&s, 1 + 2 * i, 0, body, sizeof(body), 0);
    script_headers(&s, 1 + 2 * i, 1, trailers);
  }
  memset(probe, 0, sizeof(*probe));
  probe->calls = calls;
  probe->n = n;
  tri_io_hook hook = {window_hook, probe};
  tri_channel_set_io_hook(h.ch, &hook);
  int rv = tri__conn_feed(h.conn, s.p, s.len);
  CHECK_EQ_INT(rv, 0);
  if (rv) fprintf(stderr, "  %s\n", h.conn->errstr);
  tri_channel_set_io_hook(h.ch, NULL);
  int ok = 0;
  for (int i = 0; i < n; i++) ok += tri_call_done(calls[i]) && tri_call_code(calls[i]) == 0;
  CHECK_EQ_INT(ok, n);
  script_free(&s);
  detached_teardown(h.ch, h.conn, calls, n);
}

static void window_answered_while_parsed(void) {
  window_probe p;
  window_of_responses(64, &p); /* 64 x ~230 B: four slices */
  CHECK(p.runs >= 2);
  CHECK(p.done_first >= 16 && p.done_first < 64); /* a quarter of 64 */
  window_of_responses(1, &p);
  CHECK_EQ_INT(p.runs, 1);
  CHECK_EQ_INT(p.done_first, 1);
}

void test_conn(void) {
  window_answered_while_parsed();
  deadline_heap_order();
  arena_reused_across_connections();
  unknown_wire_or_dialect_refused();
  write_stall_kills();
  calls_held_while_blocked();
  calls_held_until_settings();
  slow_writes_are_progress();
  write_stall_off();
  connect_timeout();
  keepalive();
  channel_backoff();
}
