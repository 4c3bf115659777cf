/* test_connectivity.c: tri_channel_state, grpcio's ChannelConnectivity read
 * from the channel's connection and backoff.  Detached connections stand in
 * for real ones (no socket, no thread), installed as the channel's current
 * connection, which then owns them; nothing here opens a socket. */
#include <stdatomic.h>
#include <string.h>

#include "detached_call.h"
#include "tri_conn.h"
#include "tri_connectivity.h"
#include "tri_error.h"
#include "tri_int.h"
#include "tri_test.h"

static tri_channel *new_channel(void) {
  tri_channel *ch = NULL;
  CHECK_EQ_INT(undialed_channel(&ch), 0);
  return ch;
}

/* IDLE -> CONNECTING -> READY, then the connection ends: IDLE again (it had
 * worked, so nothing holds the next attempt back); closed: SHUTDOWN. */
static void worked_then_ended(void) {
  tri_channel *ch = new_channel();
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_IDLE);
  tri_conn *conn;
  CHECK_EQ_INT(tri__conn_new_detached(&conn, ch), 0);
  ch->conn = conn;
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_CONNECTING);
  atomic_store(&conn->established, 1); /* the server's SETTINGS arrived */
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_READY);
  CHECK_EQ_INT(tri_channel_state(ch, 1), TRI_STATE_READY); /* nothing to start */
  tri__conn_kill(conn, TRI_CODE_UNAVAILABLE, "peer went away");
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_IDLE);
  tri_channel_close(ch);
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_SHUTDOWN);
  CHECK_EQ_INT(tri_channel_state(ch, 1), TRI_STATE_SHUTDOWN);
  tri_channel_del(ch);
}

/* An attempt that failed: TRANSIENT_FAILURE, and try_to_connect during the
 * backoff starts nothing (it books the failure: the backoff runs); once the
 * backoff is over the channel is IDLE. */
static void failed_attempt_backs_off(void) {
  tri_channel *ch = new_channel();
  tri_conn *conn;
  CHECK_EQ_INT(tri__conn_new_detached(&conn, ch), 0);
  ch->conn = conn;
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_CONNECTING);
  tri__conn_kill(conn, TRI_CODE_UNAVAILABLE, "connection refused");
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_TRANSIENT_FAILURE);
  CHECK_EQ_INT(tri_channel_state(ch, 1), TRI_STATE_TRANSIENT_FAILURE);
  CHECK(ch->conn == NULL); /* retired by the try */
  CHECK(ch->next_attempt > tri__now());
  CHECK_EQ_INT(tri_channel_stats(ch)->connects, 0); /* no attempt was made */
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_TRANSIENT_FAILURE);
  ch->next_attempt = tri__now() - 1; /* the backoff is over */
  CHECK_EQ_INT(tri_channel_state(ch, 0), TRI_STATE_IDLE);
  tri_channel_del(ch);
}

void test_connectivity(void) {
  worked_then_ended();
  failed_attempt_backs_off();
}
