/*
 * respond: answering one call of the embedded server on its wire (worker
 * thread).  gRPC: response headers (or trailers-only), then the queued
 * messages, then trailers with grpc-status; Triple: one HTTP response, 200
 * with the body or an error status with a JSON body.  Response bytes wait
 * in the stream's queue (q_head..q_tail) until nghttp2 pulls them through
 * the data source; large slices go out by reference (NO_COPY).  A call is
 * answered once: after `finished` every answer is a no-op.
 */
#ifndef TRI_SERVER_RESPOND_H
#define TRI_SERVER_RESPOND_H

#include "server/server_int.h"

/* Sets the status message to p[0..n) (cut at MAX_STATUS_MSG; out of memory
 * leaves none). */
void srv_set_msg(srv_stream *st, const void *p, size_t n);

/* nghttp2 refused a submit (out of memory): the stream can only be reset. */
void srv_submit_failed(srv_stream *st);

/* Queues a response buffer (taking it). */
void srv_q_push(srv_stream *st, tri_buf *b);

/* Drops queued response bytes that no frame has started on. */
void srv_q_drop_unstarted(srv_stream *st);

/* The data source of every response body (the stream's queue). */
nghttp2_data_provider srv_provider(srv_stream *st);

/* gRPC response headers; with trailers_only, the status rides along and
 * the stream ends there. */
void srv_grpc_headers(srv_stream *st, int trailers_only);

/* Decides the gRPC status (msg may be NULL: keep the x-message one).  The
 * trailers follow whatever responses are queued. */
void srv_grpc_finish(srv_stream *st, int code, const char *msg, size_t n);

/* Answers a Triple unary call: 200 with `body` (taken; may be NULL), or the
 * error status and JSON body for code != OK. */
void srv_triple_respond(srv_stream *st, int code, tri_buf *body);

/* A plain HTTP answer (405, 415) with no body. */
void srv_http_reply(srv_stream *st, const char *status);

/* Ends the call with RST_STREAM(h2_code). */
void srv_rst(srv_stream *st, uint32_t h2_code);

/* Ends the call with `code` on its wire; fmt NULL keeps the message that is
 * already set (x-message). */
__attribute__((format(printf, 3, 4))) void srv_fail(srv_stream *st, int code,
                                                    const char *fmt, ...);

/* Queues one gRPC response message `m` (prefix + payload, flags 0; taken),
 * gzip'd first when `gz` (then flag 0x01; the headers say grpc-encoding:
 * gzip whenever a message may be compressed). */
void srv_grpc_emit(srv_stream *st, tri_buf *m, int gz);

/* An empty message in an envelope (UnaryCall with x-status: 0). */
tri_buf *srv_empty_message(srv_stream *st);

/* A response message in a new buffer: gRPC with its prefix (flags 0),
 * Triple bare.  NULL when out of memory (the call failed). */
tri_buf *srv_msg_buf(srv_stream *st, size_t n);

/* Finishes srv_msg_buf's buffer once its n bytes are written. */
tri_buf *srv_msg_done(srv_stream *st, tri_buf *b, size_t n);

#endif
