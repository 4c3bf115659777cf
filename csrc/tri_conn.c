/*
 * tri_conn.c: the connection's I/O thread (see tri_conn.h for the design).
 */
#include "tri_conn.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tri_error.h"
#include "tri_handoff.h"
#include "tri_h2.h"
#include "tri_inplace.h"
#include "tri_resp_check.h"
#include "tri_thread.h"
#include "tri_wire.h"

#define OUT_MAX 1000               /* iovecs per writev (IOV_MAX is 1024) */
#define PULL_MAX_BYTES (4u << 20)  /* stop pulling frames beyond this */
#define RBUF_SIZE (256u << 10)
#define FEED_SLICE 4096u           /* bytes handed to nghttp2 at a time (see feed) */
#define FEED_SLICE_MAX (64u << 10) /* ...at most, when responses are large */
#define PIPELINE_MIN_CALLS 8       /* fewest completions worth a write mid-read */
#define MAX_HEADERS 64             /* header fields on the stack; more are allocated */
/* Request header lists (HPACK's size: name + value + 32 per field) over this,
 * or over the server's SETTINGS_MAX_HEADER_LIST_SIZE, end the call with
 * RESOURCE_EXHAUSTED before anything is sent: a server would refuse them
 * with that status (grpc's), and some close the connection as well.  nghttp2
 * may send blocks up to twice this (its own default of 64 KiB is lifted). */
#define MAX_HEADER_LIST (1u << 20)
#define MS 1000000LL               /* ns per ms */
#define OOM_HTTP2 "out of memory in the HTTP/2 session"

/* ---- references and the op queue (any thread) ------------------------ */

void tri__conn_ref(tri_conn *conn) { atomic_fetch_add(&conn->refs, 1); }

void tri__conn_unref(tri_conn *conn) { atomic_fetch_sub(&conn->refs, 1); }

int tri__conn_unusable(tri_conn *conn) { return atomic_load(&conn->unusable); }

/* Batched wake-ups of this thread (tri_wakes_defer_begin, tri_call.h): the
 * connections it queued ops on during the burst, each with a reference, and
 * whether it owes one a wake-up at the end. */
#define DEFER_MAX 16
static __thread int defer_depth;
static __thread int n_deferred;
static __thread struct {
  tri_conn *conn;
  int owed;
} deferred[DEFER_MAX];

static void wake_now(tri_conn *conn);

static void wake(tri_conn *conn) {
  if (defer_depth) {
    for (int i = 0; i < n_deferred; i++)
      if (deferred[i].conn == conn) {
        /* The I/O thread took the burst's earlier ops (it cleared the flag):
         * this one waits for the end of the burst. */
        if (!atomic_load(&conn->wake_pending)) deferred[i].owed = 1;
        return;
      }
    if (n_deferred < DEFER_MAX) { /* the burst's first op here: woken at once */
      tri__conn_ref(conn);
      deferred[n_deferred].conn = conn;
      deferred[n_deferred++].owed = 0;
    }
  }
  wake_now(conn);
}

void tri_wakes_defer_begin(void) { defer_depth++; }

void tri_wakes_defer_end(void) {
  if (defer_depth && !--defer_depth) tri__wakes_flush();
}

void tri__wakes_flush(void) {
  int n = n_deferred;
  n_deferred = 0;
  for (int i = 0; i < n; i++) {
    tri_conn *conn = deferred[i].conn;
    if (deferred[i].owed) tri__conn_kick(conn); /* as a push would (its eventfd may be closed) */
    tri__conn_unref(conn);
  }
}

static void wake_now(tri_conn *conn) {
  if (atomic_exchange(&conn->wake_pending, 1)) return; /* already pending */
  if (conn->loop) { /* shared thread: one eventfd write for all its members */
    if (tri_loop_wake(conn->loop)) TRI_STATS_ADD(conn->stats, wakeups, 1);
    return;
  }
  uint64_t one = 1;
  ssize_t w = write(conn->evfd, &one, sizeof(one));
  (void)w;
  TRI_STATS_ADD(conn->stats, wakeups, 1);
}

/* The connection whose I/O thread this is (NULL on other threads). */
static __thread tri_conn *io_self;

int tri__conn_on_io_thread(void) {
  return io_self != NULL || tri_loop_on_thread();
}

int tri__conn_push(tri_conn *conn, tri_node *node) {
  if (io_self == conn) { /* from an I/O hook: processed before we sleep */
    if (conn->dead) return TRI_ERR_CLOSED;
    tri_mpsc_push(&conn->ops, node);
    conn->self_pushed = 1;
    return 0;
  }
  atomic_fetch_add(&conn->producers, 1);
  if (atomic_load(&conn->closed)) {
    atomic_fetch_sub(&conn->producers, 1);
    return TRI_ERR_CLOSED;
  }
  tri_mpsc_push(&conn->ops, node);
  wake(conn);
  atomic_fetch_sub(&conn->producers, 1);
  return 0;
}

void tri__conn_kick(tri_conn *conn) {
  atomic_fetch_add(&conn->producers, 1);
  if (!atomic_load(&conn->closed)) wake_now(conn);
  atomic_fetch_sub(&conn->producers, 1);
}

void tri__conn_shutdown(tri_conn *conn) {
  atomic_store(&conn->shutdown_req, 1);
  atomic_store(&conn->unusable, 1);
  /* Wake it like a push does, so the eventfd cannot be closed under us. */
  atomic_fetch_add(&conn->producers, 1);
  if (!atomic_load(&conn->closed)) {
    atomic_store(&conn->wake_pending, 0);
    wake_now(conn);
  }
  atomic_fetch_sub(&conn->producers, 1);
}

/* ---- deadlines (I/O thread) ------------------------------------------ */

/* Gives `c` its slot in the deadlines.  Returns 0 or TRI_ERR_NOMEM. */
static int deadline_add(tri_conn *conn, tri_call *c) {
  int slot = tri_deadlines_add(&conn->deadlines, c, c->deadline);
  if (slot < 0) return slot;
  c->deadline_slot = slot;
  return 0;
}

static void deadline_remove(tri_conn *conn, tri_call *c) {
  tri_deadlines_remove(&conn->deadlines, c->deadline_slot);
  c->deadline_slot = -1;
}

/* ---- output queue (I/O thread) ---------------------------------------- */

static int staging_append(tri_conn *conn, const void *p, size_t n) {
  return tri_outq_stage(&conn->out, p, n);
}

/* A written (or discarded) entry that ends a request-stream chunk. */
static void chunk_entry_done(tri_outq_entry *e) {
  if (!e->buf) return;
  tri__call_chunk_written(e->buf_owner, e->buf);
  tri__call_unref(e->buf_owner);
  e->buf = NULL;
}

/* A written entry (tri_outq_written, and TLS's copy). */
static void entry_written(tri_outq_entry *e, void *unused) {
  tri_call *c = e->ref;
  if (c) c->queued -= e->len;
  chunk_entry_done(e);
}

/* The first n bytes of an entry were written. */
static void entry_part_written(tri_outq_entry *e, size_t n, void *unused) {
  tri_call *c = e->ref;
  if (c) c->queued -= n;
}

/* A discarded entry (the connection died). */
static void entry_dropped(tri_outq_entry *e, void *unused) {
  tri_call *c = e->ref;
  if (c) c->queued = 0;
  chunk_entry_done(e);
}

void tri__conn_call_finished(tri_conn *conn, tri_call *c) {
  if (c->deadline_slot >= 0) deadline_remove(conn, c);
  if (!c->queued) return;
  /* Copy the call's still-unwritten request bytes into staging so that the
   * caller may free them now.  Staging may move; entries use offsets. */
  tri_outq *q = &conn->out;
  for (size_t i = q->head; i < q->n; i++) {
    tri_outq_entry *e = &q->e[i];
    if (e->ref != c) continue;
    size_t at = q->staging->len;
    if (tri_buf_append(q->pool, &q->staging, e->ptr, e->len)) {
      /* Cannot keep the bytes: the stream's frames can't be completed, so
       * the connection cannot continue either. */
      q->pending -= e->len;
      e->len = 0;
      atomic_store(&conn->unusable, 1);
    }
    e->ptr = NULL;
    e->off = at;
    e->ref = NULL;
  }
  c->queued = 0;
}

static void out_reset(tri_conn *conn) {
  tri_outq_drop(&conn->out, entry_dropped, NULL);
}

/* ---- dying -------------------------------------------------------------- */

static void io_release(tri_conn *conn, tri_call *c) {
  (void)conn;
  if (c->io_released) return;
  c->io_released = 1;
  tri__call_unref(c);
}

static void inflight_add(tri_conn *conn, tri_call *c) {
  conn->inflight_n++;
  c->io_prev = NULL;
  c->io_next = conn->inflight;
  if (conn->inflight) conn->inflight->io_prev = c;
  conn->inflight = c;
}

static void inflight_remove(tri_conn *conn, tri_call *c) {
  conn->inflight_n--;
  conn->closed_since_flush++;
  conn->closed_total++;
  if (c->io_prev) c->io_prev->io_next = c->io_next;
  else conn->inflight = c->io_next;
  if (c->io_next) c->io_next->io_prev = c->io_prev;
  c->io_prev = c->io_next = NULL;
}

static void process_ops(tri_conn *conn);

/* Calls held back while the output is blocked (see tri_conn.h). */
static void held_add(tri_conn *conn, tri_call *c) {
  c->held = 1;
  c->io_next = NULL;
  c->io_prev = conn->held_tail;
  if (conn->held_tail) conn->held_tail->io_next = c;
  else conn->held = c;
  conn->held_tail = c;
}

static void held_remove(tri_conn *conn, tri_call *c) {
  if (c->io_prev) c->io_prev->io_next = c->io_next;
  else conn->held = c->io_next;
  if (c->io_next) c->io_next->io_prev = c->io_prev;
  else conn->held_tail = c->io_prev;
  c->io_prev = c->io_next = NULL;
  c->held = 0;
}

