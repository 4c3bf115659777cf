/*
 * request: reading one call of the embedded server (worker thread): its
 * request headers (routing, wire, compression, timeouts and the x-* test
 * controls), its body on the gRPC wire (envelopes, gzip) or the Triple wire
 * (one body), and handing the complete request to its service (echo.h,
 * testservice.h) once x-delay-ms has passed.  Nothing here writes to the
 * socket; answers go through respond.h.
 */
#ifndef TRI_SERVER_REQUEST_H
#define TRI_SERVER_REQUEST_H

#include "server/server_int.h"

/* One request header (initial HEADERS only; names are lower-case).  A bad
 * value is remembered and answered when the headers are done. */
void srv_req_header(srv_stream *st, const uint8_t *name, size_t nl,
                    const uint8_t *v, size_t vl);

/* The request headers are complete: answers what is wrong with them, or
 * applies x-misbehave, or starts the call (now or after x-delay-ms). */
void srv_headers_done(srv_stream *st);

/* The client half-closed the request. */
void srv_request_end(srv_stream *st);

/* Request body bytes (DATA payload) on the gRPC wire: envelopes are
 * decoded, each whole message handed on. */
void srv_grpc_data(srv_stream *st, const uint8_t *d, size_t n);

/* Request body bytes on the Triple wire: gathered into one body (bounded
 * by max_message). */
void srv_triple_data(srv_stream *st, const uint8_t *d, size_t n);

/* The start of the answer, once x-delay-ms has passed. */
void srv_stream_go(srv_stream *st);

/* The call's deadline passed: DEADLINE_EXCEEDED on its wire. */
void srv_stream_deadline(srv_stream *st);

/* Nonzero when v[0..n) is `lit` (lower-case), ignoring ASCII case. */
int srv_token_is(const uint8_t *v, size_t n, const char *lit);

#endif
