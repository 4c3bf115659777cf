/*
 * runtime.c: the epoll loop of the embedded server (see runtime.h).
 */
#include "server/runtime.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/request.h"
#include "server/respond.h"
#include "server/testservice.h"
#include "tri_clock.h"
#include "tri_error.h"
#include "tri_h2.h"
#include "tri_wire.h"
#include "tri_thread.h"

#define RBUF_SIZE (256u << 10)      /* one read() per worker buffer */
#define READS_PER_EVENT 8           /* fairness between connections */
#define OUT_WATERMARK (2u << 20)    /* stop pulling frames above this */
#define IOV_BATCH 1024              /* IOV_MAX */
#define MAX_THREADS 64
#define SPARE_STREAMS 1024          /* stream objects kept per worker */
#define CLOSE_LINGER_MS 1000        /* a closing socket waits for EOF so long */

/* When the stream next needs the worker: its delay, then its deadline. */
static int64_t timer_at(const srv_stream *st) {
  if (st->finished) return 0;
  int64_t t = 0;
  if (!st->go && st->hold_until) t = st->hold_until;
  if (st->job_due && (!t || st->job_due < t)) t = st->job_due;
  if (st->deadline && (!t || st->deadline < t)) t = st->deadline;
  return t;
}

void srv_timer_remove(srv_worker *w, srv_stream *st) {
  if (st->timer_slot < 0) return;
  tri_deadlines_remove(&w->timers, st->timer_slot);
  st->timer_slot = -1;
}

int srv_timer_update(srv_worker *w, srv_stream *st) {
  int64_t t = timer_at(st);
  if (!t) {
    srv_timer_remove(w, st);
    return 0;
  }
  if (st->timer_slot >= 0) {
    tri_deadlines_update(&w->timers, st->timer_slot, t);
    return 0;
  }
  int slot = tri_deadlines_add(&w->timers, st, t);
  if (slot < 0) return -1;
  st->timer_slot = slot;
  return 0;
}

void srv_mark_dirty(srv_conn *c) {
  if (c->dirty) return;
  c->dirty = 1;
  c->dirty_next = c->w->dirty;
  c->w->dirty = c;
}

void srv_conn_kill(srv_conn *c) {
  c->dead = 1;
  srv_mark_dirty(c);
}

/* Returns a written (or dropped) entry's buffer to the pool. */
static void out_done(tri_outq_entry *e, void *pool) { tri_pool_put(pool, e->buf); }

/* Writes pending output, one sendmsg per IOV_BATCH entries.  Returns 1 when
 * all of it went, 0 when the socket is full, -1 on error. */
static int write_out(srv_conn *c) {
  while (!tri_outq_empty(&c->out)) {
    struct iovec iov[IOV_BATCH];
    size_t want, wrote = 0;
    size_t k = tri_outq_iov(&c->out, iov, IOV_BATCH, &want);
    if (k) {
      /* sendmsg, not writev: MSG_NOSIGNAL keeps a vanished client from
       * raising SIGPIPE in a host process that did not ignore it. */
      struct msghdr mh = {.msg_iov = iov, .msg_iovlen = k};
      ssize_t w;
      do {
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
      } while (w < 0 && errno == EINTR);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
      TRI_STATS_ADD(stats_of(c), write_syscalls, 1);
      TRI_STATS_ADD(stats_of(c), bytes_written, w);
      wrote = (size_t)w;
    }
    /* Retire what was written; empty entries only release their buffer. */
    if (tri_outq_written(&c->out, wrote, out_done, NULL, pool_of(c))) return 1;
    if (wrote < want) return 0; /* the kernel took less: socket full */
  }
  tri_outq_clear(&c->out);
  return 1;
}

/* The session is over (a GOAWAY sent or received, everything written):
 * our FIN goes out, but the socket stays open, its input read and dropped,
 * until the peer's EOF or CLOSE_LINGER_MS.  Closed with the peer's bytes
 * unread, the socket would answer them with a reset, and a peer still
 * writing (requests sent before our GOAWAY reached it) would get
 * ECONNRESET instead of reading the GOAWAY and why. */
