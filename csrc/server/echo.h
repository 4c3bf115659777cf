/*
 * echo: benchmark.BenchmarkService, the benchmarks' target.  UnaryCall
 * answers with the request message unchanged, StreamCall with each message
 * as it arrives; x-response-size replaces the echo by a generated
 * BenchmarkResponse of that many payload bytes.  Worker thread only.
 */
#ifndef TRI_SERVER_ECHO_H
#define TRI_SERVER_ECHO_H

#include "server/server_int.h"

/* The request is complete: UnaryCall answers `body` (the request message:
 * an envelope on the gRPC wire, the body on the Triple wire; taken),
 * StreamCall ends OK (body, NULL or not, is freed). */
void srv_echo_complete(srv_stream *st, tri_buf *body);

/* One StreamCall request message (prefix + payload; taken): its echo is
 * queued (it goes out once x-delay-ms has passed). */
void srv_echo_message(srv_stream *st, tri_buf *m);

#endif
