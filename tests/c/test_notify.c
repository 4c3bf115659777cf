/*
 * test_notify.c: the channel's completion queue tells its poller which token
 * of a call is the last one (tri_call_notify_final), when the call ends just
 * after a poller took one of its earlier events.  Found as a hang of an
 * asyncio channel under GOAWAY, mid-stream load: the poller let go
 * of a call whose DONE token was still queued, the call was freed and reused,
 * and its queue node went in twice (a cycle the next splice never left).
 * Detached connection: no network, no I/O thread; the test plays it.
 */
#include "detached_call.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_int.h"
#include "tri_test.h"

#define EVENTS (TRI_EV_DONE | TRI_EV_HEADERS | TRI_EV_MESSAGE | TRI_EV_WRITABLE)

static tri_call *notified_call(tri_channel *ch, tri_conn *conn, void *token) {
  tri_call *c;
  tri_call_new(ch, &c, "/s/M", 4, -1, TRI_CALL_CLIENT_STREAMING);
  tri_call_set_notify_events(c, token, EVENTS);
  detached_submit(conn, c);
  return c;
}

void test_notify(void) {
  tri_channel *ch;
  tri_conn *conn;
  CHECK_EQ_INT(detached_open(&ch, &conn), 0);
  void *tokens[4];
  int a_token, b_token;

  /* a: its HEADERS token is taken, then it ends (the GOAWAY) before the
   * poller looks at it.  That token is not the last: DONE is queued again. */
  tri_call *a = notified_call(ch, conn, &a_token);
  tri__call_headers_done(a);
  CHECK_EQ_INT(tri_channel_take_completions(ch, tokens, 4), 1);
  CHECK(tokens[0] == &a_token);
  /* b: ends while its HEADERS token is still queued: that one token is its
   * last, and nothing more is queued for it. */
  tri_call *b = notified_call(ch, conn, &b_token);
  tri__call_headers_done(b);
  tri__conn_kill(conn, TRI_CODE_UNAVAILABLE, "the server sent GOAWAY");
  CHECK(tri_call_done(a) && tri_call_done(b));
  CHECK(!tri_call_notify_final(a)); /* done now, but its DONE token is queued */

  CHECK_EQ_INT(tri_channel_take_completions(ch, tokens, 4), 2);
  int a_last = 0, b_last = 0;
  for (int i = 0; i < 2; i++) {
    if (tokens[i] == &a_token) a_last = tri_call_notify_final(a);
    if (tokens[i] == &b_token) b_last = tri_call_notify_final(b);
  }
  CHECK(a_last);
  CHECK(b_last);
  /* Nothing is left. */
  CHECK_EQ_INT(tri_channel_take_completions(ch, tokens, 4), 0);

  tri_call *calls[2] = {a, b};
  detached_teardown(ch, conn, calls, 2);
}