static void conn_close_lingering(srv_conn *c) {
  if (shutdown(c->fd, SHUT_WR) < 0) {
    srv_conn_kill(c);
    return;
  }
  c->closing = 1;
  if (!c->linger_max) c->w->n_linger++;
  c->linger_min = c->linger_max = tri__now() + CLOSE_LINGER_MS * 1000000LL;
}

static void set_epollout(srv_conn *c, int on) {
  if (c->epollout == (unsigned)on) return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),
                           .data.ptr = c};
  epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
  c->epollout = on ? 1 : 0;
}

/* Pulls every frame nghttp2 has (up to the watermark) and writes them in
 * one writev, again while the session wants to write and the socket takes
 * it.  A full socket arms EPOLLOUT; the next wake-up goes on from there. */
static void conn_flush(srv_conn *c) {
  if (c->dead || c->closing) return;
  for (;;) {
    while (c->out.pending < OUT_WATERMARK) {
      const uint8_t *p;
      ssize_t n = nghttp2_session_mem_send(c->sess, &p);
      if (n < 0) {
        srv_conn_kill(c);
        return;
      }
      if (n == 0) break;
      if (tri_outq_stage(&c->out, p, (size_t)n)) {
        srv_conn_kill(c);
        return;
      }
    }
    if (tri_outq_empty(&c->out)) break;
    int rv = write_out(c);
    if (rv < 0) {
      srv_conn_kill(c);
      return;
    }
    if (rv == 0) {
      set_epollout(c, 1);
      return;
    }
    if (!nghttp2_session_want_write(c->sess)) break;
  }
  set_epollout(c, 0);
  /* After a GOAWAY (ours or the peer's) both end once everything is out
   * (but an x-misbehave GOAWAY lingers a little: misbehave_goaway). */
  if (!nghttp2_session_want_read(c->sess) &&
      !nghttp2_session_want_write(c->sess) &&
      !(c->linger_min && tri__now() < c->linger_min))
    conn_close_lingering(c);
}

/* Credits received bytes back to the peer's windows, except for streams
 * whose unsent responses are over STREAM_OUT_LIMIT (they wait until the
 * client reads).  Returns 1 when something was credited. */
static int settle(srv_conn *c) {
  int did = 0;
  srv_stream **pp = &c->owing;
  while (*pp) {
    srv_stream *st = *pp;
    if (st->q_bytes < STREAM_OUT_LIMIT) {
      nghttp2_session_consume(c->sess, st->id, (size_t)st->owed);
      st->owed = 0;
      st->on_owing = 0;
      *pp = st->owe_next;
      did = 1;
    } else {
      pp = &st->owe_next;
    }
  }
  if (c->conn_owed > 0) {
    nghttp2_session_consume_connection(c->sess, (size_t)c->conn_owed);
    c->conn_owed = 0;
    did = 1;
  }
  return did;
}

/* Emits a NO_COPY DATA frame: its header is copied, its payload is queued
 * by reference; the buffer moves to the output entry that ends it. */
static int send_data_cb(nghttp2_session *s, nghttp2_frame *frame,
                        const uint8_t *framehd, size_t length,
                        nghttp2_data_source *src, void *user) {
  (void)s;
  srv_conn *c = user;
  srv_stream *st = src->ptr;
  if (tri_h2_stage_data_head(&c->out, framehd, frame->data.padlen))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  tri_buf *h = st->q_head;
  if (length) {
    tri_outq_entry *e =
        tri_outq_push(&c->out, tri_buf_begin(h) + st->q_off, 0, length);
    if (!e) return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->q_ref = 1;
    st->q_off += length;
    st->q_bytes -= length;
    if (st->q_off == h->len) {
      e->buf = h;
      st->q_head = h->next;
      if (!st->q_head) st->q_tail = NULL;
      st->q_off = 0;
      st->q_ref = 0;
    }
  }
  if (tri_h2_stage_data_tail(&c->out, frame->data.padlen))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  return 0;
}