/* Drops the flush timers (each holds a reference on its call). */
static void drop_timers(tri_conn *conn) {
  while (conn->timers) {
    tri_call *c = conn->timers;
    conn->timers = c->timer_next;
    c->in_timer = 0;
    atomic_store(&c->timer_queued, 0);
    tri__call_unref(c);
  }
  conn->timers_tail = NULL;
}

/* Fails every call with `code` and marks the connection dead.  The session
 * is deleted by the thread's exit path. */
static void die(tri_conn *conn, int code, const char *why) {
  if (conn->dead) return;
  conn->dead = 1;
  /* The cause first: the channel reads it once it sees `unusable`. */
  if (why && why != conn->errstr)
    snprintf(conn->errstr, sizeof(conn->errstr), "%s", why);
  atomic_store(&conn->unusable, 1);
  /* Before the server's SETTINGS no request reached its application. */
  int established = atomic_load(&conn->established);
  for (tri_call *c = conn->inflight; c; c = c->io_next) {
    if (!c->completed && !established) c->unprocessed = TRI_UNPROCESSED_NO_CONNECTION;
    tri__call_complete(c, code, "%s", conn->errstr);
  }
  while (conn->held) {
    tri_call *c = conn->held;
    if (!c->completed) /* never submitted */
      c->unprocessed = established ? TRI_UNPROCESSED_REFUSED : TRI_UNPROCESSED_NO_CONNECTION;
    tri__call_complete(c, code, "%s", conn->errstr);
    held_remove(conn, c);
    io_release(conn, c);
  }
  out_reset(conn);
  /* Refuse new pushes, wait out pushes in progress, then fail the rest. */
  atomic_store(&conn->closed, 1);
  while (atomic_load(&conn->producers)) sched_yield();
  process_ops(conn);
  drop_timers(conn);
  while (conn->inflight) {
    tri_call *c = conn->inflight;
    inflight_remove(conn, c);
    c->in_session = 0;
    io_release(conn, c);
  }
}

/* The target as error messages name it: host:port, or unix:path. */
static const char *target_name(const tri_channel_opts *o, char *buf, size_t n) {
  if (o->address_kind == TRI_ADDRESS_TCP)
    snprintf(buf, n, "%s:%s", o->host, o->port);
  else
    snprintf(buf, n, "%s:%s", o->address_kind == TRI_ADDRESS_UNIX ? "unix" : "unix-abstract",
             o->host);
  return buf;
}

/* ---- nghttp2 callbacks (I/O thread, inside mem_send / mem_recv) -------- */

static tri_call *stream_call(tri_conn *conn, int32_t stream_id) {
  return nghttp2_session_get_stream_user_data(conn->sess, stream_id);
}

/* stream_call for the receive callbacks, which come in runs for one stream
 * (a header block's fields, a frame's chunks): the last stream's call is
 * remembered until that stream closes (on_stream_close). */
static tri_call *recv_call(tri_conn *conn, int32_t stream_id) {
  if (stream_id != conn->rx_sid) {
    conn->rx_call = stream_call(conn, stream_id);
    conn->rx_sid = stream_id;
  }
  return conn->rx_call;
}

static ssize_t unary_read(nghttp2_session *s, int32_t stream_id, uint8_t *buf,
                          size_t length, uint32_t *flags,
                          nghttp2_data_source *src, void *user) {
  (void)s, (void)stream_id, (void)buf, (void)user;
  tri_call *c = src->ptr;
  if (c->completed) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t total = c->seg0_len + c->seg1_len;
  size_t n = total - c->sent;
  if (n > length) n = length;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (c->sent + n == total) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

/* Request body of a client-streaming call: the chunks the writer sealed, sent
 * NO_COPY; DEFERRED while none is queued and the stream is not half-closed. */
static ssize_t stream_read(nghttp2_session *s, int32_t stream_id, uint8_t *buf,
                           size_t length, uint32_t *flags,
                           nghttp2_data_source *src, void *user) {
  (void)s, (void)stream_id, (void)buf, (void)user;
  tri_call *c = src->ptr;
  if (c->completed) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  tri_buf *h = c->sendq;
  if (!h) {
    if (c->half_close) {
      *flags |= NGHTTP2_DATA_FLAG_EOF; /* an empty DATA frame with END_STREAM */
      return 0;
    }
    c->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
  }
  size_t n = h->len - c->sendq_off;
  if (n > length) n = length;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (c->half_close && !h->next && c->sendq_off + n == h->len)
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

/* Queues the frame's bytes of the head chunk; the entry that ends a chunk
 * owns it until written. */
static int send_stream_data(tri_conn *conn, tri_call *c, size_t length) {
  tri_buf *h = c->sendq;
  tri_outq_entry *e =
      tri_outq_push(&conn->out, tri_buf_begin(h) + c->sendq_off, 0, length);
  if (!e) return -1; /* not reached: send_data made room */
  c->sendq_off += length;
  if (c->sendq_off == h->len) {
    c->sendq = h->next;
    if (!c->sendq) c->sendq_tail = NULL;
    c->sendq_off = 0;
    e->buf = h;
    e->buf_owner = c;
    atomic_fetch_add(&c->refs, 1);
  }
  return 0;
}

static int send_data(nghttp2_session *s, nghttp2_frame *frame,
                     const uint8_t *framehd, size_t length,
                     nghttp2_data_source *src, void *user) {
  (void)s;
  tri_conn *conn = user;
  tri_call *c = src->ptr;
  if (tri_outq_room(&conn->out) < 4) return NGHTTP2_ERR_WOULDBLOCK;
  if (tri_h2_stage_data_head(&conn->out, framehd, frame->data.padlen))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  if (c->flags & TRI_CALL_CLIENT_STREAMING) {
    if (length && send_stream_data(conn, c, length))
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
  }
  /* The frame covers bytes [sent, sent+length) of seg0 || seg1.  The small
   * seg0 (an envelope prefix) is copied; seg1 goes out by reference. */
  size_t pos = c->sent, left = length;
  if (pos < c->seg0_len) {
    size_t n = c->seg0_len - pos < left ? c->seg0_len - pos : left;
    if (staging_append(conn, c->seg0 + pos, n))
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    pos += n;
    left -= n;
  }
  if (left) {
    tri_outq_entry *e =
        tri_outq_push(&conn->out, c->seg1 + (pos - c->seg0_len), 0, left);
    if (!e) return NGHTTP2_ERR_CALLBACK_FAILURE; /* not reached: see above */
    e->ref = c;
    c->queued += left;
  }
  if (tri_h2_stage_data_tail(&conn->out, frame->data.padlen))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  c->sent += length;
  return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame,
                            void *user) {
  (void)s;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  tri_call *c = recv_call(user, frame->hd.stream_id);
  if (c) { /* a new block: initial metadata or trailers */
    c->block_bytes = 0;
    c->block_has_status = 0;
  }
  return 0;
}

/* A response header block (initial metadata or trailers) larger than
 * grpc.max_metadata_size, counted as HPACK does (name + value + 32 per
 * field), fails its call only: RESOURCE_EXHAUSTED, as grpcio, and the
 * returned NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE makes nghttp2 reset the
 * stream and skip the block's other fields while it keeps decoding them, so
 * the connection's HPACK state stays right for the other calls.  Compliant
 * servers never send such a block: we advertise the limit as
 * SETTINGS_MAX_HEADER_LIST_SIZE, and grpc-go resets the stream itself. */
static int over_metadata_limit(tri_conn *conn, tri_call *c,
                               const nghttp2_frame *frame, size_t namelen,
                               size_t valuelen) {
  uint32_t limit = conn->ch->opts.max_metadata_size;
  size_t total = (size_t)c->block_bytes + namelen + valuelen + 32;
  if (total <= limit) {
    c->block_bytes = (uint32_t)total;
    return 0;
  }
  int trailers = frame->headers.cat == NGHTTP2_HCAT_HEADERS;
  tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                     "received %s metadata size exceeds limit (%u bytes, "
                     "grpc.max_metadata_size)",
                     trailers ? "trailing" : "initial", limit);
  return 1;
}

/* The response on `c`'s stream broke an HTTP/2 message rule (tri_resp_check):
 * a stream error.  The stream is reset with PROTOCOL_ERROR and nghttp2 drops
 * the rest of it; the call ends as the reset ends it (stream_closed), as when
 * nghttp2 itself applied the rules. */
static void reset_malformed(tri_conn *conn, tri_call *c, int32_t sid) {
  c->malformed = 1;
  nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE, sid,
                            NGHTTP2_PROTOCOL_ERROR);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *user) {
  (void)s, (void)flags;
  tri_conn *conn = user;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  tri_call *c = recv_call(conn, frame->hd.stream_id);
  if (!c) return 0;
  int first = frame->headers.cat == NGHTTP2_HCAT_RESPONSE;
  int verdict =
      conn->nghttp2_rules
          ? TRI_RESP_FIELD_OK
          : tri_resp_check_field(&c->rcheck, name, namelen, value, valuelen,
                                 !first && tri_resp_check_trailer(&c->rcheck));
  if (verdict == TRI_RESP_FIELD_DROP) return 0;
  if (verdict == TRI_RESP_FIELD_BAD) {
    reset_malformed(conn, c, frame->hd.stream_id);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the rest of the block */
  }
  if (!c->completed && over_metadata_limit(conn, c, frame, namelen, valuelen))
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (tri__call_on_header(c, frame, name, namelen, value, valuelen)) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                       "out of memory storing metadata");
    nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE,
                              frame->hd.stream_id, NGHTTP2_CANCEL);
  }
  return 0;
}

