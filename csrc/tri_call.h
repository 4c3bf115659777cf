/*
 * tri_call: one RPC on a channel, as seen by its caller.
 *
 * Life of a unary call (the fast path):
 *   tri_call_new -> tri_call_add_metadata* -> tri_call_set_request_* ->
 *   tri_call_start -> tri_call_wait (or a completion notification) ->
 *   read results (code, message, response, metadata) -> tri_call_release.
 *
 * Threads: the caller owns the call until tri_call_start; after it, the
 * connection's I/O thread writes the call's state and the caller may only
 * wait, cancel, or read results once tri_call_done() is true.  Results are
 * immutable after completion.  A call is reference counted (caller + I/O
 * thread); memory comes from the channel's call pool and returns there when
 * both have let go.
 *
 * Buffers: a request set with tri_call_set_request_borrowed is NOT copied:
 * the caller must keep those bytes alive and unchanged until the call is
 * done.  When the call is done the core holds no pointer into them, even if
 * it completed early (deadline, cancel): bytes still queued for the socket
 * are copied out first.  A request set with tri_call_set_request_buf is
 * owned by the call from then on.
 */
#ifndef TRI_CALL_H
#define TRI_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "tri_buf.h"

typedef struct tri_call tri_call;
typedef struct tri_channel tri_channel;

/* Metadata record kinds returned by tri_call_md_next. */
enum { TRI_MD_INITIAL = 0, TRI_MD_TRAILING = 1 };

/* Call shapes (tri_call_new flags).  Without CLIENT_STREAMING the request is
 * one message sent on the unary fast path; with it, messages go through the
 * coalescing writer (tri_call_write).  Without SERVER_STREAMING exactly one
 * response message is expected (tri_call_response); with it, messages are
 * read one by one (tri_call_read). */
enum { TRI_CALL_CLIENT_STREAMING = 1, TRI_CALL_SERVER_STREAMING = 2 };
/* With CLIENT_STREAMING (and optionally SERVER_STREAMING) on a Triple-wire
 * channel: a unary call through the streaming machinery (dubbo-go's duplex
 * path).  The body is the bare message (no envelope, no content-length), at
 * most one tri_call_write (a second is TRI_ERR_INVALID), and the answer is
 * read as a Triple unary answer: the message (tri_call_response, or one
 * tri_call_read with SERVER_STREAMING) or the JSON error.  No effect on the
 * gRPC wire. */
enum { TRI_CALL_UNARY_BODY = 4 };
/* Without SERVER_STREAMING (ignored with it): the response message is checked
 * and counted but its payload is not kept, for a caller that only needs to
 * know that one arrived and how long it was (a load generator that does not
 * verify bodies).  Still checked, with the same statuses as without the flag:
 * the HTTP status and content-type; on the gRPC wire every envelope (flags
 * other than 0x01 and a second message INTERNAL, a declared length over
 * max_recv_bytes RESOURCE_EXHAUSTED, a compressed message without a known
 * grpc-encoding INTERNAL, a truncated or missing message INTERNAL); on the
 * Triple wire the body's length against max_recv_bytes.  A compressed
 * message (or Triple body) is still reassembled and inflated within
 * max_recv_bytes (corrupt: INTERNAL, over the limit: RESOURCE_EXHAUSTED),
 * then dropped; a Triple error body (HTTP status not 200) is kept and parsed
 * as without the flag.  Not checked: the bytes of an uncompressed message,
 * which are never copied out of the receive buffer.  tri_call_response then
 * gives NULL; tri_call_response_size gives the length. */
enum { TRI_CALL_DISCARD_BODY = 8 };
/* Response messages of at least TRI_CALL_OWNABLE_MIN bytes that arrive
 * uncompressed on the gRPC wire are received into buffers of their own
 * (detached: tri_buf_new) with TRI_CALL_OWNABLE_HEADROOM bytes in front of
 * the message and one spare byte after it.  The caller may take such a buffer
 * over (tri_call_take_response, or a message of tri_call_read for which
 * tri_buf_detached is nonzero) and keep it after the call and the channel are gone,
 * freeing it with tri_buf_free.  For a language binding that builds its own
 * object around the bytes where they were received, instead of copying them
 * a second time; the room around the message is the binding's to write. */