static srv_stream *stream_new(srv_conn *c, int32_t id) {
  srv_worker *w = c->w;
  srv_stream *st = w->spare;
  if (st) {
    w->spare = st->next;
    w->spare_n--;
  } else {
    st = tri_mem_alloc(stats_of(c), sizeof(*st));
    if (!st) return NULL;
  }
  memset(st, 0, sizeof(*st));
  st->conn = c;
  st->id = id;
  st->timer_slot = -1;
  st->ctl_status = -1;
  st->resp_size = -1;
  st->clen = -1;
  tri_frame_decoder_init(&st->dec);
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  TRI_STATS_ADD(stats_of(c), calls, 1);
  return st;
}

/* Frees a stream.  While the connection lives, a response buffer that DATA
 * frames still point into is handed to the output queue (an empty entry
 * after those frames) instead of being freed. */
static void stream_free(srv_stream *st, int conn_dying) {
  srv_conn *c = st->conn;
  srv_worker *w = c->w;
  tri_pool *pool = pool_of(c);
  srv_timer_remove(w, st);
  if (st->prev) st->prev->next = st->next;
  else c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  if (st->on_owing) {
    srv_stream **pp = &c->owing;
    while (*pp != st) pp = &(*pp)->owe_next;
    *pp = st->owe_next;
  }
  c->conn_owed += st->owed;
  tri_buf *b = st->q_head;
  if (b && st->q_ref && !conn_dying) {
    tri_buf *next = b->next;
    tri_outq_entry *e = tri_outq_push(&c->out, NULL, 0, 0);
    if (e) {
      e->buf = b;
    } else {
      srv_conn_kill(c); /* the queue will never be written: free it now */
      tri_pool_put(pool, b);
    }
    b = next;
  }
  while (b) {
    tri_buf *next = b->next;
    tri_pool_put(pool, b);
    b = next;
  }
  if (st->pump_blocked) c->n_blocked--;
  tri_mem_free(st->jobs);
  tri_pool_put(pool, st->cur);
  tri_pool_put(pool, st->body);
  tri_pool_put(pool, st->md);
  tri_pool_put(pool, st->msg);
  if (w->spare_n < SPARE_STREAMS) {
    st->next = w->spare;
    w->spare = st;
    w->spare_n++;
  } else {
    tri_mem_free(st);
  }
}

static srv_stream *stream_of(nghttp2_session *s, int32_t id) {
  return nghttp2_session_get_stream_user_data(s, id);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f,
                            void *user) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  srv_stream *st = stream_new(user, f->hd.stream_id);
  if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets it */
  nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st);
  return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
                     const uint8_t *name, size_t nl, const uint8_t *value,
                     size_t vl, uint8_t flags, void *user) {
  (void)flags, (void)user;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0; /* trailers from the client carry nothing we use */
  srv_stream *st = stream_of(s, f->hd.stream_id);
  if (st) srv_req_header(st, name, nl, value, vl);
  return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f,
                         void *user) {
  (void)user;
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
  srv_stream *st = stream_of(s, f->hd.stream_id);
  if (!st) return 0;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
    srv_headers_done(st);
  if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) srv_request_end(st);
  srv_mark_dirty(st->conn);
  return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
                         const uint8_t *data, size_t len, void *user) {
  (void)flags;
  srv_conn *c = user;
  srv_stream *st = stream_of(s, id);
  if (!st) {
    c->conn_owed += (int64_t)len;
    return 0;
  }
  st->owed += (int64_t)len;
  if (!st->on_owing) {
    st->on_owing = 1;
    st->owe_next = c->owing;
    c->owing = st;
  }
  srv_mark_dirty(c);
  if (st->finished || st->never) return 0; /* the rest is dropped */
  if (st->wire == WIRE_GRPC) srv_grpc_data(st, data, len);
  else srv_triple_data(st, data, len);
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *user) {
  (void)code, (void)user;
  srv_stream *st = stream_of(s, id);
  if (st) stream_free(st, 0);
  return 0;
}