/* Flow control is manual: bytes are credited back to the peer at once,
 * except for a server stream whose reader is behind (more than the queue
 * limit unread), where they are owed until the reader catches up.  That
 * bounds memory per stream by the limit plus one window. */
static void credit(tri_conn *conn, tri_call *c, int32_t sid, size_t len) {
  if (c && !c->completed && (c->flags & TRI_CALL_SERVER_STREAMING) &&
      atomic_load(&c->recvq_bytes) >= (4 << 20)) {
    atomic_fetch_add(&c->owed, (int64_t)len);
    return;
  }
  nghttp2_session_consume(conn->sess, sid, len);
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t sid,
                         const uint8_t *data, size_t len, void *user) {
  (void)s, (void)flags;
  tri_conn *conn = user;
  tri_call *c = recv_call(conn, sid);
  credit(conn, c, sid, len);
  if (!c || c->malformed) return 0; /* the rest of a frame after a fault */
  if (!conn->nghttp2_rules && tri_resp_check_data(&c->rcheck, len)) {
    reset_malformed(conn, c, sid);
    return 0;
  }
  if (tri__call_on_data(c, data, len, conn->ch->opts.max_recv_bytes))
    nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE, sid,
                              NGHTTP2_CANCEL);
  return 0;
}

/* Stream `c` has ended: the stream whose DATA frames it followed is followed
 * by the one that followed it now (the server's turns skip an ended stream),
 * so an in-place read bets on that one next. */
static void skip_ended_stream(tri_conn *conn, tri_call *c) {
  tri_call *p = c->rx_prev_sid ? stream_call(conn, c->rx_prev_sid) : NULL;
  if (p && p->rx_next_sid == c->stream_id) p->rx_next_sid = c->rx_next_sid;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  (void)s;
  tri_conn *conn = user;
  if (frame->hd.type == NGHTTP2_SETTINGS &&
      !(frame->hd.flags & NGHTTP2_FLAG_ACK) && !atomic_load(&conn->established)) {
    /* The server speaks HTTP/2: the connection attempt has succeeded. */
    conn->connect_deadline = 0;
    atomic_store(&conn->established, 1);
  }
  if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK))
    conn->ping_sent = 0;
  if (frame->hd.type == NGHTTP2_DATA && conn->inplace_on) {
    /* The order of the streams' frames and their largest size: what in-place
     * reads bet on (nothing else reads them). */
    tri_call *prev = conn->last_data_sid ? stream_call(conn, conn->last_data_sid) : NULL;
    if (prev) prev->rx_next_sid = frame->hd.stream_id;
    tri_call *c = recv_call(conn, frame->hd.stream_id);
    if (c) c->rx_prev_sid = conn->last_data_sid;
    conn->last_data_sid = frame->hd.stream_id;
    if (frame->hd.length > conn->data_frame_max) conn->data_frame_max = (uint32_t)frame->hd.length;
  }
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    conn->goaway = 1;
    conn->peer_goaway_error = frame->goaway.error_code;
    atomic_store(&conn->unusable, 1);
  }
  if (!conn->nghttp2_rules && (frame->hd.type == NGHTTP2_HEADERS ||
                               (frame->hd.type == NGHTTP2_DATA &&
                                (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)))) {
    /* The rules that look at a whole header block or at the end of the
     * stream; a fault leaves the frame unseen, as if never received. */
    tri_call *c = recv_call(conn, frame->hd.stream_id);
    int end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (c &&
        (frame->hd.type == NGHTTP2_HEADERS
             ? tri_resp_check_block(
                   &c->rcheck, frame->headers.cat == NGHTTP2_HCAT_RESPONSE, end)
             : tri_resp_check_data_end(&c->rcheck))) {
      reset_malformed(conn, c, frame->hd.stream_id);
      return 0;
    }
  }
  if (frame->hd.type == NGHTTP2_HEADERS &&
      frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
    tri_call *c = recv_call(conn, frame->hd.stream_id);
    if (c) {
      /* Not trailers-only: the response has begun (tri_call_response_started). */
      c->response_started = !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
      tri__call_headers_done(c);
    }
  }
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    /* The server has finished: the call is over even if our side is still
     * sending (a server may answer a client stream early).  nghttp2 reports
     * the close only when both sides are done, so complete now and end our
     * side with RST_STREAM(NO_ERROR), as RFC 9113 §8.1 allows. */
    int32_t sid = frame->hd.stream_id;
    tri_call *c = recv_call(conn, sid);
    if (c && conn->inplace_on) skip_ended_stream(conn, c);
    if (c && !c->completed) {
      tri__call_on_close(c, NGHTTP2_NO_ERROR);
      if (!nghttp2_session_get_stream_local_close(conn->sess, sid))
        nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE, sid, NGHTTP2_NO_ERROR);
    }
  }
  return 0;
}

/* An allocation for nghttp2 failed on this connection: the session's own
 * errors from then on (a locally refused stream, an unsent HEADERS,
 * NGHTTP2_ERR_NOMEM, which nghttp2 treats as fatal) are RESOURCE_EXHAUSTED. */
static int nghttp2_oom(const tri_conn *conn) { return conn->arena.failed; }

static void stream_closed(tri_conn *conn, tri_call *c, uint32_t error_code) {
  if (c->malformed && error_code == NGHTTP2_NO_ERROR) {
    /* A malformed response that ended the stream (END_STREAM) closes it
     * before our RST_STREAM has gone out.  The call waits for the reset
     * (on_frame_send), or for the connection's end, as it would had the
     * stream stayed open until then: the outcome does not depend on it. */
    c->reset_unsent = 1;
    conn->resets_unsent++;
    return;
  }
  if (nghttp2_oom(conn) && error_code != NGHTTP2_NO_ERROR)
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "%s", OOM_HTTP2);
  tri__call_on_close(c, error_code);
  int64_t owed = atomic_exchange(&c->owed, 0);
  if (owed > 0) nghttp2_session_consume_connection(conn->sess, (size_t)owed);
  if (c->in_session) {
    c->in_session = 0;
    inflight_remove(conn, c);
  }
  io_release(conn, c);
}

static int on_stream_close(nghttp2_session *s, int32_t sid, uint32_t err,
                           void *user) {
  (void)s;
  tri_conn *conn = user;
  tri_call *c = recv_call(conn, sid);
  conn->rx_sid = 0; /* the stream and its data are gone */
  if (c) stream_closed(conn, c, err);
  return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  (void)s;
  tri_conn *conn = user;
  if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR)
    conn->local_goaway_error = frame->goaway.error_code;
  if (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)
    conn->pings_without_data = 0; /* grpc.http2.max_pings_without_data */
  if (frame->hd.type == NGHTTP2_RST_STREAM && conn->resets_unsent) {
    for (tri_call *c = conn->inflight; c; c = c->io_next) {
      if (c->reset_unsent && c->stream_id == frame->hd.stream_id) {
        c->reset_unsent = 0;
        conn->resets_unsent--;
        stream_closed(conn, c, frame->rst_stream.error_code); /* see there */
        break;
      }
    }
  }
  return 0;
}

static int on_frame_not_send(nghttp2_session *s, const nghttp2_frame *frame,
                             int lib_error, void *user) {
  (void)s;
  tri_conn *conn = user;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  tri_call *c = stream_call(conn, frame->hd.stream_id);
  if (!c) return 0;
  if (nghttp2_oom(conn)) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "%s", OOM_HTTP2);
    return 0;
  }
  if (!c->completed) c->unprocessed = TRI_UNPROCESSED_REFUSED;
  tri__call_complete(c, TRI_CODE_UNAVAILABLE, "request not sent: %s",
                     nghttp2_strerror(lib_error));
  return 0;
}

/* ---- submitting (I/O thread) ------------------------------------------ */

/* Nonzero when the header list nva[0..n) is within MAX_HEADER_LIST and the
 * server's SETTINGS_MAX_HEADER_LIST_SIZE; otherwise completes the call with
 * RESOURCE_EXHAUSTED, as the server would answer it. */
static int header_list_fits(tri_conn *conn, tri_call *c, const nghttp2_nv *nva, size_t n) {
  size_t size = 0;
  for (size_t i = 0; i < n; i++) size += nva[i].namelen + nva[i].valuelen + 32;
  uint32_t peer = nghttp2_session_get_remote_settings(conn->sess,
                                                      NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE);
  size_t limit = peer < MAX_HEADER_LIST ? peer : MAX_HEADER_LIST;
  if (size <= limit) return 1;
  tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                     "request metadata of %zu bytes is over the %s limit of %zu bytes",
                     size, peer < MAX_HEADER_LIST ? "server's (SETTINGS_MAX_HEADER_LIST_SIZE)"
                                                   : "client's",
                     limit);
  return 0;
}

/* Starts the call's stream, or holds the call (may_hold) until the server's
 * SETTINGS arrive, while the output is blocked or earlier calls are held. */
