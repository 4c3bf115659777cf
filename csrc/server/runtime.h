/*
 * runtime: the embedded server's epoll loop (see server_int.h for the
 * layout).  One acceptor thread hands sockets round robin to the workers;
 * each worker runs its connections' nghttp2 sessions, the streams' timers
 * (a tri_deadlines of streams: x-delay-ms, job intervals, deadlines) and the
 * output (one tri_outq per connection, written with sendmsg).  Work that a
 * stream creates is done once per loop pass: the connection is marked dirty
 * and process_dirty credits windows, pulls frames and writes.  Worker
 * thread only, except the tri_server_* API (the controlling thread).
 */
#ifndef TRI_SERVER_RUNTIME_H
#define TRI_SERVER_RUNTIME_H

#include "server/server_int.h"

/* Takes the stream out of its worker's timers (no-op when it is not in). */
void srv_timer_remove(srv_worker *w, srv_stream *st);

/* Puts the stream where its next time says (the delay, the head job's
 * interval, the deadline; none: out).  Returns -1 when the set cannot grow
 * (the caller treats it like any allocation failure). */
int srv_timer_update(srv_worker *w, srv_stream *st);

/* The connection has work for the end of this loop pass (output, window
 * credits, blocked jobs). */
void srv_mark_dirty(srv_conn *c);

/* The connection dies at the end of this loop pass. */
void srv_conn_kill(srv_conn *c);

/* Test and fuzzing hook: runs one connection of `s` (created, never
 * started) on a socketpair with no thread: feeds data[0..n) as if read
 * from the socket, then does what the worker would (due timers, output,
 * the stream ends that follow), discarding what the server writes, and
 * frees the connection.  Returns 0, or TRI_ERR_SYSTEM / TRI_ERR_NOMEM when
 * the connection could not be set up.  Not for a started server. */
int tri__server_feed(tri_server *s, const uint8_t *data, size_t n);

#endif