/* Takes `fd` (closing it on failure). */
static void conn_new(srv_worker *w, int fd) {
  tri_server *s = w->srv;
  srv_conn *c = tri_mem_calloc(&s->stats, 1, sizeof(*c));
  if (!c) goto fail;
  c->w = w;
  c->fd = fd;
  tri_arena_init(&c->arena, &s->stats);
  tri_h2_mem_init(&c->mem, &c->arena); /* nghttp2 allocates from the arena */
  tri_outq_entry *entries = tri_mem_alloc(&s->stats, 64 * sizeof(*entries));
  tri_buf *staging = tri_pool_get(&s->pool, 64u << 10, 0);
  if (!entries || !staging) {
    tri_mem_free(entries);
    tri_pool_put(&s->pool, staging);
    goto fail;
  }
  tri_outq_init(&c->out, entries, 64, staging, &s->pool, &s->stats, 1);
  if (nghttp2_session_server_new3(&c->sess, w->cbs, c, w->opt, &c->mem))
    goto fail;
  const tri_server_opts *o = &s->opts;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o->max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o->stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, o->max_frame_size},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, o->max_metadata_size},
  };
  if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv,
                              sizeof(iv) / sizeof(iv[0])) ||
      nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0,
                                            (int32_t)o->conn_window))
    goto fail;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) goto fail;
  c->next = w->conns;
  if (w->conns) w->conns->prev = c;
  w->conns = c;
  TRI_STATS_ADD(&s->stats, connects, 1);
  srv_mark_dirty(c); /* our SETTINGS go out now */
  return;
fail:
  close(fd);
  if (!c) return;
  if (c->sess) nghttp2_session_del(c->sess);
  tri_pool_put(&s->pool, c->out.staging);
  tri_mem_free(c->out.e);
  tri_arena_free_all(&c->arena);
  tri_mem_free(c);
}

static void conn_free(srv_conn *c) {
  srv_worker *w = c->w;
  tri_pool *pool = pool_of(c);
  if (c->linger_max) w->n_linger--;
  epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  nghttp2_session_del(c->sess); /* calls no callbacks */
  tri_outq_drop(&c->out, out_done, pool);
  while (c->streams) stream_free(c->streams, 1);
  tri_pool_put(pool, c->out.staging);
  tri_mem_free(c->out.e);
  tri_arena_free_all(&c->arena);
  if (c->prev) c->prev->next = c->next;
  else w->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  tri_mem_free(c);
}

/* Hands n received bytes to the session.  A protocol error ends the
 * connection (with a GOAWAY when it can still go out). */
static void conn_input(srv_conn *c, const uint8_t *p, size_t n) {
  ssize_t rv = nghttp2_session_mem_recv(c->sess, p, n);
  if (rv < 0) {
    /* Not HTTP/2 (bad preface) or a fatal error: say so if we can. */
    nghttp2_session_terminate_session(c->sess, NGHTTP2_PROTOCOL_ERROR);
    conn_flush(c);
    if (!c->closing) srv_conn_kill(c); /* the GOAWAY could not go out */
  }
}

static void conn_read(srv_conn *c) {
  srv_worker *w = c->w;
  for (int i = 0; i < READS_PER_EVENT; i++) {
    ssize_t r = read(c->fd, w->rbuf, RBUF_SIZE);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r <= 0) { /* reset, or the client went away */
      srv_conn_kill(c);
      return;
    }
    TRI_STATS_ADD(stats_of(c), read_syscalls, 1);
    TRI_STATS_ADD(stats_of(c), bytes_read, r);
    if (!c->closing) conn_input(c, w->rbuf, (size_t)r);
    if (c->dead || (size_t)r < RBUF_SIZE) return; /* drained: level-triggered */
  }
}

/* Resumes the job queues that waited for their output to drain.  Returns 1
 * when one went on. */
static int unblock(srv_conn *c) {
  int did = 0;
  for (srv_stream *st = c->streams; st && c->n_blocked; st = st->next) {
    if (!st->pump_blocked || st->q_bytes >= STREAM_OUT_LIMIT) continue;
    st->pump_blocked = 0;
    c->n_blocked--;
    srv_ts_pump(st);
    did = 1;
  }
  return did;
}