static void submit_call(tri_conn *conn, tri_call *c, int may_hold) {
  if (conn->dead || conn->goaway) {
    if (!c->completed)
      c->unprocessed = conn->goaway || atomic_load(&conn->established)
                           ? TRI_UNPROCESSED_REFUSED
                           : TRI_UNPROCESSED_NO_CONNECTION;
    tri__call_complete(c, TRI_CODE_UNAVAILABLE, "%s",
                       conn->dead ? conn->errstr : "connection is going away");
    io_release(conn, c);
    return;
  }
  if (atomic_load(&c->cancel_req) == 1) {
    tri__call_complete(c, c->cancel_code, "%s", c->cancel_msg);
    io_release(conn, c);
    return;
  }
  if (c->deadline && c->deadline <= tri__now()) {
    tri__call_complete(c, TRI_CODE_DEADLINE_EXCEEDED, "Deadline Exceeded");
    io_release(conn, c);
    return;
  }
  if (c->deadline && c->deadline_slot < 0 && deadline_add(conn, c)) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    io_release(conn, c);
    return;
  }
  if (may_hold &&
      (!atomic_load(&conn->established) || conn->write_since || conn->held)) {
    /* Before the server's SETTINGS (as grpc, which starts no stream until
     * they arrive), the request waits outside the session: its header list
     * is checked against the server's SETTINGS_MAX_HEADER_LIST_SIZE, not the
     * initial "unlimited", and a block the server could not decode (a field
     * over nghttp2's 64 KiB, a connection error) never goes out.  Likewise
     * when the peer is not taking our output, so the request could not go
     * out now anyway.  Submitted, a call that expires during a stall would
     * leave its stream and an RST_STREAM in the session until the peer reads
     * again. */
    held_add(conn, c);
    return;
  }
  /* Copied by nghttp2; the strings are not. */
  nghttp2_nv stack_nva[MAX_HEADERS], *nva = stack_nva;
  size_t cap = tri__call_header_count(c) + 16;
  if (cap > MAX_HEADERS && !(nva = tri_mem_alloc(conn->stats, cap * sizeof(*nva)))) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    io_release(conn, c);
    return;
  }
  size_t n = tri__call_headers(c, nva, cap > MAX_HEADERS ? cap : MAX_HEADERS,
                               &conn->hpack_filter, &conn->timeout_memo);
  if (!header_list_fits(conn, c, nva, n)) {
    if (nva != stack_nva) tri_mem_free(nva);
    io_release(conn, c);
    return;
  }
  nghttp2_data_provider prd;
  prd.source.ptr = c;
  prd.read_callback =
      (c->flags & TRI_CALL_CLIENT_STREAMING) ? stream_read : unary_read;
  int32_t sid = nghttp2_submit_request(conn->sess, NULL, nva, n, &prd, c);
  if (nva != stack_nva) tri_mem_free(nva);
  if (sid == NGHTTP2_ERR_NOMEM) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "%s", OOM_HTTP2);
    io_release(conn, c);
    return;
  }
  if (sid < 0) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "submit failed: %s",
                       nghttp2_strerror(sid));
    io_release(conn, c);
    return;
  }
  c->stream_id = sid;
  c->in_session = 1;
  inflight_add(conn, c);
}

/* Nonzero when the held calls can go: the server's SETTINGS have arrived
 * and the output has drained. */
static int may_submit_held(tri_conn *conn) {
  return conn->held && !conn->write_since && !conn->dead &&
         atomic_load(&conn->established);
}

/* Submits the held calls once they can go (may_submit_held). */
static void submit_held(tri_conn *conn) {
  while (may_submit_held(conn)) {
    tri_call *c = conn->held;
    held_remove(conn, c);
    submit_call(conn, c, 0);
  }
}

static void cancel_call(tri_conn *conn, tri_call *c) {
  if (c->held && !c->completed) {
    tri__call_complete(c, c->cancel_code, "%s", c->cancel_msg);
    held_remove(conn, c);
    io_release(conn, c); /* the cancel op's reference keeps it alive */
  } else if (!c->completed && c->in_session) {
    tri__call_complete(c, c->cancel_code, "%s", c->cancel_msg);
    nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE, c->stream_id,
                              NGHTTP2_CANCEL);
  }
  tri__call_unref(c); /* the reference the cancel op carried */
}

/* The writer handed over chunks and/or the end of the request stream. */
static void take_data(tri_conn *conn, tri_call *c) {
  atomic_store(&c->data_queued, 0);
  int end = atomic_load(&c->end_requested); /* before the chunks: see below */
  /* Every chunk pushed before `end` was set is visible to take_all now. */
  for (tri_node *n = tri_mpsc_take_all(&c->chunkq); n;) {
    tri_node *next = n->next;
    tri_buf *b = container_of(n, tri_buf, qnode);
    if (c->completed) {
      tri__call_chunk_written(c, b); /* discarded: the stream is over */
    } else {
      b->next = NULL;
      if (c->sendq_tail) c->sendq_tail->next = b;
      else c->sendq = b;
      c->sendq_tail = b;
    }
    n = next;
  }
  if (end) c->half_close = 1;
  if (c->in_session && c->deferred && !c->completed) {
    c->deferred = 0;
    nghttp2_session_resume_data(conn->sess, c->stream_id);
  }
  tri__call_unref(c);
}

static void arm_timerfd(tri_conn *conn) {
  if (!conn->timers || conn->tfd_armed) return;
  int64_t at = conn->timers->timer_at;
  struct itimerspec its = {{0, 0}, {at / 1000000000LL, at % 1000000000LL}};
  timerfd_settime(conn->tfd, TFD_TIMER_ABSTIME, &its, NULL);
  conn->tfd_armed = 1;
}

static void timer_append(tri_conn *conn, tri_call *c) {
  c->timer_at = tri__now() + (int64_t)conn->ch->opts.write_buffer_delay_us * 1000;
  c->timer_next = NULL;
  c->in_timer = 1;
  if (conn->timers_tail) conn->timers_tail->timer_next = c;
  else conn->timers = c;
  conn->timers_tail = c;
  arm_timerfd(conn);
}

/* Whether `c`'s writer still holds bytes for its flush timer (I/O thread;
 * the call's timer_queued set).  Read without the writer's lock, which its
 * writers and readers take all the time: a chunk is counted in
 * tri_writer_pending_bytes before the writer arms its timer (sink `armed`).
 * When the count is 0 the timer is let go (timer_queued cleared) and the
 * count read again: a chunk started meanwhile found the flag still set and
 * armed nothing, so then the timer is taken back, unless that chunk's own
 * TIMER op already took it.  Returns nonzero when the timer is still this
 * caller's to keep. */
static int timer_still_needed(tri_call *c) {
  if (tri_writer_pending_bytes(&c->writer) > 0) return 1;
  atomic_store(&c->timer_queued, 0);
  return tri_writer_pending_bytes(&c->writer) > 0 && !atomic_exchange(&c->timer_queued, 1);
}

/* Flushes writers whose partial chunk has waited the full delay.  The
 * reference the TIMER op carried is dropped here. */
static void run_timers(tri_conn *conn) {
  int64_t now = tri__now();
  tri_call *retry = NULL, *retry_tail = NULL;
  while (conn->timers && conn->timers->timer_at <= now) {
    tri_call *c = conn->timers;
    conn->timers = c->timer_next;
    if (!conn->timers) conn->timers_tail = NULL;
    c->in_timer = 0;
    if (c->completed) {
      atomic_store(&c->timer_queued, 0);
      tri__call_unref(c);
      continue;
    }
    if (!timer_still_needed(c)) {
      tri__call_unref(c);
      continue;
    }
    atomic_store(&c->timer_queued, 0);
    if (tri_writer_flush_nowait(&c->writer) == TRI_ERR_AGAIN &&
        !atomic_exchange(&c->timer_queued, 1)) {
      c->timer_next = NULL; /* a writer holds it: look again next round */
      if (retry_tail) retry_tail->timer_next = c;
      else retry = c;
      retry_tail = c;
      continue;
    }
    tri__call_unref(c);
  }
  for (tri_call *c = retry; c;) {
    tri_call *next = c->timer_next;
    timer_append(conn, c);
    c = next;
  }
}

static void process_ops(tri_conn *conn) {
  conn->self_pushed = 0;
  tri_node *n = tri_mpsc_take_all(&conn->ops);
  while (n) {
    tri_node *next = n->next;
    tri_op *op = container_of(n, tri_op, node);
    tri_call *c;
    switch (op->kind) {
    case TRI_OP_SUBMIT:
      submit_call(conn, container_of(op, tri_call, submit_op), 1);
      break;
    case TRI_OP_CANCEL:
      cancel_call(conn, container_of(op, tri_call, cancel_op));
      break;
    case TRI_OP_DATA:
      take_data(conn, container_of(op, tri_call, data_op));
      break;
    case TRI_OP_TIMER:
      c = container_of(op, tri_call, timer_op);
      /* Flushed already (a read or a full chunk beat us here, the usual case
       * in a ping-pong): no timer, no later wake-up. */
      if (conn->dead || c->completed) {
        atomic_store(&c->timer_queued, 0);
        tri__call_unref(c);
      } else if (!timer_still_needed(c)) {
        tri__call_unref(c);
      } else {
        timer_append(conn, c);
      }
      break;
    case TRI_OP_CREDIT:
      c = container_of(op, tri_call, credit_op);
      atomic_store(&c->credit_queued, 0);
      int64_t owed = atomic_exchange(&c->owed, 0);
      if (owed > 0 && !conn->dead) {
        if (c->in_session)
          nghttp2_session_consume(conn->sess, c->stream_id, (size_t)owed);
        else
          nghttp2_session_consume_connection(conn->sess, (size_t)owed);
      }
      tri__call_unref(c);
      break;
    }
    n = next;
  }
}

/* ---- socket I/O (I/O thread) ------------------------------------------ */

static void set_epollout(tri_conn *conn, int on) {
  if (conn->epollout == on || conn->detached) return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),
                           .data.fd = conn->fd};
  epoll_ctl(conn->epfd, EPOLL_CTL_MOD, conn->fd, &ev);
  conn->epollout = on;
}

/* The socket took nothing: output waits from now on, unless it was waiting
 * already (the write-stall watchdog measures from the last progress). */
static void write_blocked(tri_conn *conn) {
  if (!conn->write_since) conn->write_since = tri__now();
}

/* TLS: the pending entries are copied into tls_out (encryption copies
 * anyway) and written with SSL_write.  Same return values as write_out. */
