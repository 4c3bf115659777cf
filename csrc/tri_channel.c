/*
 * tri_channel.c: channel lifetime, connection selection and reconnection,
 * the call pool, and the completion queue (see tri_channel.h).
 */
#include "tri_channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tri_conn.h"
#include "tri_error.h"
#include "tri_fork.h"
#include "tri_handoff.h"
#include "tri_loop.h"
#include "tri_int.h"
#include "tri_options.h"
#include "tri_wire.h"
#include "tri_writer.h"
#include "tri_tls.h"

#define CALL_POOL_MAX 4096

void tri_channel_opts_init(tri_channel_opts *o) {
  memset(o, 0, sizeof(*o));
  tri_channel_options_defaults(o); /* the table's (tri_options.c) */
}

int tri_channel_new(tri_channel **out, const tri_channel_opts *opts) {
  if (!opts->host || !opts->port || !*opts->host || !*opts->port)
    return TRI_ERR_INVALID;
  if (opts->max_frame_size < 16384 || opts->max_frame_size > 16777215 ||
      opts->stream_window > 0x7fffffffu || opts->conn_window > 0x7fffffffu ||
      opts->compress < TRI_COMPRESS_NONE || opts->compress > TRI_COMPRESS_GZIP)
    return TRI_ERR_INVALID;
  if (opts->address_kind < TRI_ADDRESS_TCP || opts->address_kind > TRI_ADDRESS_UNIX_ABSTRACT)
    return TRI_ERR_INVALID;
  if ((opts->wire != TRI_WIRE_GRPC && opts->wire != TRI_WIRE_TRIPLE) ||
      opts->dialect < TRI_DIALECT_AUTO || opts->dialect > TRI_DIALECT_SPEC)
    return TRI_ERR_INVALID;
  tri_channel *ch = tri_mem_calloc(NULL, 1, sizeof(*ch));
  if (!ch) return TRI_ERR_NOMEM;
  ch->opts = *opts;
  ch->fork_gen = tri_fork_generation();
  /* Copy the strings into one block. */
  char authority[300];
  if (opts->authority)
    snprintf(authority, sizeof(authority), "%s", opts->authority);
  else if (strchr(opts->host, ':'))
    snprintf(authority, sizeof(authority), "[%s]:%s", opts->host, opts->port);
  else
    snprintf(authority, sizeof(authority), "%s:%s", opts->host, opts->port);
  const char **fields[] = {&ch->opts.host,          &ch->opts.port,
                           &ch->opts.authority,     &ch->opts.user_agent,
                           &ch->opts.service_group, &ch->opts.service_version,
                           &ch->opts.triple_codec,  &ch->opts.tls_server_name};
  const char *values[] = {opts->host,
                          opts->port,
                          authority,
                          opts->user_agent ? opts->user_agent : TRI_USER_AGENT,
                          opts->service_group ? opts->service_group : "",
                          opts->service_version ? opts->service_version : "",
                          opts->triple_codec ? opts->triple_codec : "proto",
                          opts->tls_server_name && *opts->tls_server_name
                              ? opts->tls_server_name
                              : opts->host};
  size_t nfields = sizeof(values) / sizeof(values[0]), total = 0;
  for (size_t i = 0; i < nfields; i++) total += strlen(values[i]) + 1;
  ch->strings = tri_mem_alloc(&ch->stats, total);
  ch->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!ch->strings || ch->notify_fd < 0) {
    int rv = ch->strings ? TRI_ERR_SYSTEM : TRI_ERR_NOMEM;
    if (ch->notify_fd >= 0) close(ch->notify_fd);
    tri_mem_free(ch->strings);
    tri_mem_free(ch);
    return rv;
  }
  char *s = ch->strings;
  for (size_t i = 0; i < nfields; i++) {
    size_t l = strlen(values[i]) + 1;
    *fields[i] = memcpy(s, values[i], l);
    s += l;
  }
  ch->opts.tls_roots = ch->opts.tls_key = ch->opts.tls_chain = NULL; /* borrowed */
  ch->opts.tls_verify_file = ch->opts.tls_verify_dir = NULL;
  ch->opts.error_out = NULL;
  if (opts->tls) {
    char err[256] = "";
    int rv = tri_tls_ctx_new(&ch->ssl_ctx, opts->tls_roots, opts->tls_roots_len,
                             opts->tls_key, opts->tls_key_len, opts->tls_chain,
                             opts->tls_chain_len, err, sizeof(err));
    if (!rv && !opts->tls_roots)
      tri_tls_ctx_add_locations(ch->ssl_ctx, opts->tls_verify_file,
                                opts->tls_verify_dir);
    if (!rv && opts->tls_skip_verify) tri_tls_ctx_skip_verify(ch->ssl_ctx);
    if (rv) {
      if (opts->error_out) snprintf(opts->error_out, opts->error_out_len, "%s", err);
      close(ch->notify_fd);
      tri_mem_free(ch->strings);
      tri_mem_free(ch);
      return rv;
    }
  }
  snprintf(ch->opts.content_type_triple, sizeof(ch->opts.content_type_triple),
           "application/%s", ch->opts.triple_codec);
  if (ch->opts.min_connect_timeout_ms < TRI_BACKOFF_FLOOR_MS)
    ch->opts.min_connect_timeout_ms = TRI_BACKOFF_FLOOR_MS;
  if (ch->opts.keepalive_time_ms > INT32_MAX) ch->opts.keepalive_time_ms = 0; /* INT_MAX: off */
  tri_backoff_init(&ch->backoff, opts->initial_reconnect_backoff_ms,
                   opts->max_reconnect_backoff_ms,
                   (uint64_t)tri__now() ^ (uint64_t)(uintptr_t)ch);
  tri_pool_init(&ch->pool, &ch->stats);
  tri_gzip_pool_init(&ch->zpool, &ch->stats);
  pthread_mutex_init(&ch->lock, NULL);
  pthread_mutex_init(&ch->call_lock, NULL);
  pthread_mutex_init(&ch->poll_lock, NULL);
  pthread_mutex_init(&ch->spare_lock, NULL);
  for (int i = 0; i < 2; i++) tri_arena_init(&ch->spare[i], &ch->stats);
  tri_mpsc_init(&ch->completions);
  if (ch->opts.io_loop) tri_loop_ref(ch->opts.io_loop);
  *out = ch;
  return 0;
}