static void process_dirty(srv_worker *w) {
  while (w->dirty) {
    srv_conn *c = w->dirty;
    w->dirty = c->dirty_next;
    /* c->dirty stays set meanwhile, so marks made now are no-ops. */
    if (!c->dead) {
      settle(c);
      conn_flush(c);
      if (!c->dead && settle(c)) conn_flush(c);
      while (!c->dead && c->n_blocked && unblock(c)) conn_flush(c);
    }
    c->dirty = 0;
    if (c->dead) conn_free(c);
  }
}

/* Ends the x-misbehave GOAWAY lingers that are over (a session that has
 * ended then closes lingering; one still open at linger_max is cut) and
 * the lingering closes past their time. */
static void run_lingers(srv_worker *w, int64_t now) {
  for (srv_conn *c = w->conns; c && w->n_linger; c = c->next) {
    if (!c->linger_max || c->dead) continue;
    int over = now >= c->linger_max;
    if (c->closing) {
      if (over) srv_conn_kill(c);
    } else if (over ||
               (now >= c->linger_min && !nghttp2_session_want_read(c->sess) &&
                !nghttp2_session_want_write(c->sess))) {
      conn_flush(c);
      if (over || !c->closing) srv_conn_kill(c);
    }
  }
}

/* The earliest linger end still to come (0: none). */
static int64_t next_linger(srv_worker *w) {
  int64_t t = 0;
  if (!w->n_linger) return 0;
  for (srv_conn *c = w->conns; c; c = c->next) {
    if (!c->linger_max || c->dead) continue;
    int64_t at = c->linger_min > tri__now() ? c->linger_min : c->linger_max;
    if (!t || at < t) t = at;
  }
  return t;
}

static void run_timers(srv_worker *w) {
  int64_t now = tri__now();
  if (w->n_linger) run_lingers(w, now);
  while (tri_deadlines_count(&w->timers) &&
         tri_deadlines_first_at(&w->timers) <= now) {
    srv_stream *st = tri_deadlines_first(&w->timers);
    srv_timer_remove(w, st);
    if (st->conn->dead) continue;
    if (!st->go && st->hold_until && st->hold_until <= now) srv_stream_go(st);
    if (!st->finished && st->job_due && st->job_due <= now) srv_ts_pump(st);
    if (!st->finished && st->deadline && st->deadline <= now)
      srv_stream_deadline(st);
    if (srv_timer_update(w, st))
      srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    srv_mark_dirty(st->conn);
  }
}

static int next_timeout_ms(srv_worker *w) {
  int64_t at = tri_deadlines_count(&w->timers)
                   ? tri_deadlines_first_at(&w->timers)
                   : 0,
          lg = next_linger(w);
  if (lg && (!at || lg < at)) at = lg;
  return tri_clock_timeout_ms(at);
}

/* Takes the sockets the acceptor handed over. */
static void adopt(srv_worker *w) {
  for (;;) {
    int fds[64];
    pthread_mutex_lock(&w->lock);
    size_t n = w->pend_n < 64 ? w->pend_n : 64;
    if (n) memcpy(fds, w->pend + (w->pend_n - n), n * sizeof(int));
    w->pend_n -= n;
    pthread_mutex_unlock(&w->lock);
    if (!n) return;
    for (size_t i = 0; i < n; i++) conn_new(w, fds[i]);
  }
}

/* Frees the spare stream objects and the timers' arrays of a worker that
 * has no stream left. */
static void worker_release(srv_worker *w) {
  while (w->spare) {
    srv_stream *st = w->spare;
    w->spare = st->next;
    tri_mem_free(st);
  }
  w->spare_n = 0;
  tri_deadlines_free(&w->timers);
}

