/*
 * tri_int.h: the internal structures shared by tri_call, tri_conn and
 * tri_channel.  Not part of the public API; fields are documented with the
 * thread that may touch them.
 */
#ifndef TRI_INT_H
#define TRI_INT_H

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tri_backoff.h"
#include "tri_buf.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_clock.h"
#include "tri_frame.h"
#include "tri_gzip.h"
#include "tri_hpack_filter.h"
#include "tri_mem.h"
#include "tri_mpsc.h"
#include "tri_resp_check.h"
#include "tri_stats.h"
#include "tri_wire.h"
#include "tri_writer.h"

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))

typedef struct tri_conn tri_conn;

/* The largest header buffer a pooled call struct keeps for its next call
 * (tri_call.hdr_spare): the usual path and metadata fit; a call with much
 * metadata gives its bigger buffer back to the pool. */
#define TRI_CALL_HDR_KEEP ((size_t)4096)

/* One queued request from a caller to an I/O thread, embedded in a call.
 * Every op except SUBMIT carries a reference of its own on the call. */
enum {
  TRI_OP_SUBMIT = 1, /* start the stream (carries the I/O reference) */
  TRI_OP_CANCEL,     /* reset the stream with cancel_code */
  TRI_OP_DATA,       /* the writer queued chunks and/or the end of stream */
  TRI_OP_TIMER,      /* bytes wait in the writer: start its flush timer */
  TRI_OP_CREDIT      /* the reader freed receive space: update the window */
};
typedef struct tri_op {
  tri_node node;
  int kind; /* TRI_OP_* */
} tri_op;

struct tri_call {
  /* Set by the caller before start; read-only afterwards. */
  tri_channel *ch;
  tri_conn *conn;       /* counted reference, taken at start */
  int flags;            /* TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING */
  int64_t deadline;     /* CLOCK_MONOTONIC ns; 0 = none */
  tri_buf *hdr;         /* path, then metadata records (see tri_call.c) */
  /* A header buffer kept for the next call made from this struct: a call
   * the channel pools (tri__channel_call_put) keeps its `hdr` here (when at
   * most TRI_CALL_HDR_KEEP bytes), so the next tri_call_new takes no pool
   * buffer.  Owned by the struct; survives tri__channel_call_get's reset;
   * given back to the pool when the struct is freed. */
  tri_buf *hdr_spare;
  size_t path_len;
  const uint8_t *seg0;  /* unary: envelope prefix when not in the buffer */
  size_t seg0_len;
  const uint8_t *seg1;  /* unary: payload (prefix included when in headroom) */
  size_t seg1_len;
  uint8_t prefix[TRI_FRAME_PREFIX];
  char timeout[TRI_TIMEOUT_MAX]; /* grpc-timeout value; NO_COPY, so it lives here */
  char clen[24];        /* content-length value of a unary request (NO_COPY) */
  tri_buf *req;         /* owned request buffer, or NULL when borrowed */
  void *token;
  int notify;           /* TRI_EV_* mask of events to report, 0 = none */
  _Atomic int notify_queued; /* on the channel's completion queue now */
  int notify_final;          /* the token taken last was the call's last one (it
                                was done when taken); written by the poller
                                holding the channel's poll_lock */
  int started;          /* tri_call_start was called */
  int triple;           /* unary call on the Triple wire (fast path, or
                           TRI_CALL_UNARY_BODY through the writer) */
  _Atomic int triple_written; /* TRI_CALL_UNARY_BODY: the one write was made */
  int compress;         /* TRI_COMPRESS_* for the request */

  /* Cross-thread. */
  _Atomic int refs;       /* caller + I/O thread + queued ops */
  _Atomic int done;       /* futex word: 1 once results are published */
  _Atomic int waiters;    /* threads sleeping on `done` */
  int handoff;            /* set before start: waiters woken by tri_handoff */
  _Atomic uint32_t hstate; /* TRI_HS_* of tri_handoff.h */
  tri_call *hnext;        /* tri_handoff's queue link (under its lock) */
  _Atomic int cancel_req; /* cancel already queued */
  int cancel_code;        /* written before cancel_req is set */
  const char *cancel_msg;
  tri_op submit_op;
  tri_op cancel_op;
  tri_node notify_node;

  /* Client streaming: the coalescing writer and its hand-off to the I/O
   * thread.  `unsent` counts bytes handed over and not yet written to the
   * socket; writers wait on `send_seq` while it is over `send_limit`. */
  tri_writer writer;
  tri_mpsc chunkq;
  _Atomic int end_requested;
  _Atomic int data_queued;
  _Atomic int timer_queued;
  _Atomic int credit_queued;
  tri_op data_op, timer_op, credit_op;
  _Atomic int64_t unsent;
  int64_t send_limit;
  _Atomic uint32_t send_seq;
  _Atomic int send_waiters;

