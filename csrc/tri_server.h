/*
 * tri_server: the embedded echo server, benchmark.BenchmarkService over h2c
 * (HTTP/2 cleartext with prior knowledge) on nghttp2.  It is the default
 * target of the benchmarks and a fixture of the tests; it needs no Python.
 *
 * Methods (both messages are `{bytes payload = 1}`, so an echo is the
 * request bytes unchanged):
 *   /benchmark.BenchmarkService/UnaryCall   echoes the one request message
 *   /benchmark.BenchmarkService/StreamCall  echoes each message as it
 *                                           arrives, until the half-close
 * (also with the method's first letter lower-cased, as dubbo-go routes).
 *
 * Wires, chosen by the request content-type (docs/triple-wire.md):
 *   application/grpc, application/grpc+<codec>  gRPC (§3): 200, content-type
 *       application/grpc, DATA, trailers grpc-status / grpc-message
 *       (percent-encoded).  An error before any message is answered
 *       trailers-only (or HEADERS + trailers when x-echo-* must be echoed).
 *   application/proto, application/json[;...]   Triple unary (§1): the body is
 *       the bare message; success is 200 with the request's content-type;
 *       an error is the HTTP status of §5 table A (dubbo-go column) with
 *       content-type application/json and {"code":"<name>","message":"..."}.
 *       Trailing metadata goes in `trailer-`-prefixed headers.
 *   anything else: HTTP 415; a method other than POST: HTTP 405.
 *
 * Errors: unknown path -> UNIMPLEMENTED (12); malformed envelope, a missing
 * or second unary message -> INTERNAL (13); a message over max_message ->
 * RESOURCE_EXHAUSTED (8); a compressed message (flag 0x01) -> UNIMPLEMENTED
 * until gzip lands (issue 5: see decode_hook in tri_server.c); a bad
 * grpc-timeout / triple-timeout-ms / control value -> INVALID_ARGUMENT.
 * grpc-timeout and triple-timeout-ms are honoured: when the deadline passes
 * before the status is decided, the call ends with DEADLINE_EXCEEDED (gRPC
 * trailers, or 408 on the Triple wire).
 *
 * Control metadata (tests/peers/README.md), on both wires:
 *   x-echo-*         sent back in the response headers and in the trailing
 *                    metadata (Triple: as trailer-x-echo-*)
 *   x-status: N      the call ends with status N (0..16) and no message
 *                    (N = 0: UnaryCall answers one empty message)
 *   x-message / x-message-bin   the status message for x-status
 *   x-delay-ms: N    nothing is sent for N ms (a timer, no thread sleeps)
 *   x-response-size: N  each answer is BenchmarkResponse{N x 'a'}
 *                    (0x0a varint(N) 'a'...; JSON {"payload":"<base64>"})
 *   x-reset: 1       RST_STREAM(CANCEL) instead of an answer
 *
 * Threads: one acceptor thread hands accepted sockets round-robin to N
 * worker threads; each worker runs an epoll loop and owns its connections
 * outright (socket, nghttp2 server session, streams, timers), so nothing on
 * the request path is shared or locked.  All frames produced in one wake-up
 * of a connection go out in one writev; response payloads are sent from
 * their buffers without a copy (NGHTTP2_DATA_FLAG_NO_COPY).  Sockets have
 * TCP_NODELAY; we advertise a 16 MiB-1 stream window and a 1 GiB-1
 * connection window.
 *
 * Memory per stream is bounded: received bytes are credited back to the
 * peer's flow-control windows only while the stream's unsent responses are
 * under 4 MiB, so a client that sends without reading stalls on its window.
 * A protocol error (bad preface, bad HPACK, flow-control violation) closes
 * that connection only; a client that disappears loses only its streams.
 *
 * API threads: tri_server_start/stop/del must not race with each other
 * (one controlling thread); tri_server_port and tri_server_stats may be
 * called from any thread once start returned.
 */
#ifndef TRI_SERVER_H
#define TRI_SERVER_H

#include <stdint.h>

#include "tri_stats.h"

typedef struct tri_server tri_server;

typedef struct tri_server_opts {
  const char *host;        /* copied; bind address, NULL: "127.0.0.1" */
  int port;                /* 0: an ephemeral port (see tri_server_port) */
  int threads;             /* worker (I/O) threads, 1..64; 0: 1 */
  uint32_t stream_window;  /* our SETTINGS_INITIAL_WINDOW_SIZE (16 MiB-1) */
  uint32_t conn_window;    /* our connection window (1 GiB-1) */
  uint32_t max_frame_size; /* our SETTINGS_MAX_FRAME_SIZE (64 KiB) */
  uint32_t max_concurrent_streams; /* per connection (10000) */
  int64_t max_message;     /* largest request message (64 MiB) */
} tri_server_opts;

/* Fills `o` with the defaults shown above. */
void tri_server_opts_init(tri_server_opts *o);

/* Creates a stopped server (nothing bound, no thread).  `opts` may be NULL
 * for the defaults; it is copied.  Returns 0 with *out owned by the caller
 * (tri_server_del), TRI_ERR_INVALID for a bad option, or TRI_ERR_NOMEM. */
int tri_server_new(tri_server **out, const tri_server_opts *opts);

/* Binds and listens (SO_REUSEADDR, backlog 1024), then starts the acceptor
 * and worker threads.  When it returns 0 the port accepts connections.
 * Returns TRI_ERR_INVALID if already started (a stopped server cannot be
 * restarted), TRI_ERR_RESOLVE when the host does not resolve, TRI_ERR_SYSTEM
 * when bind/listen/thread creation fails (see tri_server_errstr). */
int tri_server_start(tri_server *s);

/* The bound port once started (the real one when opts.port was 0), else 0. */
int tri_server_port(const tri_server *s);

/* Stops accepting, closes every connection (in-flight streams are dropped
 * without an answer), and joins every thread.  Idempotent; a server that
 * never started is left as it is.  Returns 0. */
int tri_server_stop(tri_server *s);

/* Stops the server if needed and frees it.  NULL is ignored. */
void tri_server_del(tri_server *s);

/* The server's counters (connects = accepted connections, calls = streams
 * started, socket syscalls and bytes, allocations).  Borrowed; valid until
 * tri_server_del. */
const tri_stats *tri_server_stats(const tri_server *s);

/* Why the last failing tri_server_start failed ("" when it did not).
 * Borrowed; valid until the next start or tri_server_del. */
const char *tri_server_errstr(const tri_server *s);

#endif