static int write_out_tls(tri_conn *conn) {
  tri_outq *q = &conn->out;
  for (size_t i = q->head; i < q->n; i++) {
    tri_outq_entry *e = &q->e[i];
    if (tri_buf_append(&conn->ch->pool, &conn->tls_out, tri_outq_bytes(q, e),
                       e->len)) {
      die(conn, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return -1;
    }
    entry_written(e, NULL);
  }
  tri_outq_clear(q);
  while (conn->tls_out_off < conn->tls_out->len) {
    ssize_t w = tri_tls_write(conn->ssl, tri_buf_begin(conn->tls_out) + conn->tls_out_off,
                              conn->tls_out->len - conn->tls_out_off,
                              conn->errstr, sizeof(conn->errstr));
    if (w == TRI_ERR_AGAIN) {
      write_blocked(conn);
      return 0;
    }
    if (w < 0) {
      die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
      return -1;
    }
    TRI_STATS_ADD(conn->stats, write_syscalls, 1);
    TRI_STATS_ADD(conn->stats, bytes_written, w);
    conn->tls_out_off += (size_t)w;
    conn->write_since = tri__now(); /* progress */
  }
  conn->tls_out->len = 0;
  conn->tls_out_off = 0;
  conn->write_since = 0;
  return 1;
}

/* Writes pending output with one writev.  Returns 1 if all of it went,
 * 0 if the socket is full, -1 on error (the connection is then dead). */
static int write_out(tri_conn *conn) {
  if (conn->ssl) return write_out_tls(conn);
  if (tri_outq_empty(&conn->out)) {
    conn->write_since = 0;
    return 1;
  }
  ssize_t w;
  if (conn->detached) { /* test/fuzz hook: a fake socket that discards */
    size_t pending = conn->out.pending;
    w = (ssize_t)pending;
    if (conn->detached_budget >= 0 && (size_t)conn->detached_budget < pending)
      w = conn->detached_budget;
    if (conn->detached_budget >= 0) conn->detached_budget -= w;
    if (w == 0) {
      write_blocked(conn);
      return 0;
    }
  } else {
    struct iovec iov[OUT_MAX + 8];
    size_t bytes;
    size_t n = tri_outq_iov(&conn->out, iov, OUT_MAX + 8, &bytes);
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = n};
    do {
      w = sendmsg(conn->fd, &mh, MSG_NOSIGNAL);
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        write_blocked(conn);
        return 0;
      }
      snprintf(conn->errstr, sizeof(conn->errstr), "write failed: %s",
               strerror(errno));
      die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
      return -1;
    }
    TRI_STATS_ADD(conn->stats, write_syscalls, 1);
    TRI_STATS_ADD(conn->stats, bytes_written, w);
  }
  if (!tri_outq_written(&conn->out, (size_t)w, entry_written,
                        entry_part_written, NULL)) {
    conn->write_since = tri__now(); /* progress, and more waits */
    return 0;
  }
  conn->write_since = 0;
  return 1;
}

/* Kills the connection after nghttp2_session_mem_send/recv failed with
 * `err`: RESOURCE_EXHAUSTED when memory ran out, INTERNAL with `fmt` (one %s:
 * nghttp2's description) otherwise. */
static void session_failed(tri_conn *conn, int err, const char *fmt) {
  if (err == NGHTTP2_ERR_NOMEM || nghttp2_oom(conn)) {
    die(conn, TRI_CODE_RESOURCE_EXHAUSTED, OOM_HTTP2);
    return;
  }
  snprintf(conn->errstr, sizeof(conn->errstr), fmt, nghttp2_strerror(err));
  die(conn, TRI_CODE_INTERNAL, conn->errstr);
}

/* Pulls every frame nghttp2 wants to send and writes them, normally with one
 * writev per call. */
