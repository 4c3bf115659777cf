/*
 * tri_conn: one HTTP/2 connection and the I/O thread that owns it.
 *
 * The thread owns the socket, the nghttp2 session, the output queue and the
 * deadlines (tri_deadlines); nothing else touches them.  Callers hand it work
 * through a lock-free queue of call nodes plus one eventfd write, coalesced by
 * an atomic flag (no write while a wake-up is pending).  Each loop iteration:
 * take the queued ops and submit them, read and feed the socket, expire
 * deadlines, then pull every frame nghttp2 has and send them with one writev.
 * A read is fed to nghttp2 in 4 KiB slices, and once a quarter of the calls
 * in flight have completed that iteration's work runs between two slices, so
 * the replacements of the first responses of a window go out while the rest
 * is parsed and the server is not left idle (see feed() in tri_conn.c).  DATA
 * payloads go out NO_COPY: the output queue points at the request bytes, and
 * a call that completes while its bytes are queued has them copied into the
 * staging area first, so a completed call is never referenced.
 *
 * In-place reads (plaintext connections): tri_h2_track follows the frame
 * boundaries of everything fed to nghttp2, and each call remembers which
 * stream's DATA frame followed its own last one (rx_next_sid).  When the
 * input stands in, or right after, a DATA frame of a stream reassembling a
 * gRPC message (tri__call_body_room), the read is a readv laid out by
 * tri_inplace: the frame's rest into that message, then bets on the next
 * frames (their headers into slots, their payload into the messages of the
 * streams bet on), then the read buffer.  The pieces that won are fed to
 * nghttp2 one by one from where they landed, so each DATA callback gets the
 * very address its message wants next and nothing is copied: one copy per
 * byte, the kernel's.  Only verified DATA payload of the streams bet on is
 * fed from a message buffer, so the only callbacks those pieces cause are
 * those streams' DATA callbacks, and a stream that ends (END_STREAM) is bet
 * on no further: the stream that preceded it (rx_prev_sid) bets on its
 * successor instead, as a server taking turns skips an ended stream.
 *
 * Watchdogs (I/O thread, on the loop's epoll timeout like the deadlines):
 *  - connect timeout: an attempt that has not received the server's SETTINGS
 *    by `connect_deadline` dies (UNAVAILABLE);
 *  - held calls: until the server's SETTINGS arrive (so a request is checked
 *    against its SETTINGS_MAX_HEADER_LIST_SIZE) and while output waits for
 *    the socket, new calls are not submitted to nghttp2 but held in order,
 *    their deadlines running; one that expires or is cancelled meanwhile
 *    ends without leaving a stream or an RST_STREAM in the session;
 *  - write stall: output waiting for a socket that took no byte for the
 *    channel's write_stall_timeout_ms kills the connection (UNAVAILABLE,
 *    "connection stalled: ..."), so a peer that stopped reading cannot make
 *    expired calls' frames and streams pile up without bound;
 *  - keepalive (off by default, as in grpcio): a PING after keepalive_time_ms
 *    without reading anything; no ACK within keepalive_timeout_ms kills it.
 *
 * Shared I/O thread: a channel given a tri_loop (tri_channel_opts.io_loop)
 * runs its connections on that loop's thread instead of one thread each.
 * The connection is then a loop member: the loop's outer epoll watches its
 * epfd, and each loop turn runs one iteration of the same body as the own
 * thread's loop (conn_iterate: events without waiting, ops, timers, output).
 * Its wake-ups go to the loop's eventfd, coalesced by the connection's
 * wake_pending and then the loop's flag, so calls to several backends share
 * one wake-up; it has no eventfd of its own.  The per-call path takes no lock
 * in either mode.  "Thread exits" below means "leaves the loop" for such a
 * connection, and joining waits for that (tri_loop_wait_left).
 *
 * Lifetime: created by the channel (reference 1 held by the channel), plus
 * one reference per call bound to it.  When it dies (peer gone, protocol
 * error, shutdown) every in-flight call completes with a status, later pushes
 * are refused, and the thread exits; the channel joins it (tri__conn_free)
 * once its own reference is dropped and no call holds one.
 */
#ifndef TRI_CONN_H
#define TRI_CONN_H

#include <netdb.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "tri_deadlines.h"
#include "tri_dial.h"
#include "tri_lookup.h"
#include "tri_h2_track.h"
#include "tri_hpack_filter.h"
#include "tri_int.h"
#include "tri_loop.h"
#include "tri_outq.h"
#include "tri_tls.h"