enum { TRI_CALL_OWNABLE_RESPONSES = 16 };
#define TRI_CALL_OWNABLE_MIN ((size_t)16 << 10)
#define TRI_CALL_OWNABLE_HEADROOM ((size_t)64)

/* Creates a call for method `path` ("/pkg.Service/Method").  timeout_ns < 0
 * means no deadline.  Returns 0 or TRI_ERR_NOMEM / TRI_ERR_CLOSED /
 * TRI_ERR_INVALID (bad path).  *out is owned by the caller. */
int tri_call_new(tri_channel *ch, tri_call **out, const char *path,
                 size_t path_len, int64_t timeout_ns, int flags);

/* Adds one request metadata entry.  Keys must be legal and not reserved;
 * values of non "-bin" keys must be printable ASCII; "-bin" values are raw
 * bytes and get base64-encoded here.  Returns 0 or TRI_ERR_INVALID (the call
 * is unchanged) or TRI_ERR_NOMEM.  Only before tri_call_start. */
int tri_call_add_metadata(tri_call *c, const char *key, size_t key_len,
                          const char *value, size_t value_len);

/* Sends `n` bytes at `p` as the request message, without copying them.  The
 * bytes are borrowed until tri_call_done(c) is true. */
void tri_call_set_request_borrowed(tri_call *c, const uint8_t *p, size_t n);

/* Sends the content of `b` as the request message.  `b` must have at least 5
 * bytes of headroom (the envelope prefix is written there) and comes from the
 * channel's pool (tri_channel_pool).  Ownership passes to the call. */
void tri_call_set_request_buf(tri_call *c, tri_buf *b);

/* Sets request compression (TRI_COMPRESS_NONE, _DEFLATE or _GZIP; the binding
 * refuses other values), overriding the channel's default.  Only before
 * tri_call_start. */
void tri_call_set_compression(tri_call *c, int compress);

/* Asks for a completion notification: when the call is done, `token` is
 * queued on the channel (see tri_channel_poll_completions).  Only before
 * tri_call_start. */
void tri_call_set_notify(tri_call *c, void *token);

/* Events a call can report through the channel's completion queue. */
enum {
  TRI_EV_DONE = 1,     /* final status known (always the last event) */
  TRI_EV_MESSAGE = 2,  /* a response message can be read */
  TRI_EV_HEADERS = 4,  /* initial metadata arrived */
  TRI_EV_WRITABLE = 8, /* queued request bytes drained: writes will not block */
  /* Not an event: a call that ends inside tri_call_start (it never reached a
   * connection: backoff, closed channel, send limit...) queues nothing; the
   * caller learns it from tri_call_start's result.  Spares a caller that
   * makes many calls which fail at once a round trip per call through the
   * completion queue (and the backlog when it cannot keep up). */
  TRI_EV_QUIET_START = 16
};
/* Like tri_call_set_notify for any events in `mask`.  A call is queued at
 * most once at a time: after its token is polled, the caller must look at
 * every state it cares about (a later event queues it again). */
void tri_call_set_notify_events(tri_call *c, void *token, int mask);

/* Hands the call to its connection.  Never fails: problems found here (send
 * limit, channel closed, no connection while backing off) complete the call
 * at once with a status.  Returns 1 when the call ended here without reaching
 * a connection (with TRI_EV_QUIET_START, no notification comes for it), 0
 * when it was handed over (it ends later, or already did and notifies). */
int tri_call_start(tri_call *c);

/* Batched wake-ups (tri_conn.c), for a thread that starts several calls in a
 * burst (the asyncio reactor stepping every task one completion woke): from
 * tri_wakes_defer_begin to the matching tri_wakes_defer_end (they nest), the
 * first op this thread queues on a connection wakes its I/O thread at once,
 * as always; the later ones do not, and when the I/O thread has taken the
 * earlier ones meanwhile, the end of the burst wakes it once more for them.
 * So an I/O thread is woken at most twice per burst, however many calls it
 * brings, instead of once per call it finds asleep.  Other threads' ops wake
 * as always.  Before this thread waits in the library (tri_call_wait, the
 * read and write waits, tri_channel_poll_completions, tri_channel_close,
 * tri_load_wait) the wake-ups it owes go out, so it never sleeps on work
 * whose I/O thread it has not woken.  Each connection seen holds a reference
 * until the end; past 16 connections in one burst, ops wake at once.  A
 * channel with connections seen must not be deleted before the end (a call
 * started in the burst keeps its channel alive: tri_channel_del needs every
 * call released). */