static void *worker_main(void *arg) {
  srv_worker *w = arg;
  tri_server *s = w->srv;
  struct epoll_event evs[64];
  while (!atomic_load(&s->stopping)) {
    int n = epoll_wait(w->epfd, evs, 64, next_timeout_ms(w));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      srv_conn *c = evs[i].data.ptr;
      if (!c) { /* the eventfd: new sockets or stop */
        uint64_t v;
        ssize_t r = read(w->evfd, &v, sizeof(v));
        (void)r;
        adopt(w);
        continue;
      }
      if (c->dead) continue;
      if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) conn_read(c);
      srv_mark_dirty(c);
    }
    run_timers(w);
    process_dirty(w);
  }
  /* Stop: a GOAWAY where it can go out at once, then close everything. */
  for (srv_conn *c = w->conns; c; c = c->next) {
    if (c->dead) continue;
    nghttp2_session_terminate_session(c->sess, NGHTTP2_NO_ERROR);
    conn_flush(c);
  }
  w->dirty = NULL;
  while (w->conns) conn_free(w->conns);
  pthread_mutex_lock(&w->lock);
  for (size_t i = 0; i < w->pend_n; i++) close(w->pend[i]);
  w->pend_n = 0;
  pthread_mutex_unlock(&w->lock);
  worker_release(w);
  return NULL;
}

/* Gives an accepted socket to the next worker (round robin). */
static void hand_over(tri_server *s, int fd) {
  srv_worker *w = &s->workers[s->rr++ % (unsigned)s->nworkers];
  pthread_mutex_lock(&w->lock);
  if (w->pend_n == w->pend_cap) {
    size_t cap = w->pend_cap ? 2 * w->pend_cap : 16;
    int *p = tri_mem_alloc(&s->stats, cap * sizeof(int));
    if (!p) {
      pthread_mutex_unlock(&w->lock);
      close(fd);
      return;
    }
    if (w->pend_n) memcpy(p, w->pend, w->pend_n * sizeof(int));
    tri_mem_free(w->pend);
    w->pend = p;
    w->pend_cap = cap;
  }
  w->pend[w->pend_n++] = fd;
  pthread_mutex_unlock(&w->lock);
  uint64_t one = 1;
  ssize_t r = write(w->evfd, &one, sizeof(one));
  (void)r;
}

static void *acceptor_main(void *arg) {
  tri_server *s = arg;
  struct pollfd pf[2] = {{.fd = s->lfd, .events = POLLIN},
                         {.fd = s->stop_fd, .events = POLLIN}};
  while (!atomic_load(&s->stopping)) {
    int n = poll(pf, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pf[1].revents) break;
    if (!(pf[0].revents & POLLIN)) continue;
    for (;;) {
      int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM)
          poll(&pf[1], 1, 10); /* out of descriptors: back off a little */
        break;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      hand_over(s, fd);
    }
  }
  return NULL;
}

void tri_server_opts_init(tri_server_opts *o) {
  memset(o, 0, sizeof(*o));
  o->host = "127.0.0.1";
  o->port = 0;
  o->threads = 1;
  o->stream_window = (16u << 20) - 1;
  o->conn_window = (1u << 30) - 1;
  o->max_frame_size = 64u << 10;
  o->max_concurrent_streams = 10000;
  o->max_message = 64 << 20;
  o->max_metadata_size = 64u << 10;
}

