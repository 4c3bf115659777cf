/*
 * detached_call.h: calls on a detached connection (tri__conn_new_detached),
 * for the C tests that play the I/O thread themselves.
 */
#ifndef TRI_DETACHED_CALL_H
#define TRI_DETACHED_CALL_H

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_int.h"

/* A channel with the default options to a port nobody dials. */
static inline int undialed_channel(tri_channel **ch) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  return tri_channel_new(ch, &o);
}

/* Such a channel and a detached connection of it. */
static inline int detached_open(tri_channel **ch, tri_conn **conn) {
  int rv = undialed_channel(ch);
  return rv ? rv : tri__conn_new_detached(conn, *ch);
}

/* What tri_call_start does for a call bound to `conn`: marks it started,
 * gives the I/O side its references, queues the submission and runs it. */
static inline void detached_submit(tri_conn *conn, tri_call *c) {
  c->started = 1;
  c->conn = conn;
  tri__conn_ref(conn);
  atomic_fetch_add(&c->refs, 1); /* the I/O side's reference */
  tri__conn_push(conn, &c->submit_op.node);
  tri__conn_run_ops(conn);
}

/* The server's preface: an empty SETTINGS frame.  Calls submitted before it
 * are held (tri_conn.h) and go out once it has been fed. */
static inline int detached_settings(tri_conn *conn) {
  static const uint8_t settings[9] = {0, 0, 0, NGHTTP2_SETTINGS, 0, 0, 0, 0, 0};
  return tri__conn_feed(conn, settings, sizeof(settings));
}

/* Fails what is left on `conn`, releases the n calls and frees the
 * connection and the channel. */
static inline void detached_teardown(tri_channel *ch, tri_conn *conn,
                                     tri_call **calls, int n) {
  tri__conn_kill(conn, TRI_CODE_CANCELLED, "test over");
  for (int i = 0; i < n; i++) tri_call_release(calls[i]);
  tri__conn_unref(conn);
  tri__conn_free(conn);
  tri_channel_del(ch);
}

#endif