static void flush(tri_conn *conn) {
  if (!conn->connected || conn->dead) return;
  conn->closed_since_flush = 0;
  if (!tri_outq_empty(&conn->out) ||
      (conn->ssl && conn->tls_out_off < conn->tls_out->len)) {
    int rv = write_out(conn);
    if (rv <= 0) {
      if (rv == 0) set_epollout(conn, 1);
      return;
    }
  }
  for (;;) {
    size_t pulled = 0;
    while (tri_outq_room(&conn->out) > 8 && pulled < PULL_MAX_BYTES) {
      const uint8_t *p;
      ssize_t n = nghttp2_session_mem_send(conn->sess, &p);
      if (n < 0) {
        session_failed(conn, (int)n, "HTTP/2 error: %s");
        return;
      }
      if (n == 0) break;
      if (staging_append(conn, p, (size_t)n)) {
        die(conn, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
        return;
      }
      pulled += (size_t)n;
    }
    if (tri_outq_empty(&conn->out)) break; /* nothing to send */
    int rv = write_out(conn);
    if (rv <= 0) {
      if (rv == 0) set_epollout(conn, 1);
      return;
    }
    if (!nghttp2_session_want_write(conn->sess)) break;
  }
  set_epollout(conn, 0);
}

static void after_events(tri_conn *conn);
static int dial_more(tri_conn *conn);

/* Hands `n` received bytes to nghttp2, a slice at a time (4 KiB or more:
 * see the end).  When a slice
 * has closed a quarter of the calls in flight (at least PIPELINE_MIN_CALLS),
 * the loop's work runs before the next slice: the I/O hook starts the
 * replacements of the calls just completed, queued ops are submitted, and
 * the output is written.  Without this, a read that returns a whole window of
 * responses (100 calls of 128 B are 15 KB) is parsed to the end before
 * anything is sent, the server idles meanwhile, and client and server take
 * turns instead of working at the same time.  Against our echo server in
 * another process, 128 B with 100 in flight went from 146k to 271k calls/s
 * (1 KiB: 187k to 261k) at the same client CPU per call; a server that is
 * busy anyway (grpc-go) sees no change.  Returns 0, or -1 when the
 * connection died (a protocol error from the peer: INTERNAL). */
/* Hands n input bytes to nghttp2 in one piece (and to the frame tracker).
 * Returns 0, or -1 once the connection died. */
static int feed_piece(tri_conn *conn, const uint8_t *p, size_t n) {
  if (conn->inplace_on) tri_h2_track_feed(&conn->track, p, n);
  ssize_t rv = nghttp2_session_mem_recv(conn->sess, p, n);
  if (rv < 0) {
    /* nghttp2 found the server's bytes invalid: our finding, not the
     * server's report (that would be its GOAWAY or RST_STREAM). */
    session_failed(conn, (int)rv, "HTTP/2 protocol error detected by the client: %s");
    return -1;
  }
  return 0;
}

static int feed(tri_conn *conn, const uint8_t *p, size_t n) {
  size_t total = n, closed_before = conn->closed_total;
  while (n) {
    size_t k = n < conn->feed_slice ? n : conn->feed_slice;
    if (feed_piece(conn, p, k)) return -1;
    p += k;
    n -= k;
    if (!n) break;
    /* closed + in flight now = in flight at the last flush */
    size_t enough = (conn->inflight_n + conn->closed_since_flush) / 4;
    if (enough < PIPELINE_MIN_CALLS) enough = PIPELINE_MIN_CALLS;
    if (conn->closed_since_flush >= enough) {
      after_events(conn);
      if (conn->dead) return -1;
    }
  }
  /* The slice for the next read: about two responses' bytes, as this read
   * had them (all of it when no stream closed), within FEED_SLICE and
   * FEED_SLICE_MAX.  Small responses keep 4 KiB slices, so the check above
   * comes often enough; large ones reach nghttp2 and the call in fewer,
   * larger pieces (each piece costs a callback, a window credit and an
   * envelope-decoder step: 256 of them per 1 MiB response in 4 KiB slices). */
  size_t closed = conn->closed_total - closed_before;
  size_t per = closed ? total / closed : total;
  size_t slice = per > FEED_SLICE_MAX / 2 ? FEED_SLICE_MAX : 2 * per;
  conn->feed_slice = slice < FEED_SLICE ? FEED_SLICE : slice;
  return 0;
}

/* In-place reads (tri_conn.h, tri_inplace.h): what stream `sid` can take. */
static int inplace_lookup(void *ctx, int32_t sid, tri_inplace_target *out) {
  tri_conn *conn = ctx;
  tri_call *c = stream_call(conn, sid);
  if (!c) return 0;
  out->next = c->rx_next_sid;
  out->room = tri__call_body_room(c, &out->dst);
  /* The DATA rules judge bytes as they are fed; leave bytes that could
   * break them (beyond a content-length, say) to the plain path. */
  if (out->room < TRI_INPLACE_MIN ||
      (!conn->nghttp2_rules && !tri_resp_check_data_fits(&c->rcheck, out->room)))
    out->room = 0;
  return 1;
}

/* Feeds what an in-place read took, in input order.  Returns 0 or -1. */
static int feed_inplace(tri_conn *conn, tri_inplace_plan *pl, size_t r) {
  tri_inplace_piece pieces[2 + 2 * TRI_INPLACE_FRAMES];
  int n = tri_inplace_settle(pl, r, pieces);
  TRI_STATS_ADD(conn->stats, bytes_read_in_place, pl->placed);
  for (int i = 0; i < n; i++)
    if (pieces[i].in_place ? feed_piece(conn, pieces[i].p, pieces[i].n)
                           : feed(conn, pieces[i].p, pieces[i].n))
      return -1;
  return 0;
}

static void read_in(tri_conn *conn) {
  for (;;) {
    ssize_t r;
    tri_inplace_plan plan;
    int inplace = 0;
    if (conn->ssl) {
      /* Drain OpenSSL completely: decrypted bytes can wait inside it while
       * the socket shows nothing readable. */
      r = tri_tls_read(conn->ssl, conn->rbuf, conn->rbuf_cap, conn->errstr,
                       sizeof(conn->errstr));
      if (r == TRI_ERR_AGAIN) return;
      if (r < 0) {
        die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
        return;
      }
    } else {
      if (conn->inplace_on)
        inplace = tri_inplace_plan_make(&plan, &conn->track, conn->data_frame_max,
                                        inplace_lookup, conn, conn->rbuf, conn->rbuf_cap);
      if (inplace) {
        r = readv(conn->fd, plan.iov, plan.niov);
      } else {
        r = read(conn->fd, conn->rbuf, conn->rbuf_cap);
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (r < 0) {
        snprintf(conn->errstr, sizeof(conn->errstr), "read failed: %s",
                 strerror(errno));
        die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
        return;
      }
    }
    TRI_STATS_ADD(conn->stats, read_syscalls, 1);
    if (r == 0) {
      if (conn->peer_goaway_error)
        snprintf(conn->errstr, sizeof(conn->errstr),
                 "connection closed by peer after its GOAWAY (%s)",
                 nghttp2_http2_strerror(conn->peer_goaway_error));
      die(conn, TRI_CODE_UNAVAILABLE,
          conn->peer_goaway_error ? conn->errstr : "connection closed by peer");
      return;
    }
    TRI_STATS_ADD(conn->stats, bytes_read, r);
    if (conn->ch->opts.keepalive_time_ms) conn->last_read = tri__now();
    if (inplace) {
      if (feed_inplace(conn, &plan, (size_t)r)) return;
      if ((size_t)r < plan.total) return; /* drained */
      continue;
    }
    if (feed(conn, conn->rbuf, (size_t)r)) return;
    if (!conn->ssl && (size_t)r < conn->rbuf_cap) return; /* drained */
  }
}

static void expire_deadlines(tri_conn *conn) {
  int64_t now = tri__now();
  while (tri_deadlines_count(&conn->deadlines) &&
         tri_deadlines_first_at(&conn->deadlines) <= now) {
    tri_call *c = tri_deadlines_first(&conn->deadlines);
    tri__call_complete(c, TRI_CODE_DEADLINE_EXCEEDED, "Deadline Exceeded");
    if (c->deadline_slot >= 0) deadline_remove(conn, c);
    if (c->held) { /* never submitted: nothing to reset */
      held_remove(conn, c);
      io_release(conn, c);
      continue;
    }
    if (c->in_session)
      nghttp2_submit_rst_stream(conn->sess, NGHTTP2_FLAG_NONE, c->stream_id,
                                NGHTTP2_CANCEL);
  }
}

/* Whether keepalive may ping now: on, the session up, no PING outstanding,
 * calls in flight (or permitted without), and under the pings-without-data
 * limit. */
static int keepalive_armed(const tri_conn *conn) {
  const tri_channel_opts *o = &conn->ch->opts;
  return o->keepalive_time_ms && atomic_load(&conn->established) && !conn->ping_sent &&
         (conn->inflight || o->keepalive_permit_without_calls) &&
         (!o->max_pings_without_data ||
          conn->pings_without_data < o->max_pings_without_data);
}

/* When the loop must wake up without socket events (ns; 0 = never): the
 * nearest call deadline or watchdog expiry. */
static int64_t next_wakeup(const tri_conn *conn) {
  const tri_channel_opts *o = &conn->ch->opts;
  int64_t t = 0;
#define EARLIER(x)                       \
  do {                                   \
    int64_t at_ = (x);                   \
    if (at_ && (!t || at_ < t)) t = at_; \
  } while (0)
  if (tri_deadlines_count(&conn->deadlines))
    EARLIER(tri_deadlines_first_at(&conn->deadlines));
  EARLIER(conn->connect_deadline);
  if (conn->fd < 0) EARLIER(tri_dial_next_at(&conn->dial));
  if (conn->write_since && o->write_stall_timeout_ms)
    EARLIER(conn->write_since + o->write_stall_timeout_ms * MS);
  if (conn->ping_sent) EARLIER(conn->ping_sent + o->keepalive_timeout_ms * MS);
  else if (keepalive_armed(conn)) EARLIER(conn->last_read + o->keepalive_time_ms * MS);
#undef EARLIER
  return t;
}

static int next_timeout_ms(tri_conn *conn) {
  return tri_clock_timeout_ms(next_wakeup(conn));
}

/* Kills a connection that cannot make progress: an attempt that did not get
 * the server's SETTINGS in time, output the peer has not taken for the
 * write-stall timeout (its expired calls' RST_STREAMs and streams would pile
 * up in the session for as long as the peer reads nothing), or a keepalive
 * PING left unanswered.  Sends the keepalive PING when one is due. */
static void check_watchdogs(tri_conn *conn) {
  const tri_channel_opts *o = &conn->ch->opts;
  if (!conn->connect_deadline && !conn->write_since && !o->keepalive_time_ms &&
      !tri_dial_next_at(&conn->dial))
    return; /* the usual case: nothing armed, no clock read */
  int64_t now = tri__now();
  if (conn->connect_deadline && now >= conn->connect_deadline) {
    const char *stage = conn->lookup        ? "looking up the name"
                        : conn->handshaking ? "TLS handshake"
                        : !conn->connected ? "TCP connect"
                                           : "waiting for the server's HTTP/2 SETTINGS";
    char where[300];
    snprintf(conn->errstr, sizeof(conn->errstr),
             "connection attempt to %s timed out after %lld ms (%s)",
             target_name(o, where, sizeof(where)), (long long)((now - conn->attempt_start) / MS), stage);
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    return;
  }
  if (conn->fd < 0 && tri_dial_next_at(&conn->dial) && now >= tri_dial_next_at(&conn->dial))
    dial_more(conn); /* attempts are in flight: this cannot end the dial */
  if (conn->write_since && o->write_stall_timeout_ms &&
      now - conn->write_since >= o->write_stall_timeout_ms * MS) {
    snprintf(conn->errstr, sizeof(conn->errstr),
             "connection stalled: no write progress for %u ms",
             o->write_stall_timeout_ms);
    TRI_STATS_ADD(conn->stats, write_stalls, 1);
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    return;
  }
  if (!o->keepalive_time_ms || !atomic_load(&conn->established)) return;
  if (conn->ping_sent) {
    if (now - conn->ping_sent >= o->keepalive_timeout_ms * MS) {
      snprintf(conn->errstr, sizeof(conn->errstr),
               "keepalive ping not acknowledged within %u ms", o->keepalive_timeout_ms);
      TRI_STATS_ADD(conn->stats, keepalive_timeouts, 1);
      die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    }
    return;
  }
  if (!conn->inflight && !o->keepalive_permit_without_calls) {
    conn->last_read = now; /* idle time counts only while calls are open */
    return;
  }
  if (keepalive_armed(conn) && now - conn->last_read >= o->keepalive_time_ms * MS &&
      nghttp2_submit_ping(conn->sess, NGHTTP2_FLAG_NONE, NULL) == 0) {
    conn->ping_sent = now;
    conn->pings_without_data++;
    flush(conn);
  }
}

/* The work of every loop iteration after the socket was serviced: submit
 * queued ops, fire flush timers and deadlines, write, and notice a session
 * that has ended. */
static void after_events(tri_conn *conn) {
  const tri_io_hook *hook = atomic_load(&conn->ch->io_hook);
  conn->hook_ms = hook ? hook->fn(hook->arg) : -1;
  process_ops(conn);
  if (conn->timers && conn->timers->timer_at <= tri__now()) {
    run_timers(conn);
    process_ops(conn); /* the chunks those flushes handed over */
  }
  arm_timerfd(conn);
  expire_deadlines(conn);
  flush(conn);
  if (may_submit_held(conn)) {
    submit_held(conn); /* SETTINGS in, the output drained */
    flush(conn);
  }
  if (conn->dead) return;
  check_watchdogs(conn);
  if (conn->dead) return;
  if (conn->goaway && !conn->inflight) {
    if (conn->peer_goaway_error)
      snprintf(conn->errstr, sizeof(conn->errstr),
               "connection closed after GOAWAY from peer (%s)",
               nghttp2_http2_strerror(conn->peer_goaway_error));
    die(conn, TRI_CODE_UNAVAILABLE,
        conn->peer_goaway_error ? conn->errstr
                                : "connection closed after GOAWAY");
  } else if (conn->connected && !nghttp2_session_want_read(conn->sess) &&
             !nghttp2_session_want_write(conn->sess)) {
    if (conn->local_goaway_error) {
      /* We ended the session because the peer broke the protocol. */
      snprintf(
          conn->errstr, sizeof(conn->errstr),
          "HTTP/2 protocol error detected by the client (%s): it closed the "
          "connection with GOAWAY",
          nghttp2_http2_strerror(conn->local_goaway_error));
      die(conn, TRI_CODE_INTERNAL, conn->errstr);
    } else {
      die(conn, TRI_CODE_UNAVAILABLE, "HTTP/2 session ended");
    }
  }
}

/* ---- thread ------------------------------------------------------------ */

/* The dial failed: every address of the target refused or failed. */
static void dial_failed(tri_conn *conn) {
  const tri_channel_opts *o = &conn->ch->opts;
  int tried = conn->dial.tried;
  char where[300];
  snprintf(conn->errstr, sizeof(conn->errstr), "failed to connect to %s%s: %s",
           target_name(o, where, sizeof(where)), tried > 1 ? " (every address)" : "",
           strerror(tri_dial_error(&conn->dial) ? tri_dial_error(&conn->dial) : ECONNREFUSED));
}

/* Starts the next connection attempt and watches it.  Returns 0, or
 * TRI_ERR_CONNECT when no address is left and no attempt is in flight. */
static int dial_more(tri_conn *conn) {
  int fd = tri_dial_next(&conn->dial, tri__now());
  if (fd >= 0) {
    struct epoll_event ev = {.events = EPOLLOUT, .data.fd = fd};
    epoll_ctl(conn->epfd, EPOLL_CTL_ADD, fd, &ev);
    return 0;
  }
  if (tri_dial_pending(&conn->dial)) return 0;
  dial_failed(conn);
  return TRI_ERR_CONNECT;
}

static void check_connected(tri_conn *conn);

/* An attempt's socket became writable or failed: the winner becomes the
 * connection's socket; a failure starts the next address at once. */
static void dial_event(tri_conn *conn, int fd) {
  int rv = tri_dial_ready(&conn->dial, fd);
  if (rv == 1) {
    tri_dial_end(&conn->dial); /* the losers are closed already */
    conn->fd = fd;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
    conn->epollout = 1;
    epoll_ctl(conn->epfd, EPOLL_CTL_MOD, fd, &ev);
    check_connected(conn);
  } else if (rv == 0 && dial_more(conn)) {
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
  }
}

/* Resolves the target and starts the first attempt (tri_dial.h).  On a
 * driven loop a host name is looked up on a thread of its own instead
 * (tri_lookup.h): the attempts start when it answers (lookup_answered). */
static int open_socket(tri_conn *conn) {
  const tri_channel_opts *o = &conn->ch->opts;
  conn->connected = 0; /* check_connected runs once an attempt wins */
  if (o->address_kind == TRI_ADDRESS_TCP && conn->loop && tri_loop_is_driven(conn->loop) &&
      !tri_dial_is_ip(o->host)) {
    int rv = tri_lookup_start(&conn->lookup, o->host, o->port);
    if (rv) return rv;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = tri_lookup_fd(conn->lookup)};
    return epoll_ctl(conn->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) ? TRI_ERR_SYSTEM : 0;
  }
  int rv = o->address_kind == TRI_ADDRESS_TCP
               ? tri_dial_begin(&conn->dial, o->host, o->port, conn->errstr,
                                sizeof(conn->errstr))
               : tri_dial_begin_unix(&conn->dial, o->host,
                                     o->address_kind == TRI_ADDRESS_UNIX_ABSTRACT,
                                     conn->errstr, sizeof(conn->errstr));
  if (rv) return rv;
  return dial_more(conn);
}

/* The target's name has been looked up (open_socket): the attempts start, or
 * the connection dies with the name service's reason. */
static void lookup_answered(tri_conn *conn) {
  struct addrinfo *res;
  epoll_ctl(conn->epfd, EPOLL_CTL_DEL, tri_lookup_fd(conn->lookup), NULL);
  int rv = tri_lookup_take(conn->lookup, &res, conn->errstr, sizeof(conn->errstr));
  tri_lookup_drop(conn->lookup);
  conn->lookup = NULL;
  if (rv == 0) {
    tri_dial_begin_owned(&conn->dial, res);
    rv = dial_more(conn);
  }
  if (rv) die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
}

static int start_session(tri_conn *conn) {
  nghttp2_session_callbacks *cbs;
  if (nghttp2_session_callbacks_new(&cbs)) return TRI_ERR_NOMEM;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs,
                                                           on_frame_not_send);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_send_data_callback(cbs, send_data);
  nghttp2_session_callbacks_set_data_source_read_length_callback(
      cbs, tri_h2_read_length);
  nghttp2_option *opt;
  if (nghttp2_option_new(&opt)) {
    nghttp2_session_callbacks_del(cbs);
    return TRI_ERR_NOMEM;
  }
  nghttp2_option_set_no_auto_window_update(opt, 1); /* see credit() */
  /* The message rules of a response are ours (tri_resp_check, on_header):
   * nghttp2's cost as much again per field. */
  nghttp2_option_set_no_http_messaging(opt, !conn->nghttp2_rules);
  nghttp2_option_set_max_send_header_block_length(opt, 2 * MAX_HEADER_LIST);
  tri_h2_set_max_continuations(opt, conn->ch->opts.max_metadata_size);
  tri_h2_mem_init(&conn->mem, &conn->arena); /* nghttp2 allocates from the arena */
  int rv = nghttp2_session_client_new3(&conn->sess, cbs, conn, opt, &conn->mem);
  tri_h2_track_init(&conn->track); /* the session's first input byte is next */
  /* TLS reads cannot scatter (SSL_read), so they never read in place. */
  conn->inplace_on = conn->ch->opts.in_place_reads && !conn->ch->opts.tls;
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv) return TRI_ERR_NOMEM;
  const tri_channel_opts *o = &conn->ch->opts;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o->stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, o->max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, o->max_metadata_size},
  };
  /* Without our SETTINGS the server would assume push, 64 KiB windows and
   * header blocks of any size. */
  if (nghttp2_submit_settings(conn->sess, NGHTTP2_FLAG_NONE, iv,
                              sizeof(iv) / sizeof(iv[0])) ||
      nghttp2_session_set_local_window_size(conn->sess, NGHTTP2_FLAG_NONE, 0,
                                            (int32_t)o->conn_window))
    return TRI_ERR_NOMEM;
  return 0;
}

