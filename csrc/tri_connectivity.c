/* A channel's connectivity state (see tri_connectivity.h). */
#include "tri_connectivity.h"

#include <pthread.h>

#include "tri_conn.h"
#include "tri_int.h"

/* The state from the channel's fields.  Channel lock held. */
static int state_locked(tri_channel *ch) {
  if (ch->closed) return TRI_STATE_SHUTDOWN;
  tri_conn *conn = ch->conn;
  if (conn && !tri__conn_unusable(conn))
    return atomic_load(&conn->established) ? TRI_STATE_READY : TRI_STATE_CONNECTING;
  if (conn) /* dead, not yet replaced: did its attempt work? */
    return atomic_load(&conn->established) ? TRI_STATE_IDLE : TRI_STATE_TRANSIENT_FAILURE;
  if (ch->next_attempt > tri__now()) return TRI_STATE_TRANSIENT_FAILURE;
  return TRI_STATE_IDLE;
}

int tri_channel_state(tri_channel *ch, int try_to_connect) {
  pthread_mutex_lock(&ch->lock);
  int state = state_locked(ch);
  pthread_mutex_unlock(&ch->lock);
  if (!try_to_connect ||
      (state != TRI_STATE_IDLE && state != TRI_STATE_TRANSIENT_FAILURE))
    return state;
  /* What a call does first: take (or open) the current connection.  In
   * backoff this opens nothing (it only retires a dead connection). */
  tri_conn *conn = NULL;
  char why[256];
  if (tri__channel_conn(ch, NULL, &conn, why, sizeof(why)) == 0) tri__conn_unref(conn);
  pthread_mutex_lock(&ch->lock);
  state = state_locked(ch);
  pthread_mutex_unlock(&ch->lock);
  return state;
}
