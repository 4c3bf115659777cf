/*
 * server_int.h: the types the files of the embedded server share (see
 * tri_server.h for what the server does).  The server is a subsystem of its
 * own, one concept per file:
 *   runtime.c      the epoll loop: acceptor, workers, connections, the
 *                  nghttp2 session callbacks, stream lifetime, timers and
 *                  output (tri_outq), and the tri_server_* API;
 *   request.c      reading a call: request headers, gRPC and Triple bodies,
 *                  decompression, and handing the request to its service;
 *   respond.c      answering a call on its wire: headers, response queue and
 *                  data source, trailers, Triple bodies and errors;
 *   echo.c         benchmark.BenchmarkService (the echo);
 *   testservice.c  grpc.testing.TestService;
 *   ts_codec.c     the TestService's protobuf and protojson messages;
 *   misbehave.c    the x-misbehave fault modes.
 *
 * Ownership inside a worker: a srv_conn owns its socket, its nghttp2
 * session, its streams (list `streams`) and its output queue.  A srv_stream
 * owns its request buffers and its response queue (q_head..q_tail, buffers
 * from the server's pool).  A response buffer leaves the stream when its
 * last byte is framed: if DATA frames point into it (NO_COPY), ownership
 * moves to the output entry of that last frame and the buffer returns to
 * the pool once the socket has taken those bytes.  nghttp2_session_del calls
 * no callbacks, so closing a connection frees its streams from our list.
 * Everything of a connection is touched by its worker thread only.
 */
#ifndef TRI_SERVER_INT_H
#define TRI_SERVER_INT_H

#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server/ts_codec.h"
#include "tri_buf.h"
#include "tri_deadlines.h"
#include "tri_frame.h"
#include "tri_gzip.h"
#include "tri_mem.h"
#include "tri_outq.h"
#include "tri_server.h"

#define STREAM_OUT_LIMIT (4u << 20) /* stop crediting input above this */
#define MAX_STATUS_MSG TRI_TS_MAX_STATUS_MSG /* longest status message kept */

enum { WIRE_NONE = 0, WIRE_GRPC, WIRE_TRIPLE };
enum { ENC_NONE = 0, ENC_IDENTITY, ENC_GZIP, ENC_OTHER };
/* Methods: benchmark.BenchmarkService (M_*) and grpc.testing.TestService
 * (T_*). */
enum {
  M_UNKNOWN = 0,
  M_UNARY,
  M_STREAM,
  T_EMPTY,  /* EmptyCall */
  T_UNARY,  /* UnaryCall */
  T_SOUT,   /* StreamingOutputCall */
  T_SIN,    /* StreamingInputCall */
  T_FULL,   /* FullDuplexCall */
  T_HALF,   /* HalfDuplexCall */
  T_UNIMPL  /* UnimplementedCall */
};

/* One queued answer of a streaming TestService call: a response message
 * after interval_us, or the end of the call with `code` (st->msg). */
typedef struct srv_job {
  uint32_t size;
  int32_t interval_us;
  int32_t type;  /* PayloadType of the response */
  int32_t code;  /* JOB_STATUS */
  int8_t gz;     /* -1: the default rule */
  uint8_t kind;
} srv_job;
enum { JOB_MSG = 0, JOB_STATUS };

/* x-misbehave modes (tri_server.h). */
enum {
  MB_NONE = 0,
  MB_RST_MID,     /* rst-mid-response */
  MB_GOAWAY,      /* goaway */
  MB_BAD_HPACK,   /* bad-hpack */
  MB_BAD_STATUS,  /* bad-grpc-status */
  MB_WRONG_CT,    /* wrong-content-type */
  MB_TINY_WINDOW, /* tiny-window */
  MB_NEVER        /* never-answer */
};

/* Where an echoed metadata pair goes. */
enum { MD_INITIAL = 1, MD_TRAILING = 2, MD_BOTH = 3 };

typedef struct srv_conn srv_conn;
typedef struct srv_worker srv_worker;
typedef struct srv_stream srv_stream;

struct srv_stream {
  srv_conn *conn;
  int32_t id;
  srv_stream *prev, *next; /* conn->streams */
  srv_stream *owe_next;    /* conn->owing, while on_owing */
  int timer_slot;          /* in the worker's timers, -1 when absent */
  int64_t hold_until;      /* x-delay-ms: the answer starts then (0: none) */
  int64_t deadline;        /* grpc-timeout / triple-timeout-ms (0: none) */