/* Advances the TLS handshake; on success the connection is ready. */
static void tls_step(tri_conn *conn) {
  int want_write = 0;
  int rv = tri_tls_handshake(conn->ssl, &want_write, conn->errstr,
                             sizeof(conn->errstr));
  if (rv == TRI_ERR_AGAIN) {
    set_epollout(conn, want_write);
    return;
  }
  if (rv) {
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    return;
  }
  conn->handshaking = 0;
  conn->connected = 1;
  set_epollout(conn, 0);
}

static void check_connected(tri_conn *conn) {
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    const tri_channel_opts *o = &conn->ch->opts;
    char where[300];
    snprintf(conn->errstr, sizeof(conn->errstr),
             "failed to connect to %s: %s", target_name(o, where, sizeof(where)),
             strerror(err));
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    return;
  }
  if (!conn->ch->ssl_ctx) {
    conn->connected = 1;
    return;
  }
  conn->ssl = tri_tls_new(conn->ch->ssl_ctx, conn->fd, conn->ch->opts.tls_server_name,
                          conn->errstr, sizeof(conn->errstr));
  if (!conn->ssl) {
    die(conn, TRI_CODE_UNAVAILABLE, conn->errstr);
    return;
  }
  conn->handshaking = 1;
  tls_step(conn);
}

/* A dead connection can outlive its thread for long (finished calls that the
 * application keeps, e.g. an RpcError, hold references): give back its
 * descriptors and buffers now and keep only the struct. */
static void release_io_resources(tri_conn *conn) {
  int fds[3] = {conn->epfd, conn->evfd, conn->tfd};
  conn->epfd = conn->evfd = conn->tfd = -1; /* pushes are refused already */
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) close(fds[i]);
  tri__channel_spare_put(conn->ch, TRI_SPARE_RBUF, conn->rbuf);
  conn->rbuf = NULL;
  tri_pool_put(&conn->ch->pool, conn->out.staging);
  conn->out.staging = NULL;
  tri_pool_put(&conn->ch->pool, conn->tls_out);
  conn->tls_out = NULL;
  tri__channel_spare_put(conn->ch, TRI_SPARE_OUT, conn->out.e);
  conn->out.e = NULL;
  tri_deadlines_free(&conn->deadlines);
  /* The session is gone: its blocks serve the next connection. */
  tri__channel_arena_put(conn->ch, &conn->arena);
}

/* Opens the socket and the session (the thread's or the loop's first
 * step); a failure kills the connection. */
static void conn_start(tri_conn *conn) {
  int rv = open_socket(conn);
  if (rv == 0) rv = start_session(conn);
  if (rv) {
    if (!conn->errstr[0]) snprintf(conn->errstr, sizeof(conn->errstr), "%s", tri_strerror(rv));
    /* Calls queued so far are failed by die(); a session may not exist. */
    die(conn, rv == TRI_ERR_NOMEM ? TRI_CODE_RESOURCE_EXHAUSTED : TRI_CODE_UNAVAILABLE,
        conn->errstr);
  }
}

/* How long the next wait may last (ms; -1: until an event). */
static int conn_timeout(tri_conn *conn) {
  if (conn->self_pushed) return 0;
  int timeout = next_timeout_ms(conn);
  if (conn->hook_ms >= 0 && (timeout < 0 || conn->hook_ms < timeout))
    timeout = conn->hook_ms;
  int handoff_ms = tri_handoff_tick(); /* callers left queued by a turn's holder */
  if (handoff_ms >= 0 && (timeout < 0 || handoff_ms < timeout)) timeout = handoff_ms;
  return timeout;
}

/* One loop iteration: waits up to `timeout` ms for events on the
 * connection's epoll (-2: does not look at it), handles them, then does the
 * iteration's work (after_events).  Returns nonzero once it is dead. */