tri_stats *tri_channel_stats(tri_channel *ch) { return &ch->stats; }
tri_pool *tri_channel_pool(tri_channel *ch) { return &ch->pool; }
int tri_channel_notify_fd(tri_channel *ch) { return ch->notify_fd; }

int tri_channel_closed(tri_channel *ch) { return atomic_load(&ch->closed); }

int tri_channel_inherited(tri_channel *ch) { return tri_fork_inherited(ch->fork_gen); }

/* Frees retired connections whose thread has exited and that nobody else
 * references.  Channel lock held; never waits for a running thread, since an
 * exiting I/O thread may itself need the lock-free paths only. */
static void reap_retired(tri_channel *ch) {
  tri_conn **pp = &ch->retired;
  while (*pp) {
    tri_conn *conn = *pp;
    if (atomic_load(&conn->refs) == 1 && atomic_load(&conn->exited)) {
      *pp = conn->next_retired;
      tri__conn_free(conn);
    } else {
      pp = &conn->next_retired;
    }
  }
}

static void retire_current(tri_channel *ch) {
  ch->conn->next_retired = ch->retired;
  ch->retired = ch->conn;
  ch->conn = NULL;
}

/* Books how the current connection's attempt went, when it is retired: one
 * that got the server's SETTINGS worked (the backoff starts over and the next
 * connection opens at once); one that never did failed, and the next attempt
 * waits for the backoff, counted from when this one started.  Its cause is
 * final: the connection writes it before it marks itself unusable.  Channel
 * lock held. */
static void note_outcome(tri_channel *ch, tri_conn *conn) {
  if (atomic_load(&conn->established)) {
    tri_backoff_reset(&ch->backoff);
    ch->next_attempt = 0;
    return;
  }
  ch->next_attempt = tri_backoff_failed(&ch->backoff, conn->attempt_start);
  snprintf(ch->connect_error, sizeof(ch->connect_error), "%s",
           conn->errstr[0] ? conn->errstr : "the connection closed before HTTP/2 was up");
  TRI_STATS_ADD(&ch->stats, connect_failures, 1);
}