  /* Server streaming: complete messages waiting for the reader (rlock), and
   * bytes not yet credited back to the peer's flow-control window. */
  pthread_mutex_t rlock;
  tri_buf *recvq, *recvq_tail;
  _Atomic int64_t recvq_bytes;
  _Atomic int64_t owed;
  _Atomic uint32_t recv_seq; /* futex: bumped on message, headers, completion */
  _Atomic int recv_waiters;
  _Atomic int readers;       /* of those, threads waiting in tri_call_read (the
                                writer's Nagle rule: see wait_message) */
  _Atomic int headers_done;  /* initial metadata (imd) is final */
  int response_started;      /* the response headers were not trailers-only:
                                written by the I/O thread before headers_done
                                is set, read only after it is */

  /* I/O thread only. */
  int32_t stream_id;
  size_t sent;          /* unary: request bytes given to nghttp2 */
  size_t queued;        /* unary: borrowed bytes in the output queue */
  tri_buf *sendq, *sendq_tail; /* streaming: chunks not yet fully framed */
  size_t sendq_off;     /* bytes of the head chunk already framed */
  int deadline_slot;    /* slot in the connection's deadlines, -1 when absent */
  int64_t timer_at;     /* flush-timer expiry */
  tri_call *timer_next; /* flush-timer FIFO */
  int http_status;
  int grpc_status;      /* -1 none, -2 unparsable */
  uint32_t block_bytes; /* HPACK size of the header block being received */
  tri_resp_check rcheck; /* the response's HTTP/2 message rules so far */
  char bad_ct[40];      /* gRPC wire: the start of a content-type that is not
                           application/grpc*, for the error message */
  unsigned completed : 1;   /* final status decided */
  unsigned io_released : 1; /* I/O thread dropped its reference */
  unsigned in_session : 1;  /* nghttp2 holds this call as stream data */
  unsigned got_message : 1;
  unsigned bad_content_type : 1;
  unsigned half_close : 1;  /* end of the request stream was handed over */
  unsigned deferred : 1;    /* data provider returned DEFERRED */
  unsigned in_timer : 1;    /* on the flush-timer FIFO */
  unsigned held : 1;        /* waits to be submitted: the connection's output
                               is blocked (its held list, io_prev/io_next) */
  unsigned resp_gzip : 1;   /* the peer compresses responses (gzip or deflate) */
  unsigned resp_deflate : 1; /* ...with deflate (zlib format), not gzip */
  unsigned resp_enc_unknown : 1; /* ...with an encoding we do not have */
  unsigned block_has_status : 1; /* the header block being received has
                                    :status (a response, not trailers) */
  unsigned msg_compressed : 1;   /* the message being received has flag 0x01 */
  unsigned discard : 1;     /* TRI_CALL_DISCARD_BODY on a unary response */
  unsigned counting : 1;    /* the message in progress is counted, not kept */
  unsigned malformed : 1;   /* the response broke a message rule (rcheck): its
                               stream is reset with PROTOCOL_ERROR and the rest
                               of it ignored */
  unsigned reset_unsent : 1; /* ...and the stream closed before that reset went
                                out: still in flight until it does */
  unsigned unprocessed : 2; /* TRI_UNPROCESSED_* (tri_call_unprocessed): set
                               before `done`, by whoever completes the call */

  tri_frame_decoder dec;
  int32_t rx_next_sid; /* I/O thread: the stream whose DATA frame followed
                          this call's last one (tri_inplace.h); 0: none */
  int32_t rx_prev_sid; /* I/O thread: the stream whose DATA frame preceded this
                          call's last one; 0: none */
  tri_call *io_prev, *io_next; /* connection's in-flight (or held) list */

  /* Results (I/O thread writes before `done`; caller reads after). */
  int code;
  tri_buf *resp;        /* response payload (unary response), or message in progress */
  size_t resp_size;     /* DISCARD_BODY: payload bytes of the message counted */
  tri_buf *imd;         /* initial metadata records, final once headers_done */
  tri_buf *md;          /* trailing metadata records and the status message */
  size_t msg_off, msg_len; /* status message within md */
  unsigned msg_lost : 1;   /* out of memory storing the status message */
};