int tri_server_new(tri_server **out, const tri_server_opts *opts) {
  tri_server_opts o;
  if (opts) o = *opts;
  else tri_server_opts_init(&o);
  if (!o.host) o.host = "127.0.0.1";
  if (o.threads == 0) o.threads = 1;
  if (o.threads < 0 || o.threads > MAX_THREADS || o.port < 0 ||
      o.port > 65535 || strlen(o.host) >= 256 ||
      o.stream_window > (uint32_t)INT32_MAX ||
      o.conn_window > (uint32_t)INT32_MAX || o.max_frame_size < 16384 ||
      o.max_frame_size > 16777215 || o.max_message < 0 ||
      o.max_message > (int64_t)UINT32_MAX)
    return TRI_ERR_INVALID;
  tri_server *s = tri_mem_calloc(NULL, 1, sizeof(*s));
  if (!s) return TRI_ERR_NOMEM;
  TRI_STATS_ADD(&s->stats, allocations, 1); /* itself */
  s->workers = tri_mem_calloc(&s->stats, (size_t)o.threads, sizeof(srv_worker));
  if (!s->workers) {
    tri_mem_free(s);
    return TRI_ERR_NOMEM;
  }
  s->opts = o;
  snprintf(s->hostbuf, sizeof(s->hostbuf), "%s", o.host);
  s->opts.host = s->hostbuf;
  s->nworkers = o.threads;
  s->lfd = s->stop_fd = -1;
  tri_pool_init(&s->pool, &s->stats);
  tri_gzip_pool_init(&s->zp, &s->stats);
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    w->srv = s;
    w->epfd = w->evfd = -1;
    tri_deadlines_init(&w->timers, &s->stats);
    pthread_mutex_init(&w->lock, NULL);
  }
  *out = s;
  return 0;
}

/* Stops and joins every thread that runs, and closes what start opened. */
static void shutdown_threads(tri_server *s) {
  atomic_store(&s->stopping, 1);
  uint64_t one = 1;
  ssize_t r;
  if (s->stop_fd >= 0) r = write(s->stop_fd, &one, sizeof(one));
  if (s->acceptor_running) pthread_join(s->acceptor, NULL);
  s->acceptor_running = 0;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (w->running) {
      r = write(w->evfd, &one, sizeof(one));
      pthread_join(w->thread, NULL);
      w->running = 0;
    }
  }
  (void)r;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (w->epfd >= 0) close(w->epfd);
    if (w->evfd >= 0) close(w->evfd);
    w->epfd = w->evfd = -1;
    tri_mem_free(w->rbuf);
    w->rbuf = NULL;
    tri_pool_put(&s->pool, w->scratch);
    w->scratch = NULL;
    if (w->cbs) nghttp2_session_callbacks_del(w->cbs);
    if (w->opt) nghttp2_option_del(w->opt);
    w->cbs = NULL;
    w->opt = NULL;
  }
  if (s->lfd >= 0) close(s->lfd);
  if (s->stop_fd >= 0) close(s->stop_fd);
  s->lfd = s->stop_fd = -1;
}

static int listen_on(tri_server *s) {
  char port[8];
  snprintf(port, sizeof(port), "%d", s->opts.port);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const char *host = s->opts.host[0] ? s->opts.host : NULL;
  int rv = getaddrinfo(host, port, &hints, &res);
  if (rv) {
    snprintf(s->errstr, sizeof(s->errstr), "cannot resolve %s: %s",
             s->opts.host, gai_strerror(rv));
    return TRI_ERR_RESOLVE;
  }
  int err = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    int fd =
        socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof(ss);
      getsockname(fd, (struct sockaddr *)&ss, &sl);
      s->port = ntohs(ss.ss_family == AF_INET6
                          ? ((struct sockaddr_in6 *)&ss)->sin6_port
                          : ((struct sockaddr_in *)&ss)->sin_port);
      s->lfd = fd;
      freeaddrinfo(res);
      return 0;
    }
    err = errno;
    close(fd);
  }
  freeaddrinfo(res);
  snprintf(s->errstr, sizeof(s->errstr), "cannot listen on %s:%d: %s",
           s->opts.host, s->opts.port, strerror(err));
  return TRI_ERR_SYSTEM;
}

static int make_callbacks(srv_worker *w) {
  if (nghttp2_session_callbacks_new(&w->cbs) || nghttp2_option_new(&w->opt))
    return -1;
  nghttp2_session_callbacks *cb = w->cbs;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(cb, send_data_cb);
  nghttp2_session_callbacks_set_data_source_read_length_callback(
      cb, tri_h2_read_length);
  nghttp2_option_set_no_auto_window_update(w->opt, 1); /* see settle() */
  nghttp2_option_set_no_closed_streams(w->opt, 1);
  /* Accept values with outer blanks, as grpc-go and grpcio servers do. */
  nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(w->opt, 1);
  tri_h2_set_max_continuations(w->opt, w->srv->opts.max_metadata_size);
  return 0;
}