int tri__channel_conn(tri_channel *ch, tri_conn *avoid, tri_conn **out,
                      char *why, size_t why_len) {
  int rv = 0;
  *out = NULL;
  if (tri_channel_inherited(ch)) { /* before the lock: a parent thread may hold it */
    snprintf(why, why_len,
             "Channel was created before fork(): its connection belongs to the parent "
             "process; create a new channel in the child");
    return TRI_ERR_FORKED;
  }
  pthread_mutex_lock(&ch->lock);
  if (ch->closed) {
    rv = TRI_ERR_CLOSED;
    snprintf(why, why_len, "Channel closed");
    goto out;
  }
  if (ch->conn && (ch->conn == avoid || tri__conn_unusable(ch->conn))) {
    note_outcome(ch, ch->conn);
    retire_current(ch);
  }
  if (ch->retired) reap_retired(ch);
  if (!ch->conn) {
    int64_t now = tri__now();
    if (ch->next_attempt > now) {
      unsigned n = ch->backoff.failures;
      snprintf(why, why_len,
               "connection backoff: %u connection attempt%s failed, the next one "
               "in %lld ms; last error: %s",
               n, n == 1 ? "" : "s", (long long)((ch->next_attempt - now + 999999) / 1000000),
               ch->connect_error);
      rv = TRI_ERR_BACKOFF;
      goto out;
    }
    /* The attempt gets the backoff delay or the minimum, whichever is longer. */
    int64_t budget = tri_backoff_next_delay(&ch->backoff);
    int64_t floor = (int64_t)ch->opts.min_connect_timeout_ms * 1000000;
    rv = tri__conn_new(&ch->conn, ch, now + (budget > floor ? budget : floor));
    if (rv) {
      ch->conn = NULL;
      ch->next_attempt = tri_backoff_failed(&ch->backoff, now);
      snprintf(ch->connect_error, sizeof(ch->connect_error),
               "cannot open a connection: %s", tri_strerror(rv));
      TRI_STATS_ADD(&ch->stats, connect_failures, 1);
      snprintf(why, why_len, "%s", ch->connect_error);
      goto out;
    }
  }
  *out = ch->conn;
  tri__conn_ref(ch->conn);
out:
  pthread_mutex_unlock(&ch->lock);
  return rv;
}

/* tri_channel_close in a child of fork() for a channel of an ancestor: its
 * I/O threads do not exist here, and its lock may be held by a thread that
 * does not exist either.  Nothing is joined or locked; the connections are
 * abandoned (tri__conn_abandon) and the notify fd, shared with the parent,
 * is not written. */
static void close_inherited(tri_channel *ch) {
  if (atomic_exchange(&ch->closed, 1)) return;
  if (ch->conn) retire_current(ch);
  while (ch->retired) {
    tri_conn *c = ch->retired;
    ch->retired = c->next_retired;
    tri__conn_abandon(c);
  }
}

void tri_channel_close(tri_channel *ch) {
  tri__wakes_flush(); /* this thread's recorded wakes may name its connections */
  if (tri_channel_inherited(ch)) {
    close_inherited(ch);
    return;
  }
  pthread_mutex_lock(&ch->lock);
  if (ch->closed) {
    pthread_mutex_unlock(&ch->lock);
    return;
  }
  ch->closed = 1;
  if (ch->conn) retire_current(ch);
  /* Once closed, nobody else touches `retired`: join without the lock,
   * because dying I/O threads return calls to the pools. */
  pthread_mutex_unlock(&ch->lock);
  for (tri_conn *c = ch->retired; c; c = c->next_retired)
    tri__conn_shutdown(c);
  for (tri_conn *c = ch->retired; c; c = c->next_retired) tri__conn_join(c);
  pthread_mutex_lock(&ch->lock);
  reap_retired(ch);
  pthread_mutex_unlock(&ch->lock);
  uint64_t one = 1;
  ssize_t w = write(ch->notify_fd, &one, sizeof(one)); /* wake pollers */
  (void)w;
}

/* Frees a call struct the pool does not keep, with the header buffer it kept. */
static void free_call(tri_channel *ch, tri_call *c) {
  tri_pool_put(&ch->pool, c->hdr_spare);
  tri_mem_free(c);
}