static int conn_iterate(tri_conn *conn, int timeout) {
  struct epoll_event evs[4];
  int n = 0;
  if (timeout != -2) n = epoll_wait(conn->epfd, evs, 4, timeout);
  if (n < 0 && errno != EINTR) {
    die(conn, TRI_CODE_UNAVAILABLE, "epoll_wait failed");
    return 1;
  }
  for (int i = 0; i < n && !conn->dead; i++) {
    if (evs[i].data.fd == conn->evfd) {
      uint64_t v;
      ssize_t r = read(conn->evfd, &v, sizeof(v));
      (void)r;
      atomic_store(&conn->wake_pending, 0);
      continue;
    }
    if (evs[i].data.fd == conn->tfd) {
      uint64_t v;
      ssize_t r = read(conn->tfd, &v, sizeof(v));
      (void)r;
      conn->tfd_armed = 0;
      continue;
    }
    if (conn->lookup && evs[i].data.fd == tri_lookup_fd(conn->lookup)) {
      lookup_answered(conn);
      continue;
    }
    if (conn->fd < 0) {
      dial_event(conn, evs[i].data.fd);
      continue;
    }
    if (conn->handshaking) {
      tls_step(conn);
    } else if (!conn->connected &&
               (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
      check_connected(conn);
    }
    if (!conn->dead && conn->connected &&
        (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
      read_in(conn);
  }
  if (atomic_load(&conn->shutdown_req)) {
    if (!conn->dead) die(conn, TRI_CODE_CANCELLED, "Channel closed");
    return 1;
  }
  if (conn->dead) return 1;
  after_events(conn);
  return conn->dead;
}

/* The thread's (or the loop's) last act: frees the session, TLS state and
 * descriptors, and marks the connection exited. */
static void conn_end(tri_conn *conn) {
  if (conn->sess) {
    nghttp2_session_del(conn->sess);
    conn->sess = NULL;
  }
  if (conn->ssl) {
    tri_tls_free(conn->ssl);
    conn->ssl = NULL;
  }
  if (conn->fd >= 0) {
    close(conn->fd);
    conn->fd = -1;
  }
  tri_dial_end(&conn->dial);
  tri_lookup_drop(conn->lookup); /* its thread may still be waiting for an answer */
  conn->lookup = NULL;
  release_io_resources(conn);
  atomic_store(&conn->exited, 1);
}

static void *conn_main(void *arg) {
  tri_conn *conn = arg;
  io_self = conn;
  /* A peer that closes while we write must give EPIPE, not kill a host
   * process that never ignored SIGPIPE (OpenSSL writes with plain write()). */
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  conn_start(conn);
  while (!conn->dead && !conn_iterate(conn, conn_timeout(conn))) {
  }
  conn_end(conn);
  return NULL;
}

#define MEMBER_CONN(m) ((tri_conn *)((char *)(m)-offsetof(tri_conn, member)))

/* A shared loop's turn for this connection (loop thread, tri_loop.h): the
 * body of conn_main's loop without the wait; the loop waits for everyone. */
static int loop_step(tri_loop_member *m, int ready) {
  tri_conn *conn = MEMBER_CONN(m);
  io_self = conn;
  if (!conn->started) {
    conn->started = 1;
    conn_start(conn);
  }
  /* Before the queue is taken (after_events): a push after this wakes the
   * loop again. */
  atomic_store(&conn->wake_pending, 0);
  int t = TRI_LOOP_DONE;
  if (!conn->dead && !conn_iterate(conn, ready ? 0 : -2))
    t = conn_timeout(conn);
  io_self = NULL;
  return t;
}

static void loop_leave(tri_loop_member *m) {
  tri_conn *conn = MEMBER_CONN(m);
  io_self = conn;
  conn_end(conn);
  io_self = NULL;
}

/* The state every connection starts with (no descriptors yet).  NULL when
 * out of memory; `out` and `staging` may still be NULL then checked. */
static tri_conn *conn_alloc(tri_channel *ch) {
  tri_conn *conn = tri_mem_calloc(&ch->stats, 1, sizeof(*conn));
  if (!conn) return NULL;
  conn->ch = ch;
  conn->stats = &ch->stats;
  tri_deadlines_init(&conn->deadlines, conn->stats);
  tri_hpack_filter_init(&conn->hpack_filter);
  conn->fd = conn->evfd = conn->tfd = conn->epfd = -1;
  tri_dial_init(&conn->dial);
  conn->hook_ms = -1;
  conn->feed_slice = FEED_SLICE;
  conn->attempt_start = conn->last_read = tri__now();
  conn->detached_budget = -1;
  atomic_init(&conn->refs, 1);
  tri_mpsc_init(&conn->ops);
  tri_arena_init(&conn->arena, &ch->stats);
  tri__channel_arena_take(ch, &conn->arena);
  tri_outq_entry *entries = tri__channel_spare_take(ch, TRI_SPARE_OUT);
  if (!entries) entries = tri_mem_alloc(&ch->stats, OUT_MAX * sizeof(*entries));
  tri_outq_init(&conn->out, entries, OUT_MAX, tri_pool_get(&ch->pool, 64 << 10, 0),
                &ch->pool, &ch->stats, 0);
  return conn;
}

int tri__conn_new(tri_conn **out, tri_channel *ch, int64_t connect_deadline) {
  int rv = TRI_ERR_SYSTEM;
  tri_conn *conn = conn_alloc(ch);
  if (!conn) return TRI_ERR_NOMEM;
  conn->connect_deadline = connect_deadline;
  if (ch->ssl_ctx) conn->tls_out = tri_pool_get(&ch->pool, 64 << 10, 0);
  conn->rbuf_cap = RBUF_SIZE;
  conn->rbuf = tri__channel_spare_take(ch, TRI_SPARE_RBUF);
  if (!conn->rbuf) conn->rbuf = tri_mem_alloc(&ch->stats, conn->rbuf_cap);
  conn->loop = ch->opts.io_loop;
  conn->epfd = epoll_create1(EPOLL_CLOEXEC);
  /* On a shared loop, wake-ups go to the loop's eventfd. */
  if (!conn->loop) conn->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  conn->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (!conn->out.e || !conn->out.staging || !conn->rbuf || conn->epfd < 0 ||
      (ch->ssl_ctx && !conn->tls_out) || (!conn->loop && conn->evfd < 0) ||
      conn->tfd < 0)
    goto fail;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = conn->evfd};
  if (!conn->loop && epoll_ctl(conn->epfd, EPOLL_CTL_ADD, conn->evfd, &ev))
    goto fail;
  struct epoll_event tev = {.events = EPOLLIN, .data.fd = conn->tfd};
  if (epoll_ctl(conn->epfd, EPOLL_CTL_ADD, conn->tfd, &tev)) goto fail;
  if (conn->loop) {
    conn->member.fd = conn->epfd;
    conn->member.step = loop_step;
    conn->member.leave = loop_leave;
    /* A loop made before fork() has no thread here: TRI_ERR_FORKED says so. */
    rv = tri_loop_attach(conn->loop, &conn->member);
    if (rv) goto fail;
  } else if (tri_thread_create(&conn->thread, "tri-io", conn_main, conn)) {
    goto fail;
  }
  TRI_STATS_ADD(&ch->stats, connects, 1);
  *out = conn;
  return 0;
fail:
  if (conn->epfd >= 0) close(conn->epfd);
  if (conn->evfd >= 0) close(conn->evfd);
  if (conn->tfd >= 0) close(conn->tfd);
  tri__channel_spare_put(ch, TRI_SPARE_RBUF, conn->rbuf);
  tri_pool_put(&ch->pool, conn->out.staging);
  tri_pool_put(&ch->pool, conn->tls_out);
  tri__channel_spare_put(ch, TRI_SPARE_OUT, conn->out.e);
  tri__channel_arena_put(ch, &conn->arena);
  tri_mem_free(conn);
  return rv;
}

void tri__conn_join(tri_conn *conn) {
  if (conn->joined) return;
  if (conn->loop) tri_loop_wait_left(conn->loop, &conn->member);
  else pthread_join(conn->thread, NULL);
  conn->joined = 1;
}

/* Connections inherited across fork() (tri__conn_abandon), linked through
 * next_retired: reachable, so leak checkers do not count them. */
static _Atomic(tri_conn *) abandoned;

void tri__conn_abandon(tri_conn *conn) {
  atomic_store(&conn->closed, 1);
  atomic_store(&conn->unusable, 1);
  int *fds[] = {&conn->fd, &conn->epfd, &conn->evfd, &conn->tfd};
  for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
    if (*fds[i] >= 0) close(*fds[i]);
    *fds[i] = -1;
  }
  conn->next_retired = atomic_load(&abandoned);
  while (!atomic_compare_exchange_weak(&abandoned, &conn->next_retired, conn)) {
  }
}

void tri__conn_free(tri_conn *conn) {
  tri__conn_join(conn);
  release_io_resources(conn); /* a no-op when the thread released them */
  tri_mem_free(conn);
}

/* ---- detached connections (tests and fuzzing) --------------------------
 * No socket and no thread: the caller plays the I/O thread.  Output is
 * discarded; tri__conn_feed pushes server bytes through the same receive
 * path (nghttp2, call handlers, completion) as a live connection. */

static void *detached_main(void *arg) {
  (void)arg;
  return NULL;
}

int tri__conn_nghttp2_rules;

int tri__conn_new_detached(tri_conn **out, tri_channel *ch) {
  tri_conn *conn = conn_alloc(ch);
  if (!conn) return TRI_ERR_NOMEM;
  conn->detached = 1;
  conn->nghttp2_rules = tri__conn_nghttp2_rules;
  if (!conn->out.e || !conn->out.staging || start_session(conn)) {
    tri__channel_spare_put(ch, TRI_SPARE_OUT, conn->out.e);
    tri_pool_put(&ch->pool, conn->out.staging);
    if (conn->sess) nghttp2_session_del(conn->sess);
    tri__channel_arena_put(ch, &conn->arena);
    tri_mem_free(conn);
    return TRI_ERR_NOMEM;
  }
  conn->connected = 1;
  /* A thread that exits at once keeps tri__conn_join/free uniform. */
  tri_thread_create(&conn->thread, "tri-io", detached_main, NULL);
  atomic_store(&conn->exited, 1);
  flush(conn); /* our preface and SETTINGS, discarded */
  *out = conn;
  return 0;
}

void tri__conn_run_ops(tri_conn *conn) {
  process_ops(conn);
  flush(conn);
}

int tri__conn_feed(tri_conn *conn, const uint8_t *data, size_t len) {
  if (conn->dead) return TRI_ERR_CLOSED;
  conn->last_read = tri__now();
  if (feed(conn, data, len)) return TRI_ERR_HTTP2;
  after_events(conn);
  return conn->dead ? TRI_ERR_HTTP2 : 0;
}

void tri__conn_kill(tri_conn *conn, int code, const char *why) {
  die(conn, code, why);
  if (conn->sess) {
    nghttp2_session_del(conn->sess);
    conn->sess = NULL;
  }
}

void tri__conn_tick(tri_conn *conn) {
  if (!conn->dead) after_events(conn);
}

void tri__conn_set_write_budget(tri_conn *conn, ssize_t budget) {
  conn->detached_budget = budget;
}