int tri_server_start(tri_server *s) {
  if (s->started) return TRI_ERR_INVALID;
  s->started = 1;
  s->errstr[0] = 0;
  int rv = listen_on(s);
  if (rv) {
    s->stopped = 1;
    return rv;
  }
  s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->stop_fd < 0) goto fail;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->rbuf = tri_mem_alloc(&s->stats, RBUF_SIZE);
    w->scratch = tri_pool_get(&s->pool, 4096, 0);
    if (w->epfd < 0 || w->evfd < 0 || !w->rbuf || !w->scratch ||
        make_callbacks(w))
      goto fail;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev)) goto fail;
  }
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (tri_thread_create(&w->thread, "tri-srv", worker_main, w)) goto fail;
    w->running = 1;
  }
  if (tri_thread_create(&s->acceptor, "tri-srv-accept", acceptor_main, s)) goto fail;
  s->acceptor_running = 1;
  return 0;
fail:
  if (!s->errstr[0])
    snprintf(s->errstr, sizeof(s->errstr), "cannot start the server: %s",
             strerror(errno));
  shutdown_threads(s);
  s->stopped = 1;
  return TRI_ERR_SYSTEM;
}

int tri_server_port(const tri_server *s) { return s->port; }

int tri_server_stop(tri_server *s) {
  if (!s->started || s->stopped) return 0;
  shutdown_threads(s);
  s->stopped = 1;
  return 0;
}

void tri_server_del(tri_server *s) {
  if (!s) return;
  tri_server_stop(s);
  for (int i = 0; i < s->nworkers; i++) {
    pthread_mutex_destroy(&s->workers[i].lock);
    tri_mem_free(s->workers[i].pend);
  }
  tri_mem_free(s->workers);
  tri_gzip_pool_free(&s->zp);
  tri_pool_free(&s->pool);
  tri_mem_free(s);
}

const tri_stats *tri_server_stats(const tri_server *s) { return &s->stats; }

const char *tri_server_errstr(const tri_server *s) { return s->errstr; }

/* ==== test and fuzzing hook ============================================== */

/* Reads and drops what the server wrote to the other end of its socket. */
static void discard(int fd) {
  uint8_t buf[16384];
  while (read(fd, buf, sizeof(buf)) > 0) continue;
}

/* One pass of the worker loop without waiting: due timers, then the dirty
 * connections; the output is read and dropped. */
static void feed_pass(srv_worker *w, int peer) {
  if (w->conns) srv_mark_dirty(w->conns);
  run_timers(w);
  process_dirty(w);
  discard(peer);
}

int tri__server_feed(tri_server *s, const uint8_t *data, size_t n) {
  srv_worker *w = &s->workers[0];
  if (!s->started) { /* the worker's parts, no thread; stop releases them */
    s->started = 1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->scratch = tri_pool_get(&s->pool, 4096, 0);
    if (w->epfd < 0 || !w->scratch || make_callbacks(w)) return TRI_ERR_SYSTEM;
  }
  if (!w->cbs || s->stopped || w->running) return TRI_ERR_SYSTEM;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
    return TRI_ERR_SYSTEM;
  conn_new(w, sv[0]); /* takes sv[0] */
  if (!w->conns) {
    close(sv[1]);
    return TRI_ERR_NOMEM;
  }
  feed_pass(w, sv[1]);
  /* In slices, as reads would bring it, with a loop pass after each. */
  for (size_t off = 0; off < n && w->conns;) {
    size_t k = n - off < 4096 ? n - off : 4096;
    if (!w->conns->dead) conn_input(w->conns, data + off, k);
    off += k;
    feed_pass(w, sv[1]);
  }
  for (int i = 0; i < 4 && w->conns; i++) feed_pass(w, sv[1]);
  w->dirty = NULL;
  while (w->conns) conn_free(w->conns);
  worker_release(w);
  close(sv[1]);
  return 0;
}