void tri_channel_del(tri_channel *ch) {
  tri_channel_close(ch);
  /* In a fork child the queue started empty: the parent's count means
   * nothing there. */
  if (!tri_channel_inherited(ch)) tri__handoff_forget_channel(ch);
  while (ch->retired) {
    tri_conn *c = ch->retired;
    ch->retired = c->next_retired;
    tri__conn_free(c);
  }
  while (ch->call_free) {
    tri_call *c = ch->call_free;
    ch->call_free = c->io_next;
    free_call(ch, c);
  }
  for (int i = 0; i < 2; i++) { /* after the connections gave theirs back */
    tri_arena_free_all(&ch->spare[i]);
    tri_mem_free(ch->spare_block[TRI_SPARE_RBUF][i]);
    tri_mem_free(ch->spare_block[TRI_SPARE_OUT][i]);
  }
  pthread_mutex_destroy(&ch->spare_lock);
  tri_gzip_pool_free(&ch->zpool);
  if (ch->ssl_ctx) tri_tls_ctx_free(ch->ssl_ctx);
  tri_pool_free(&ch->pool);
  pthread_mutex_destroy(&ch->lock);
  pthread_mutex_destroy(&ch->call_lock);
  pthread_mutex_destroy(&ch->poll_lock);
  close(ch->notify_fd);
  /* Last: its connections have left it (joined above). */
  if (ch->opts.io_loop) tri_loop_unref(ch->opts.io_loop);
  tri_mem_free(ch->strings);
  tri_mem_free(ch);
}

/* ---- nghttp2 arena of finished connections ------------------------------ */

void tri__channel_arena_put(tri_channel *ch, tri_arena *a) {
  tri_arena drop;
  tri_arena_init(&drop, NULL);
  pthread_mutex_lock(&ch->spare_lock);
  /* The two largest are kept: merging every finished connection's blocks
   * would grow the spares (and the next sessions) towards the cap, and a
   * connection that died young has a small working set. */
  tri_arena *small = ch->spare[0].cached <= ch->spare[1].cached ? &ch->spare[0]
                                                                 : &ch->spare[1];
  if (a->cached > small->cached) {
    tri_arena_merge(&drop, small);
    tri_arena_merge(small, a);
  } else {
    tri_arena_merge(&drop, a);
  }
  pthread_mutex_unlock(&ch->spare_lock);
  tri_arena_free_all(&drop); /* outside the lock */
}

void tri__channel_arena_take(tri_channel *ch, tri_arena *a) {
  pthread_mutex_lock(&ch->spare_lock);
  tri_arena *big = ch->spare[0].cached >= ch->spare[1].cached ? &ch->spare[0]
                                                               : &ch->spare[1];
  tri_arena_merge(a, big);
  pthread_mutex_unlock(&ch->spare_lock);
}

void *tri__channel_spare_take(tri_channel *ch, int kind) {
  void *p = NULL;
  pthread_mutex_lock(&ch->spare_lock);
  for (int i = 0; i < 2 && !p; i++) {
    p = ch->spare_block[kind][i];
    ch->spare_block[kind][i] = NULL;
  }
  pthread_mutex_unlock(&ch->spare_lock);
  return p;
}

void tri__channel_spare_put(tri_channel *ch, int kind, void *p) {
  if (!p) return;
  pthread_mutex_lock(&ch->spare_lock);
  for (int i = 0; i < 2 && p; i++) {
    if (!ch->spare_block[kind][i]) {
      ch->spare_block[kind][i] = p;
      p = NULL;
    }
  }
  pthread_mutex_unlock(&ch->spare_lock);
  tri_mem_free(p);
}

/* ---- call pool ---------------------------------------------------------- */

tri_call *tri__channel_call_get(tri_channel *ch) {
  pthread_mutex_lock(&ch->call_lock);
  tri_call *c = ch->call_free;
  if (c) {
    ch->call_free = c->io_next;
    ch->call_free_n--;
  }
  pthread_mutex_unlock(&ch->call_lock);
  tri_buf *spare = NULL; /* a recycled struct keeps its header buffer */
  if (c) {
    TRI_STATS_ADD(&ch->stats, pool_hits, 1);
    spare = c->hdr_spare;
  } else {
    TRI_STATS_ADD(&ch->stats, pool_misses, 1);
    c = tri_mem_alloc(&ch->stats, sizeof(*c));
    if (!c) return NULL;
  }
  memset(c, 0, sizeof(*c));
  c->hdr_spare = spare;
  c->ch = ch;
  atomic_init(&c->refs, 1);
  c->deadline_slot = -1;
  c->grpc_status = -1;
  c->submit_op.kind = TRI_OP_SUBMIT;
  c->cancel_op.kind = TRI_OP_CANCEL;
  tri_frame_decoder_init(&c->dec);
  return c;
}

void tri__channel_call_put(tri_channel *ch, tri_call *c) {
  pthread_mutex_lock(&ch->call_lock);
  if (ch->call_free_n < CALL_POOL_MAX) {
    c->io_next = ch->call_free;
    ch->call_free = c;
    ch->call_free_n++;
    c = NULL;
  }
  pthread_mutex_unlock(&ch->call_lock);
  if (c) free_call(ch, c);
}

