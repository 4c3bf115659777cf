/*
 * testservice: grpc.testing.TestService, the gRPC interop service (see
 * tri_server.h for each method).  Streaming answers come from a per-stream
 * queue of jobs (a response after its interval, or a status), run by
 * srv_ts_pump from the worker's timers, never by sleeping.  Messages are
 * coded by ts_codec.h.  Worker thread only.
 */
#ifndef TRI_SERVER_TESTSERVICE_H
#define TRI_SERVER_TESTSERVICE_H

#include "server/server_int.h"

/* The request is complete: p[0..n) is its one message (NULL/0 for the
 * streaming methods, whose messages came through srv_ts_message), `gz` when
 * it arrived compressed.  Borrowed. */
void srv_ts_complete(srv_stream *st, const uint8_t *p, size_t n, int gz);

/* One message of a streaming request (prefix + payload, inflated already;
 * `gz` when it arrived compressed; taken). */
void srv_ts_message(srv_stream *st, tri_buf *m, int gz);

/* Runs the job queue: each response after its interval (a timer, never a
 * sleep), while the stream's queued output is under STREAM_OUT_LIMIT; the
 * call ends OK once the client half-closed and every job ran.
 * HalfDuplexCall starts only after the half-close. */
void srv_ts_pump(srv_stream *st);

#endif