void tri_wakes_defer_begin(void);
void tri_wakes_defer_end(void);

/* Nonzero once the call has its final status. */
int tri_call_done(const tri_call *c);

/* Nonzero when the token of `c` that tri_channel_poll_completions (or
 * tri_channel_take_completions) returned last was its last one: the call was
 * done when it was taken, and the queue will hold no more.  Read it right
 * after the poll that returned the token (the polling thread); until it is
 * nonzero the token stays queued or may be queued again, so the owner must
 * keep it (and the call) alive.  tri_call_done() is no substitute: the call
 * may end between the poll and that check, with its DONE token queued. */
int tri_call_notify_final(const tri_call *c);

/* Why a done call never reached a server application, so that it can be sent
 * again safely (gRPC's transparent retry, proposal A6); 0 when it may have.
 * REFUSED: a live connection did not process it: the server refused the stream
 * (RST_STREAM REFUSED_STREAM, or a stream above the last-stream-id of a GOAWAY,
 * which nghttp2 closes with REFUSED_STREAM), its HEADERS were never sent, or the
 * connection was closing; another attempt may go anywhere.  NO_CONNECTION: no
 * connection could be had (backing off after a failed attempt, or the attempt
 * failed before the server's SETTINGS arrived): another backend may take it; the
 * same one fails it again (grpc fails such calls at once without
 * wait_for_ready). */
enum { TRI_UNPROCESSED_REFUSED = 1, TRI_UNPROCESSED_NO_CONNECTION = 2 };

/* The call's deadline: CLOCK_MONOTONIC ns (the clock of tri_thread's now),
 * or 0 when it has none.  Lets a retry keep the first attempt's deadline. */
int64_t tri_call_deadline(const tri_call *c);
int tri_call_unprocessed(const tri_call *c);

/* 1 once the server began a response: its HEADERS arrived and were not a
 * trailers-only response (HEADERS with END_STREAM).  gRPC's retry design
 * (A6) commits a call at that point: no retry policy may start it again. */
int tri_call_response_started(const tri_call *c);

/* Puts a unary call (no streaming flag; no effect otherwise) in hand-off
 * mode, for callers that all need one lock to go on (Python's GIL): its
 * waiters are woken one at a time as running callers block again, not all
 * by the I/O thread (tri_handoff.h).  A thread that waits on such calls
 * calls tri_handoff_yield whenever it blocks elsewhere.  Only before
 * tri_call_start. */
void tri_call_set_handoff(tri_call *c);

/* Waits up to timeout_ns (< 0: forever) for completion.  Returns 0 when done,
 * TRI_ERR_TIMEOUT otherwise.  Safe from any number of threads. */
int tri_call_wait(tri_call *c, int64_t timeout_ns);

/* Requests cancellation with `code` (e.g. TRI_CODE_CANCELLED) and a static
 * message; the stream is reset.  Returns 1 if this request cancels the call,
 * 0 if it had ended or was being cancelled already.  Any thread.  Responses
 * still queued are dropped: tri_call_read then reports the end. */
int tri_call_cancel(tri_call *c, int code, const char *message);

/* Nonzero once tri_call_cancel was accepted (the call is ending). */
int tri_call_cancel_requested(const tri_call *c);

/* Nonzero when the call was started before a fork() and is not done (in the
 * child: tri_channel_inherited).  Such a call can never complete here: its
 * I/O thread stayed in the parent.  Waits on it time out; tri_call_cancel
 * refuses it (0); tri_call_release lets go of it without waiting, leaving
 * its memory to the abandoned connection. */
int tri_call_orphaned(const tri_call *c);

/* Results; valid only when done, until tri_call_release. */
int tri_call_code(const tri_call *c);
/* The status message (UTF-8 bytes, not NUL-terminated).  When there was no
 * memory to keep it, a fixed out-of-memory text. */
void tri_call_message(const tri_call *c, const char **p, size_t *n);
/* The response message payload; *p is NULL when none was received (or it
 * was not kept: TRI_CALL_DISCARD_BODY). */
void tri_call_response(const tri_call *c, const uint8_t **p, size_t *n);
/* Takes the response message of a finished unary call when it is in a buffer
 * of its own (TRI_CALL_OWNABLE_RESPONSES), or returns NULL and leaves it in
 * the call.  A taken buffer is the caller's (detached: tri_buf_free; its content is the
 * message); tri_call_response then gives NULL, tri_call_response_size still
 * the length.  The caller's thread, once done; not together with
 * tri_call_response on another thread. */