/* ---- completion queue --------------------------------------------------- */

static void notify_now(tri_channel *ch) {
  uint64_t one = 1;
  ssize_t w = write(ch->notify_fd, &one, sizeof(one));
  (void)w;
}

void tri__channel_notify(tri_channel *ch, tri_call *c) {
  tri_mpsc_push(&ch->completions, &c->notify_node);
  /* A hook takes it on this very thread before the thread sleeps again. */
  if (atomic_load(&ch->io_hook) && tri__conn_on_io_thread()) return;
  /* So does the driver of a driven loop, right after the turn. */
  if (ch->opts.io_loop && tri_loop_defer_notify(ch->opts.io_loop)) return;
  if (atomic_exchange(&ch->notify_pending, 1)) return;
  notify_now(ch);
}

/* Moves the queued completions to the end of the ready list (poll_lock
 * held).  Returns nonzero when there were any. */
static int splice_completions(tri_channel *ch) {
  tri_node *list = tri_mpsc_take_all(&ch->completions);
  if (!list) return 0;
  if (ch->ready_tail) ch->ready_tail->next = list;
  else ch->ready_head = list;
  while (list->next) list = list->next;
  ch->ready_tail = list;
  return 1;
}

static int take_ready(tri_channel *ch, void **tokens, int max) {
  int n = 0;
  while (n < max && ch->ready_head) {
    tri_node *node = ch->ready_head;
    ch->ready_head = node->next;
    if (!ch->ready_head) ch->ready_tail = NULL;
    tri_call *c = container_of(node, tri_call, notify_node);
    /* Later events queue it again.  A call done when taken may still have
     * its DONE notification on the way (done is stored before it is queued):
     * taking the queued flag back makes that one queue nothing, and this is
     * its last token; if the flag is already taken, DONE queued it again and
     * that token will be the last.  (Sequentially consistent, as on the I/O
     * side: the flag is cleared before done is read.) */
    atomic_store(&c->notify_queued, 0);
    int idle = 0;
    int last = atomic_load(&c->done) &&
               atomic_compare_exchange_strong(&c->notify_queued, &idle, 1);
    c->notify_final = last;
    tokens[n++] = c->token;
  }
  return n;
}

int tri_channel_take_completions(tri_channel *ch, void **tokens, int max) {
  pthread_mutex_lock(&ch->poll_lock);
  int n = take_ready(ch, tokens, max);
  if (n < max && splice_completions(ch)) n += take_ready(ch, tokens + n, max - n);
  pthread_mutex_unlock(&ch->poll_lock);
  return n;
}

void tri_channel_set_io_hook(tri_channel *ch, const tri_io_hook *hook) {
  atomic_store(&ch->io_hook, hook);
  /* A connection asleep in epoll_wait with nothing to wait for would never
   * call the new hook: wake it once. */
  pthread_mutex_lock(&ch->lock);
  if (ch->conn) tri__conn_kick(ch->conn);
  pthread_mutex_unlock(&ch->lock);
}

void tri_channel_wake_pollers(tri_channel *ch) {
  atomic_store(&ch->poll_wake, 1);
  notify_now(ch);
}

int tri_channel_poll_completions(tri_channel *ch, void **tokens, int max,
                                 int64_t timeout_ns) {
  int64_t end = timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
  pthread_mutex_lock(&ch->poll_lock);
  int n;
  for (;;) {
    n = take_ready(ch, tokens, max);
    if (n) break;
    /* Queued without a write (a driven loop's turn): no read needed.  A
     * write owed to others stays in the fd, so nothing is lost. */
    if (splice_completions(ch)) continue;
    uint64_t v;
    ssize_t r = read(ch->notify_fd, &v, sizeof(v));
    (void)r;
    atomic_store(&ch->notify_pending, 0);
    if (splice_completions(ch)) continue;
    if (tri_channel_closed(ch)) {
      n = TRI_ERR_CLOSED;
      break;
    }
    if (atomic_exchange(&ch->poll_wake, 0)) break;
    int ms = -1;
    if (timeout_ns >= 0) {
      int64_t left = end - tri__now();
      if (left <= 0) break;
      ms = (int)((left + 999999) / 1000000);
    }
    struct pollfd pfd = {.fd = ch->notify_fd, .events = POLLIN};
    tri__wakes_flush();
    poll(&pfd, 1, ms);
  }
  pthread_mutex_unlock(&ch->poll_lock);
  return n;
}
