/*
 * tri_server: the embedded server, benchmark.BenchmarkService (echo) and
 * grpc.testing.TestService over h2c
 * (HTTP/2 cleartext with prior knowledge) on nghttp2.  It is the default
 * target of the benchmarks and a fixture of the tests; it needs no Python.
 *
 * Methods (both messages are `{bytes payload = 1}`, so an echo is the
 * request bytes unchanged):
 *   /benchmark.BenchmarkService/UnaryCall   echoes the one request message
 *   /benchmark.BenchmarkService/StreamCall  echoes each message as it
 *                                           arrives, until the half-close
 * and grpc.testing.TestService, the standard gRPC interop service
 * (proto/grpc/testing/; messages coded by hand, see server/ts_codec.h):
 *   EmptyCall            Empty -> Empty
 *   UnaryCall            SimpleRequest -> SimpleResponse{payload: response_size
 *                        zero bytes}
 *   StreamingOutputCall  one StreamingOutputCallRequest -> a response per
 *                        ResponseParameters (size zero bytes, after
 *                        interval_us: a timer, never a sleep)
 *   StreamingInputCall   requests until the half-close ->
 *                        {aggregated_payload_size: the sum of payload sizes}
 *   FullDuplexCall       each request answered as it arrives (its
 *                        ResponseParameters, in order), OK after the half-close
 *   HalfDuplexCall       requests buffered until the half-close, then answered
 *   UnimplementedCall, and any other path (such as grpc.testing.UnimplementedService)
 *                        -> UNIMPLEMENTED
 *   response_status {code != 0, message} ends the call with that status
 *   (code outside 1..16: UNKNOWN; on the duplexes after the answers queued
 *   before it).  response_compressed / ResponseParameters.compressed choose
 *   per message (honoured when the client accepts gzip; absent: the default
 *   rule below); expect_compressed (UnaryCall, StreamingInputCall) must match
 *   how the request message arrived, else INVALID_ARGUMENT.  Metadata
 *   x-grpc-test-echo-initial is echoed in the initial metadata and
 *   x-grpc-test-echo-trailing-bin in the trailing metadata.  A request that
 *   does not parse: INTERNAL (gRPC wire) or INVALID_ARGUMENT (Triple wire).
 *   EmptyCall, UnaryCall and UnimplementedCall are also served on the Triple
 *   wire: application/proto (bare protobuf) and application/json (protojson:
 *   proto or lowerCamel field names in; {"payload":{"body":"<base64>"}} out).
 *   The streaming methods are gRPC only (UNIMPLEMENTED on the Triple wire).
 * (Paths also match with the method's first letter lower-cased, as dubbo-go
 * routes.)
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
 * Compression (gzip, with tri_gzip's pooled streams):
 *   requests   gRPC: a message with flag 0x01 under grpc-encoding: gzip;
 *              Triple: the whole body under content-encoding: gzip.  Inflating
 *              stops at max_message (-> RESOURCE_EXHAUSTED); corrupt or
 *              truncated gzip -> INTERNAL; flag 0x01 without grpc-encoding:
 *              gzip -> INTERNAL; an encoding other than gzip / identity ->
 *              UNIMPLEMENTED.
 *   advertised gRPC: grpc-accept-encoding: gzip; Triple: accept-encoding: gzip.
 *   responses  compressed when the client accepts gzip (grpc-accept-encoding,
 *              or accept-encoding on the Triple wire) AND either compressed
 *              its request or sent `x-compress-response: 1`.  gRPC: every
 *              message gets flag 0x01 and the headers grpc-encoding: gzip;
 *              Triple: the whole body, content-encoding: gzip (error bodies
 *              and empty bodies are never compressed).
 *
 * Errors: unknown path -> UNIMPLEMENTED (12); malformed envelope, a missing
 * or second unary message -> INTERNAL (13); a message over max_message ->
 * RESOURCE_EXHAUSTED (8); a bad grpc-timeout / triple-timeout-ms / control
 * value -> INVALID_ARGUMENT.
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
 *   x-compress-response: 1  compress the answer if the client accepts gzip
 *   x-misbehave: <mode>  a misbehaving server, on any method and path (for
 *                    the client's fault tests); an unknown mode is
 *                    INVALID_ARGUMENT:
 *     rst-mid-response  the response headers, the first half of the first
 *                    response message (or of the Triple body; none when the
 *                    call has no message), then RST_STREAM(INTERNAL_ERROR)
 *                    (the data source returns NGHTTP2_ERR_TEMPORAL_CALLBACK_
 *                    FAILURE once the half is out; nghttp2 sends the RST)
 *     goaway         GOAWAY(NO_ERROR, last-stream-id = this stream - 2): this
 *                    stream (and any later one) is refused, streams below it
 *                    go on; the connection closes when they are done, at the
 *                    earliest 100 ms and at the latest 1 s after the GOAWAY
 *                    (whatever is still open then is cut)
 *     bad-hpack      a raw HEADERS frame for this stream, written between
 *                    nghttp2's frames, whose block is the HPACK indexed field
 *                    0x80 (index 0: a decoding error by RFC 7541 §6.1); our
 *                    own HPACK encoder state is untouched.  The client must
 *                    fail the whole connection (COMPRESSION_ERROR)
 *     bad-grpc-status   grpc-status: abc (trailers, or trailers-only); gRPC
 *                    wire only (INVALID_ARGUMENT on the Triple wire)
 *     wrong-content-type  :status 200, content-type: text/html, an HTML body
 *                    and END_STREAM: no grpc-status, no trailers
 *     tiny-window    SETTINGS_INITIAL_WINDOW_SIZE = 1 is submitted for the
 *                    rest of this connection (the connection window stays as
 *                    it was); the call itself is answered normally.  Once the
 *                    client acks it, every stream's receive window is 1 byte
 *                    (open ones shrink by the difference, RFC 9113 §6.9.2).
 *                    We create sessions with no_auto_window_update and credit
 *                    received bytes with nghttp2_session_consume as soon as
 *                    they are read; nghttp2 queues a WINDOW_UPDATE once the
 *                    consumed bytes reach half the local window, i.e. after
 *                    every byte: the client gets a 1-byte WINDOW_UPDATE per
 *                    byte it sends, a round trip each
 *     never-answer   nothing is ever sent on the stream (grpc-timeout and
 *                    triple-timeout-ms are ignored too; its request data is
 *                    read and dropped); only the client ends it (RST_STREAM
 *                    or closing the connection)
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
 * A connection whose session is over (GOAWAY) closes lingering: FIN, then
 * its input is read and dropped until the client's EOF (at most 1 s), so a
 * client still writing reads the GOAWAY rather than a reset.
 *
 * API threads: tri_server_start/stop/del must not race with each other
 * (one controlling thread); tri_server_port and tri_server_stats may be
 * called from any thread once start returned.
 */
#ifndef TRI_SERVER_H
#define TRI_SERVER_H

#include <stddef.h>
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
  uint32_t max_metadata_size; /* our SETTINGS_MAX_HEADER_LIST_SIZE and the
                                 largest request header block (HPACK size)
                                 a stream may carry (64 KiB: then no field
                                 exceeds what nghttp2 decodes); a larger block
                                 fails its stream with RESOURCE_EXHAUSTED */
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