tri_buf *tri_call_take_response(tri_call *c);
/* 1 when the call ended OK with a response message, kept or not
 * (TRI_CALL_DISCARD_BODY), and *n its payload length (decompressed); 0 and
 * *n = 0 otherwise.  Unary responses only (no SERVER_STREAMING). */
int tri_call_response_size(const tri_call *c, size_t *n);
/* Iterates received metadata, initial then trailing.  Start with *iter = 0;
 * returns 0 and fills the outputs for each entry, -1 at the end.  Binary
 * values are decoded. */
int tri_call_md_next(const tri_call *c, size_t *iter, int *kind,
                     const char **key, size_t *key_len, const char **value,
                     size_t *value_len);
/* The notify token given to tri_call_set_notify. */
void *tri_call_token(const tri_call *c);

/* ---- client streaming (TRI_CALL_CLIENT_STREAMING, after start) ---------
 * Writes go through the call's coalescing writer (see tri_writer.h).  A
 * write may block (the thread, never the I/O thread) while more than a
 * bounded number of bytes wait for the peer's flow-control window; it
 * resumes when they are written, or fails when the call ends.  Errors:
 * TRI_ERR_CLOSED after done_writing or once the call has ended; the
 * writer's sticky error otherwise.  TRI_ERR_NOMEM from write, flush or
 * done_writing also ends the call (RESOURCE_EXHAUSTED, RST_STREAM to the
 * server): the request stream could not be completed. */
int tri_call_write(tri_call *c, const uint8_t *msg, size_t n);
/* Nonzero when a write of n bytes will not wait for room.  When it returns
 * 0, request bytes are in flight (it hands a pending chunk over itself if
 * none were), so a TRI_EV_WRITABLE notification will follow. */
int tri_call_write_would_not_block(tri_call *c, size_t n);
/* Waits up to timeout_ns (< 0: forever) until a write of n bytes will not
 * wait for room (tri_call_write_would_not_block) or the call has ended (its
 * deadline ends it).  Returns 0, or TRI_ERR_TIMEOUT.  For callers that must
 * look at something else (signals) while the peer's flow control holds the
 * request stream back: wait in slices here, then write. */
int tri_call_wait_writable(tri_call *c, size_t n, int64_t timeout_ns);
int tri_call_flush(tri_call *c);
/* Flushes and half-closes (END_STREAM); an empty stream still ends. */
int tri_call_done_writing(tri_call *c);

/* ---- server streaming (TRI_CALL_SERVER_STREAMING) ----------------------
 * Takes the next response message.  Before blocking it flushes the writer
 * so a ping-pong never waits for the flush timer, and while it waits,
 * requests written meanwhile follow Nagle's rule (one written with nothing
 * in flight goes at once).  Returns 1 with *msg (the caller owns it; give it
 * back with tri_call_msg_release), 0 at the end of the stream (the call is
 * done and every message was read), or TRI_ERR_TIMEOUT.  timeout_ns < 0
 * waits forever; 0 never waits. */
int tri_call_read(tri_call *c, int64_t timeout_ns, tri_buf **msg);
/* For a reader that waits outside tri_call_read (an event loop, after
 * tri_call_read(c, 0, ...) found nothing): `waiting` 1 when it starts
 * waiting for a message, 0 when it stops.  Meanwhile writes follow the same
 * Nagle's rule as during a blocking read.  Calls must pair up. */
void tri_call_reader_waits(tri_call *c, int waiting);
void tri_call_msg_release(tri_call *c, tri_buf *msg);

/* Waits until the response headers (initial metadata) arrived or the call
 * ended.  Returns 0, or TRI_ERR_TIMEOUT. */
int tri_call_wait_headers(tri_call *c, int64_t timeout_ns);
/* Iterates initial metadata; valid once tri_call_wait_headers returned 0. */
int tri_call_initial_md_next(const tri_call *c, size_t *iter,
                             const char **key, size_t *key_len,
                             const char **value, size_t *value_len);

/* Drops the caller's reference.  If the call was started and is not done
 * it is cancelled and waited for first.  `c` must not be used afterwards. */
void tri_call_release(tri_call *c);

#endif