struct tri_conn {
  tri_channel *ch; /* borrowed; outlives the connection */
  tri_stats *stats;
  pthread_t thread;       /* own I/O thread; unused when `loop` is set */
  tri_loop *loop;         /* the channel's shared I/O loop (borrowed: the
                             channel's reference outlives the connection);
                             NULL: the connection runs its own thread */
  tri_loop_member member; /* with `loop`: fd = epfd, attached from creation
                             until the connection dies (tri_loop.h) */
  int started;            /* loop only: the first step opened the socket */
  int fd, epfd, evfd;
  _Atomic int refs;
  tri_mpsc ops;
  _Atomic int wake_pending;
  _Atomic int producers;   /* pushes in progress */
  _Atomic int closed;      /* pushes refused from now on */
  _Atomic int unusable;    /* no new calls: dead, dying or GOAWAY */
  _Atomic int shutdown_req;
  _Atomic int exited;      /* the thread function has returned */
  _Atomic int established; /* the server's SETTINGS arrived: the attempt worked */
  int64_t attempt_start;   /* when the connection attempt began (set at creation) */
  tri_conn *next_retired;  /* channel's retired list, under channel lock */
  int joined;              /* thread joined; under channel lock */

  /* I/O thread only. */
  nghttp2_session *sess;
  tri_arena arena;
  nghttp2_mem mem;
  int connected;           /* ready for HTTP/2 (TCP up, TLS done) */
  tri_dial dial;           /* connection attempts to the target's addresses
                              (tri_dial.h); `fd` is -1 until one wins */
  tri_lookup *lookup;      /* owned: the target's name being looked up off
                              a driven loop's thread (tri_lookup.h), before
                              `dial` starts; NULL otherwise */
  int detached;            /* test hook: no socket, no thread (see below) */
  int epollout;            /* EPOLLOUT currently armed */
  int64_t connect_deadline; /* die unless established by then; 0 once it is */
  int64_t write_since;     /* output has waited for the socket since this last
                              progress (ns); 0 when nothing waits */
  int64_t last_read;       /* bytes last arrived (keepalive's idle clock) */
  int64_t ping_sent;       /* keepalive PING unacknowledged since; 0 = none */
  uint32_t pings_without_data; /* PINGs sent since our last HEADERS or DATA */
  ssize_t detached_budget; /* detached only: bytes the fake socket takes before
                              it blocks; -1 = unlimited (output discarded) */
  SSL *ssl;                /* TLS channels: the session, NULL otherwise */
  int handshaking;         /* TCP is up, TLS handshake in progress */
  tri_buf *tls_out;        /* bytes copied for SSL_write, from tls_out_off */
  size_t tls_out_off;
  int dead;
  int goaway;
  uint32_t local_goaway_error; /* error code of a GOAWAY we sent */
  uint32_t peer_goaway_error;  /* error code of the server's GOAWAY (0: none) */
  tri_outq out;            /* output queue (tri_outq.h).  An entry's `ref`
                              is the unary call whose borrowed request bytes
                              `ptr` points into; its `buf` is the streaming
                              chunk it ends, released (and its call,
                              `buf_owner`, credited and unreferenced) once
                              written.  The entry array is the channel's
                              spare (TRI_SPARE_OUT); the queue never grows */
  tri_deadlines deadlines; /* of the calls that have one */
  tri_hpack_filter hpack_filter; /* which request metadata to index */
  tri_timeout_memo timeout_memo; /* the last request timeout value */
  int resets_unsent;             /* calls waiting for their RST_STREAM to go out
                                    (stream_closed: reset_unsent) */
  int nghttp2_rules;             /* test hook (tri__conn_nghttp2_rules): nghttp2
                                    applies the message rules, not tri_resp_check */
  int32_t rx_sid; /* the stream of the receive callbacks' last lookup
                     (0: none); rx_call is its call, borrowed from
                     nghttp2's stream data until the stream closes */
  tri_call *rx_call;
  tri_call *inflight;      /* calls the session knows, linked io_next */
  size_t inflight_n;       /* how many */
  size_t closed_since_flush; /* streams closed since the last flush */
  size_t closed_total;       /* streams closed, ever */
  size_t feed_slice;         /* bytes handed to nghttp2 at a time (feed) */
  int self_pushed;         /* ops pushed by this thread: do not sleep */
  int hook_ms;             /* the I/O hook's longest sleep (-1: none) */
  tri_call *held, *held_tail; /* calls not yet submitted: no SETTINGS yet or
                                 the output is blocked (FIFO, linked
                                 io_next/io_prev) */
  int tfd;                 /* timerfd for writer flush timers */
  int tfd_armed;
  tri_call *timers, *timers_tail; /* flush-timer FIFO (same delay for all) */
  uint8_t *rbuf;
  size_t rbuf_cap;
  int inplace_on;          /* in-place reads: plaintext and in_place_reads;
                              off, the tracker below is never fed */
  tri_h2_track track;      /* frame boundaries of the input fed so far */
  int32_t last_data_sid;   /* the stream of the last DATA frame received */
  uint32_t data_frame_max; /* the longest DATA frame received */
  char errstr[200];
};