struct tri_channel {
  tri_channel_opts opts; /* strings point into `strings` */
  char *strings;
  tri_stats stats;
  tri_pool pool;
  pthread_mutex_t lock;  /* guards conn, retired, closed */
  pthread_mutex_t call_lock; /* guards call_free, call_free_n */
  tri_conn *conn;        /* current connection or NULL */
  tri_conn *retired;     /* dead connections waiting to be joined/freed */
  _Atomic int closed;    /* written under lock; read without it */
  _Atomic int handoff_refs; /* references tri_handoff's queue holds on its calls */
  unsigned fork_gen;     /* tri_fork_generation() at creation (tri_fork.h) */
  tri_backoff backoff;   /* under lock: consecutive failed attempts */
  int64_t next_attempt;  /* under lock: no attempt before this (ns); 0: none */
  char connect_error[200]; /* under lock: why the last attempt failed */
  pthread_mutex_t spare_lock; /* guards spare, spare_block (a leaf lock) */
  /* What finished connections leave for the next ones: two of each, since a
   * new connection usually starts while the one it replaces is still dying. */
  tri_arena spare[2];    /* free nghttp2 blocks */
  void *spare_block[2][2]; /* buffers, [TRI_SPARE_*][slot] */
  tri_call *call_free;   /* call pool (linked through io_next) */
  tri_gzip_pool zpool;   /* zlib streams for compression both ways */
  SSL_CTX *ssl_ctx;      /* TLS channels only */
  size_t call_free_n;
  /* Completion queue for notified calls. */
  tri_mpsc completions;
  int notify_fd;         /* eventfd */
  _Atomic int notify_pending;
  _Atomic int poll_wake;   /* tri_channel_wake_pollers: pollers return now */
  pthread_mutex_t poll_lock; /* guards ready_head/ready_tail */
  tri_node *ready_head, *ready_tail; /* taken from `completions`, not yet returned */
  _Atomic(const tri_io_hook *) io_hook; /* borrowed; see tri_channel_set_io_hook */
};

/* Internal API between the three files. */

/* Call: invoked by the I/O thread. */
void tri__call_complete(tri_call *c, int code, const char *fmt, ...);
void tri__call_unref(tri_call *c);
int tri__call_on_header(tri_call *c, const nghttp2_frame *frame,
                        const uint8_t *name, size_t namelen,
                        const uint8_t *value, size_t valuelen);
/* In-place reads (tri_conn.c): when `c` is reassembling a gRPC message into
 * a buffer, sets *dst to where its next body byte goes and returns how many
 * body bytes are still to come; 0 otherwise.  Bytes placed there and then
 * handed to tri__call_on_data at that same address are kept without a copy.
 * I/O thread. */
size_t tri__call_body_room(tri_call *c, uint8_t **dst);
/* Returns a status code (>0) when the data is bad and the call must fail. */
int tri__call_on_data(tri_call *c, const uint8_t *data, size_t len,
                      int64_t max_recv);
/* The I/O thread finished writing a chunk of c's request stream. */
void tri__call_chunk_written(tri_call *c, tri_buf *chunk);
/* Frees every stream resource (queues, writer); at the last unref. */
void tri__call_free_streams(tri_call *c);
void tri__call_on_close(tri_call *c, uint32_t error_code);
/* The initial response headers are complete (readers may look at them). */
void tri__call_headers_done(tri_call *c);
/* Builds the request header block into nva (capacity cap).  Returns count.
 * The call's metadata that `filter` has not seen recently is marked not to be
 * indexed (tri_hpack_filter.h); NULL indexes all of it.  The timeout value
 * comes through `memo` (tri_timeout_memo; NULL: none kept). */
size_t tri__call_headers(tri_call *c, nghttp2_nv *nva, size_t cap,
                         tri_hpack_filter *filter, tri_timeout_memo *memo);
size_t tri__call_header_count(const tri_call *c);

/* Channel: invoked by calls. */
tri_call *tri__channel_call_get(tri_channel *ch);
void tri__channel_call_put(tri_channel *ch, tri_call *c);
/* Puts a referenced usable connection in *out, opening one (retiring the
 * current one if it is unusable or is `avoid`).  Returns 0; TRI_ERR_CLOSED
 * once the channel is closed; TRI_ERR_BACKOFF while connection attempts back
 * off; TRI_ERR_NOMEM or TRI_ERR_SYSTEM when no connection could be made.  On
 * error `why` (why_len bytes) says what happened. */
int tri__channel_conn(tri_channel *ch, tri_conn *avoid, tri_conn **out,
                      char *why, size_t why_len);
void tri__channel_notify(tri_channel *ch, tri_call *c);
/* A connection's nghttp2 arena, once its session is gone, goes back to the
 * channel (put), and the next connection starts with those blocks (take): a
 * reconnect does not free and re-allocate a session's worth of blocks (which
 * fragments the C heap; each I/O thread allocates from a malloc arena of its
 * own).  Two arenas are kept, the larger ones: put frees the smallest.
 * `a` must be owned by the calling thread; put leaves it empty, take needs
 * it empty. */
void tri__channel_arena_put(tri_channel *ch, tri_arena *a);
void tri__channel_arena_take(tri_channel *ch, tri_arena *a);
/* Likewise for a connection's fixed-size buffers, one kept per kind: take
 * returns one (or NULL: allocate one), put keeps `p` (NULL is ignored) or
 * frees it when two are kept already.  Blocks come from tri_mem_alloc. */
enum { TRI_SPARE_RBUF = 0, TRI_SPARE_OUT = 1 };
void *tri__channel_spare_take(tri_channel *ch, int kind);
void tri__channel_spare_put(tri_channel *ch, int kind, void *p);

#endif