  /* Request headers. */
  uint8_t wire, method;
  unsigned is_post : 1, json : 1, go : 1, req_ended : 1, finished : 1,
      headers_sent : 1, deferred : 1, on_owing : 1, q_ref : 1, reset : 1,
      msg_bin : 1;
  /* Compression (gzip only): what the request said and what we answer. */
  uint8_t grpc_enc, content_enc; /* ENC_*: grpc-encoding, content-encoding */
  unsigned grpc_accept_gz : 1, http_accept_gz : 1, x_compress : 1,
      req_gz : 1,   /* the request is compressed (its encoding is gzip) */
      accept_gz : 1, /* the client accepts gzip responses (on its wire) */
      gz_out : 1,   /* compress every response (the default rule) */
      gz_hdr : 1,   /* gRPC: send grpc-encoding: gzip */
      cur_gz : 1,   /* the message being received has flag 0x01 */
      body_gz : 1;  /* the unary request message arrived compressed */
  uint32_t hdr_bytes;      /* HPACK size of the request headers so far
                              (saturating) */
  int bad_code;            /* first header problem, answered at end (0: none) */
  char bad_msg[160];
  char ct[96];             /* request content-type (Triple echoes it) */
  size_t ct_len;
  char path[96];           /* for error messages; truncated */
  size_t path_len;
  int ctl_status;          /* x-status, -1: none */
  int64_t delay_ms;        /* x-delay-ms */
  int64_t resp_size;       /* x-response-size, -1: echo */
  int64_t clen;            /* content-length, -1: none */
  tri_buf *md;             /* echoed metadata records: u32 klen, u32 vlen,
                              u8 MD_* (where it goes), k, v */
  size_t echo_n;
  tri_buf *msg;            /* status message (raw bytes) */

  /* Request body. */
  tri_frame_decoder dec;
  tri_buf *cur;            /* gRPC message being received: prefix + payload */
  tri_buf *body;           /* gRPC unary request message / Triple body */
  int nmsg;                /* gRPC messages received */
  int64_t owed;            /* bytes received, not yet credited to the peer */

  /* TestService: queued answers of a streaming call (jobs[jobs_head ..
   * jobs_n)), the time the head one is due (0: not timed), and the total
   * of StreamingInputCall. */
  srv_job *jobs;
  uint32_t jobs_head, jobs_n, jobs_cap;
  int64_t job_due;
  int64_t agg;
  uint8_t mb;                /* x-misbehave: MB_* */
  unsigned rst_armed : 1,    /* rst-mid-response: RST once the queue drains */
      never : 1,             /* never-answer: the stream is left alone */
      plain_end : 1,         /* END_STREAM on the last DATA, no trailers */
      pump_blocked : 1,      /* jobs wait for queued output to drain */
      status_queued : 1;     /* a JOB_STATUS is queued: later requests are
                                ignored */

  /* Response. */
  int status;              /* final code, once finished */
  tri_buf *q_head, *q_tail; /* bytes not yet framed, from q_off in q_head */
  size_t q_off;
  size_t q_bytes;
};

struct srv_conn {
  srv_worker *w;
  int fd;
  nghttp2_session *sess;
  tri_arena arena; /* nghttp2's allocations (this worker only) */
  nghttp2_mem mem;
  tri_outq out;    /* pending output; an entry's `buf` is a response
                      buffer that DATA frames pointed into, freed once
                      written */
  srv_stream *streams;
  srv_stream *owing; /* streams with owed > 0 */
  int64_t conn_owed; /* bytes of closed streams to credit to the connection */
  int n_blocked;     /* streams with pump_blocked */
  int64_t linger_min, linger_max; /* after our x-misbehave GOAWAY, or while
                                     closing (0: none) */
  unsigned tiny : 1;              /* tiny-window was applied */
  unsigned closing : 1;           /* session over, our FIN out: input read
                                     and dropped until the peer's EOF or
                                     linger_max */
  unsigned epollout : 1, dirty : 1, dead : 1;
  srv_conn *prev, *next, *dirty_next;
};

struct srv_worker {
  tri_server *srv;
  pthread_t thread;
  int running; /* thread created (controlling thread) */
  int epfd, evfd;
  nghttp2_session_callbacks *cbs;
  nghttp2_option *opt;
  uint8_t *rbuf;
  pthread_mutex_t lock; /* guards pend/pend_n/pend_cap */
  int *pend;            /* sockets handed over by the acceptor */
  size_t pend_n, pend_cap;
  /* Worker thread only. */
  srv_conn *conns, *dirty;
  tri_deadlines timers;  /* streams by when they next need the worker */
  int n_linger;      /* connections with linger_max set */
  srv_stream *spare; /* free stream objects, linked by next */
  size_t spare_n;
  tri_buf *scratch;  /* header strings being built */
};

struct tri_server {
  tri_server_opts opts; /* host points into hostbuf */
  char hostbuf[256];
  tri_stats stats;
  tri_pool pool;
  tri_gzip_pool zp; /* gzip streams shared by the workers (thread-safe) */
  int lfd, stop_fd, port;
  int started, stopped, acceptor_running;
  pthread_t acceptor;
  _Atomic int stopping;
  srv_worker *workers;
  int nworkers;
  unsigned rr; /* acceptor thread only */
  char errstr[200];
};

static inline tri_pool *pool_of(srv_conn *c) { return &c->w->srv->pool; }
static inline tri_stats *stats_of(srv_conn *c) { return &c->w->srv->stats; }

#endif