/* Creates a connection and starts its I/O thread, which connects at once.
 * `connect_deadline` (CLOCK_MONOTONIC ns; 0 = none) bounds the attempt: it
 * fails unless the server's SETTINGS arrived by then.  On a channel with an
 * io_loop it attaches to the loop instead of starting a thread.  Returns 0,
 * TRI_ERR_NOMEM, TRI_ERR_SYSTEM, or TRI_ERR_FORKED (the loop was made before
 * fork(): no thread runs it here).  *out holds the channel's reference. */
int tri__conn_new(tri_conn **out, tri_channel *ch, int64_t connect_deadline);
/* Queues an op for the I/O thread and wakes it; pushed from that I/O thread
 * itself (an I/O hook), it only marks the loop to run again without sleeping. */
int tri__conn_push(tri_conn *conn, tri_node *node);
/* Wakes the I/O thread once with no op (it calls the channel's I/O hook). */
void tri__conn_kick(tri_conn *conn);
/* Wakes, now, the connections this thread's tri_wakes_defer_begin recorded
 * so far (the deferral itself goes on); called before any wait. */
void tri__wakes_flush(void);
/* Nonzero on an I/O thread (of any connection, or a shared loop's). */
int tri__conn_on_io_thread(void);
int tri__conn_unusable(tri_conn *conn);
void tri__conn_shutdown(tri_conn *conn);
/* Waits for the I/O thread to exit (it must be dead or shut down). */
void tri__conn_join(tri_conn *conn);
/* In a child of fork(), for a connection inherited from the parent (whose
 * I/O thread does not exist here): refuses pushes and closes this process's
 * copies of its descriptors (the parent's stay open).  The session, TLS state
 * and calls it holds may have been in the middle of a change when the parent
 * forked, so they are never touched again: the connection moves to a
 * process-wide list of abandoned connections (kept reachable, never freed)
 * and must not be used or freed by the caller afterwards. */
void tri__conn_abandon(tri_conn *conn);
/* Joins the thread and frees everything; the last reference must be gone. */
void tri__conn_free(tri_conn *conn);
void tri__conn_ref(tri_conn *conn);
/* Drops a reference.  Returns nothing: the channel frees retired
 * connections whose count reached zero. */
void tri__conn_unref(tri_conn *conn);
/* Called by tri__call_complete on the I/O thread: forget the call's deadline
 * and copy out any of its request bytes still queued for the socket. */
void tri__conn_call_finished(tri_conn *conn, tri_call *c);

/* Test and fuzzing hooks: a connection with no socket and no I/O thread,
 * driven by its caller, which plays the I/O thread (single-threaded use).
 *  - tri__conn_new_detached: session set up, our preface "sent" (discarded).
 *  - tri__conn_run_ops: processes queued ops (submits, cancels, data).
 *  - tri__conn_feed: feeds server bytes through the receive path; returns 0,
 *    TRI_ERR_HTTP2 (the connection died: every call failed), TRI_ERR_CLOSED.
 *  - tri__conn_kill: fails what is left with `code` and deletes the session;
 *    the connection is then freed like any other (tri__conn_free).
 *  - tri__conn_tick: one loop iteration without socket events (ops, flush
 *    timers, deadlines, watchdogs, output), as after an epoll timeout.
 *  - tri__conn_set_write_budget: makes the fake socket take `budget` more
 *    bytes and then block like a full socket (-1: take everything).
 *  - tri__conn_nghttp2_rules: nonzero when tri__conn_new_detached runs, that
 *    connection leaves the HTTP/2 message rules of responses to nghttp2 (its
 *    HTTP messaging on) instead of applying tri_resp_check: the reference the
 *    differential tests and the session fuzzer hold our rules to. */
extern int tri__conn_nghttp2_rules;
int tri__conn_new_detached(tri_conn **out, tri_channel *ch);
void tri__conn_run_ops(tri_conn *conn);
int tri__conn_feed(tri_conn *conn, const uint8_t *data, size_t len);
void tri__conn_kill(tri_conn *conn, int code, const char *why);
void tri__conn_tick(tri_conn *conn);
void tri__conn_set_write_budget(tri_conn *conn, ssize_t budget);

#endif
