/*
 * tri_load.c: the C load generator (see tri_load.h for the model).
 *
 * Each driver thread owns one channel and an array of N slots; a slot holds
 * one call in flight and is the call's notify token.  The loop: start calls
 * in free slots (closed loop: all of them; open loop: those whose intended
 * time has come), give pending streams their remaining writes, sleep in
 * ppoll on the channel's notify fd until a completion or the next intended
 * send, harvest completions, record, repeat.  Only the thread that owns a
 * worker touches it, so recording needs no atomics; the shared state is the
 * start gate (lock/cond), the stop flag, the count tickets and the series.
 */
#include "tri_load.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "tri_buf.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_clock.h"
#include "tri_conn.h"
#include "tri_error.h"
#include "tri_frame.h"
#include "tri_mem.h"
#include "tri_options.h"
#include "tri_pb.h"
#include "tri_stats.h"
#include "tri_thread.h"
#include "tri_wire.h"

#define MAX_PAYLOAD ((size_t)64 << 20)
#define MAX_CONNECTIONS 256
#define MAX_CONCURRENCY 100000
#define MAX_STREAM_MESSAGES 10000000
#define MAX_SECONDS 1e7 /* duration, warm-up, timeout: at most */
#define MAX_RATE 1e9    /* calls/s: at most */
#define MAX_PHASE_NS (3600 * NS)
#define MAX_COUNT 1e18 /* calls: 30 years at 1e9/s */
#define EAGER_READ_BYTES (1 << 20) /* see "How one thread keeps N streams" */
#define PENDING_POLL_NS 20000LL     /* retry pending writes / eager reads */
#define STALE_PASS_NS 20000000LL    /* I/O-driven: no pass for this long, the
                                       driver thread makes one itself */
#define DRIVER_NAP_NS 5000000LL     /* I/O-driven: the driver thread's check */
#define IDLE_POLL_NS 100000000LL    /* longest sleep: stop flag and deadline */
#define PRIME_TIMEOUT_NS 10000000000LL
#define SERIES_MAX 86400            /* seconds kept in count-only runs */
#define NS 1000000000LL

static const char UNARY_PATH[] = "/benchmark.BenchmarkService/UnaryCall";
static const char STREAM_PATH[] = "/benchmark.BenchmarkService/StreamCall";

typedef struct slot {
  tri_call *call;      /* NULL when the slot is free */
  int64_t t_start;     /* just before tri_call_start */
  int64_t t_intended;  /* open loop: the schedule; closed: t_start */
  int warm;            /* intended during the warm-up */
  int writes_left;     /* streaming: messages not written yet */
  int writing;         /* streaming: done_writing not called yet */
  int in_pending;      /* on the worker's pending list */
  uint64_t sent, received;
  int mismatched;      /* verify: a response differed from its request */
  struct slot *next_pending;
  const tri_ring_entry *entry; /* ring runs: this call's request */
} slot;

typedef struct sec_entry {
  tri_hist *h;
  uint64_t calls, errors;
} sec_entry;

typedef struct worker {
  struct tri_load *l;
  int id;
  pthread_t thread;
  tri_channel *ch;      /* owned */
  tri_buf *msg;         /* packed request, TRI_FRAME_PREFIX headroom; owned */
  slot *slots;          /* N, owned */
  slot **free_slots;    /* stack of free slots, owned */
  int nfree;
  void **tokens;        /* N, owned */
  int active;
  slot *pending;        /* streams with writes left */
  int eager;            /* BIDI: drain responses every iteration */
  int big_checked, big_writes;
  tri_hist *lat, *corr, *wlat, *wcorr; /* corr/wcorr alias lat/wlat when closed */
  tri_hist *sec;        /* current second of the series */
  int64_t cur_sec;
  uint64_t sec_calls, sec_errors;
  int64_t next_intended, interval;
  int measuring;
  int nst;
  uint64_t st0[TRI_LOAD_MAX_COUNTERS], st1[TRI_LOAD_MAX_COUNTERS];
  int64_t cpu0, cpu1;
  int64_t last_done;
  uint64_t calls, errors, wcalls, werrors, codes[TRI_LOAD_CODES];
  uint64_t msent, mrecv, short_streams, resp_bytes, missed, mismatches;
  /* The loop's state between passes (see step). */
  int stopping, cancelled, started_done;
  int64_t t_last_start;         /* the clock read by the last start_call */
  int64_t stop_at;
  /* I/O-driven runs (see "Who runs the loop" in tri_load.h). */
  int on_io;
  tri_io_hook hook;             /* {io_pass, this worker} */
  pthread_mutex_t pass_lock;    /* one pass at a time */
  _Atomic int finished;         /* a pass saw the end */
  _Atomic int64_t last_pass;    /* when a pass last began (ns) */
} worker;

struct tri_load {
  tri_load_config cfg;   /* strings point into `strings` */
  char *strings;
  size_t path_len;
  int flags;             /* tri_call_new flags */
  int open_loop;
  int64_t timeout_ns;    /* per call, -1: none */
  int64_t drain_ns;
  uint8_t *payload;
  tri_ring *ring;        /* the request ring, owned; NULL: BenchmarkRequests */
  _Atomic uint64_t req_seq; /* the next call's number (ring runs) */
  worker *w;
  int nw;

  pthread_mutex_t lock;  /* guards the fields down to `err` */
  pthread_cond_t cond;
  int nthreads, ready, running, go, started, finished;
  int64_t t0, warmup_end, deadline, late_ns;
  int err;
  char errstr[256];

  _Atomic int stop;
  _Atomic uint64_t issued;     /* count tickets taken */
  _Atomic int ru_taken;
  struct rusage ru0, ru1;      /* ru0 by the first measuring thread, ru1 by
                                  the last thread out; read after the joins */
  int have_ru0, have_ru1;

  pthread_mutex_t series_lock;
  sec_entry *series;
  size_t series_cap, series_n;
  int64_t series_seconds; /* ceil(duration): later completions (the drain)
                             count in the last second; INT64_MAX without */

  tri_hist *lat, *corr, *wlat, *wcorr;
  uint64_t *s_calls, *s_errors;
  int64_t *s_p99;
  tri_load_result res;
};

static void set_error_locked(tri_load *l, int err, const char *fmt, ...) {
  if (l->err) return;
  l->err = err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->errstr, sizeof(l->errstr), fmt, ap);
  va_end(ap);
  pthread_cond_broadcast(&l->cond);
}

static void set_error(tri_load *l, int err, const char *what) {
  pthread_mutex_lock(&l->lock);
  set_error_locked(l, err, "%s: %s", what, tri_strerror(err));
  pthread_mutex_unlock(&l->lock);
  atomic_store(&l->stop, 1);
}

void tri_load_config_init(tri_load_config *c) {
  memset(c, 0, sizeof(*c));
  c->host = "127.0.0.1";
  c->port = "50051";
  c->mode = TRI_LOAD_UNARY;
  c->connections = 1;
  c->concurrency = 1;
  c->duration_s = 10;
  c->payload_size = 128;
  c->stream_messages = 1;
  c->timeout_s = 10;
  c->shared_request = 1;
  c->series_digits = TRI_LOAD_SERIES_DIGITS;
  tri_channel_opts_init(&c->channel); /* the table's defaults (tri_options.c) */
}

static const tri_load_limit limits[] = {
    {"payload_size", 0, (double)MAX_PAYLOAD},
    {"connections", 1, MAX_CONNECTIONS},
    {"concurrency", 1, MAX_CONCURRENCY},
    {"stream_messages", 1, MAX_STREAM_MESSAGES},
    {"duration", 0, MAX_SECONDS},
    {"warmup", 0, MAX_SECONDS},
    {"timeout", 0, MAX_SECONDS},
    {"rate", 0, MAX_RATE},
    {"hist_digits", 0, TRI_HIST_MAX_DIGITS},
    {"series_digits", 1, TRI_HIST_MAX_DIGITS},
    {"phase_ns", 0, (double)MAX_PHASE_NS},
    {"requests", 1, TRI_RING_MAX_ENTRIES},
    {"count", 0, MAX_COUNT},
    {"start_at_ns", 0, (double)INT64_MAX},
    {"endpoints", 0, MAX_CONNECTIONS},
};

const tri_load_limit *tri_load_limits(size_t *n) {
  *n = sizeof(limits) / sizeof(limits[0]);
  return limits;
}

const char *tri_load_config_problem(const tri_load_config *c) {
  if (!c->host || !*c->host) return "host is empty";
  if (!c->port || !*c->port) return "port is empty";
  if (c->nendpoints < 0 || c->nendpoints > MAX_CONNECTIONS || (c->nendpoints && !c->endpoints))
    return "nendpoints must be 0..256";
  if (c->nendpoints > c->connections)
    return "fewer connections than endpoints (connection i goes to endpoint i % n)";
  for (int i = 0; i < c->nendpoints; i++) {
    const tri_load_endpoint *e = &c->endpoints[i];
    if (!e->host || !*e->host || !e->port || !*e->port) return "an endpoint is empty";
    if (e->address_kind < TRI_ADDRESS_TCP || e->address_kind > TRI_ADDRESS_UNIX_ABSTRACT)
      return "unknown endpoint address kind";
  }
  if (c->path && c->path[0] != '/') return "path must start with '/'";
  if (c->mode < TRI_LOAD_UNARY || c->mode > TRI_LOAD_BIDI) return "unknown mode";
  if (c->connections < 1 || c->connections > MAX_CONNECTIONS)
    return "connections must be 1..256";
  if (c->concurrency < 1 || c->concurrency > MAX_CONCURRENCY)
    return "concurrency must be 1..100000";
  /* NaN fails every comparison, so test the good ranges. */
  if (!(c->duration_s >= 0 && c->duration_s <= MAX_SECONDS)) return "bad duration";
  if (!(c->warmup_s >= 0 && c->warmup_s <= MAX_SECONDS)) return "bad warmup";
  if (!(c->rate >= 0 && c->rate <= MAX_RATE)) return "bad rate";
  if (!(c->timeout_s <= MAX_SECONDS) && !(c->timeout_s <= 0)) return "bad timeout";
  if ((double)c->count > MAX_COUNT) return "count must be 0..1e18";
  if (c->duration_s == 0 && c->count == 0)
    return "needs a duration or a count";
  if (c->payload_size > MAX_PAYLOAD) return "payload_size over 64 MiB";
  if (c->mode == TRI_LOAD_BIDI &&
      (c->stream_messages < 1 || c->stream_messages > MAX_STREAM_MESSAGES))
    return "stream_messages must be 1..10000000";
  if (c->hist_digits < 0 || c->hist_digits > TRI_HIST_MAX_DIGITS)
    return "hist_digits must be 0..4";
  if (c->series_digits < 1 || c->series_digits > TRI_HIST_MAX_DIGITS)
    return "series_digits must be 1..4";
  if (c->start_at_ns < 0) return "start_at_ns must be >= 0";
  if (c->phase_ns < 0 || c->phase_ns > MAX_PHASE_NS) return "phase_ns must be 0..1 h";
  if (c->channel.wire != TRI_WIRE_GRPC && c->channel.wire != TRI_WIRE_TRIPLE)
    return "unknown wire";
  if (c->requests && (c->nrequests < 1 || c->nrequests > TRI_RING_MAX_ENTRIES))
    return "nrequests must be 1..16777216";
  if (c->channel.compress < TRI_COMPRESS_NONE ||
      c->channel.compress > TRI_COMPRESS_GZIP)
    return "unknown compression";
  if (c->rate_schedule.start > 0 && tri_sched_problem(&c->rate_schedule))
    return tri_sched_problem(&c->rate_schedule);
  if (c->concurrency_schedule.start > 0 && tri_sched_problem(&c->concurrency_schedule))
    return tri_sched_problem(&c->concurrency_schedule);
  if (c->rate_schedule.start > 0 && c->rate_schedule.start > MAX_RATE) return "bad rate";
  if (c->channel.dialect < TRI_DIALECT_AUTO ||
      c->channel.dialect > TRI_DIALECT_SPEC)
    return "unknown Triple dialect";
  return NULL;
}

/* `src` is the caller's configuration: the strings and PEM bytes of its
 * channel options and its error_out are only borrowed during tri_load_new. */
static int worker_init(tri_load *l, worker *w, int id, const tri_load_config *src) {
  const tri_load_config *c = &l->cfg;
  w->l = l;
  w->id = id;
  pthread_mutex_init(&w->pass_lock, NULL);
  tri_channel_opts o = src->channel;
  o.host = c->host;
  o.port = c->port;
  if (src->nendpoints > 0) { /* connection i -> endpoint i % n */
    const tri_load_endpoint *e = &src->endpoints[id % src->nendpoints];
    o.host = e->host;
    o.port = e->port;
    o.address_kind = e->address_kind;
  }
  size_t size = l->ring ? tri_ring_max_len(l->ring) : c->payload_size;
  if (o.max_recv_bytes >= 0 && (int64_t)size + 1024 > o.max_recv_bytes)
    o.max_recv_bytes = (int64_t)size + 1024; /* echoes come back */
  /* Unary runs that keep no response bodies have nothing to read in place:
   * no frame tracking on their connections. */
  if (c->mode == TRI_LOAD_UNARY && !c->verify) o.in_place_reads = 0;
  int rv = tri_channel_new(&w->ch, &o);
  if (rv) return rv;
  /* Every call in flight holds a request and a response buffer: keep that
   * many, or big messages go back to malloc (and the kernel) on every call. */
  tri_pool_keep(tri_channel_pool(w->ch), 2 * (size_t)c->concurrency + 2, size + 64);
  if (l->ring) {
    const tri_ring_entry *e = tri_ring_at(l->ring, 0);
    w->msg = tri_pool_get(tri_channel_pool(w->ch), e->len, TRI_FRAME_PREFIX);
    rv = w->msg ? tri_buf_append(tri_channel_pool(w->ch), &w->msg, e->body, e->len)
                : TRI_ERR_NOMEM;
  } else {
    rv = tri_pb_pack_benchmark_request(tri_channel_pool(w->ch), l->payload,
                                       c->payload_size, TRI_FRAME_PREFIX, &w->msg);
  }
  if (rv) return rv;
  int n = c->concurrency;
  w->slots = tri_mem_calloc(NULL, (size_t)n, sizeof(slot));
  w->free_slots = tri_mem_calloc(NULL, (size_t)n, sizeof(slot *));
  w->tokens = tri_mem_calloc(NULL, (size_t)n, sizeof(void *));
  if (!w->slots || !w->free_slots || !w->tokens) return TRI_ERR_NOMEM;
  for (int i = n - 1; i >= 0; i--) w->free_slots[w->nfree++] = &w->slots[i];
  int d = c->hist_digits;
  if ((rv = tri_hist_new(&w->lat, d)) || (rv = tri_hist_new(&w->wlat, d)) ||
      (rv = tri_hist_new(&w->sec, c->series_digits)))
    return rv;
  if (l->open_loop) {
    if ((rv = tri_hist_new(&w->corr, d)) || (rv = tri_hist_new(&w->wcorr, d)))
      return rv;
  } else {
    w->corr = w->lat;
    w->wcorr = w->wlat;
  }
  w->cur_sec = -1;
  w->eager = c->mode == TRI_LOAD_BIDI &&
             (double)c->stream_messages * (double)(w->msg->len + TRI_FRAME_PREFIX) >
                 EAGER_READ_BYTES;
  return 0;
}

static void worker_free(worker *w) {
  if (!w->l) return; /* never initialized */
  pthread_mutex_destroy(&w->pass_lock);
  if (w->ch) {
    tri_pool_put(tri_channel_pool(w->ch), w->msg);
    tri_channel_del(w->ch);
  }
  tri_mem_free(w->slots);
  tri_mem_free(w->free_slots);
  tri_mem_free(w->tokens);
  if (w->corr != w->lat) tri_hist_del(w->corr);
  if (w->wcorr != w->wlat) tri_hist_del(w->wcorr);
  tri_hist_del(w->lat);
  tri_hist_del(w->wlat);
  tri_hist_del(w->sec);
}

/* NULLs the strings and PEM bytes of `o` (every STR and PEM row of the
 * table) and its error_out: borrowed from the caller during tri_load_new. */
static void forget_borrowed(tri_channel_opts *o) {
  for (size_t i = 0; i < tri_channel_option_count(); i++) {
    const tri_option *opt = &tri_channel_options[i];
    if (opt->type == TRI_OPT_STR || opt->type == TRI_OPT_PEM)
      tri_option_set_str(o, opt, NULL, 0);
  }
  o->host = o->port = NULL;
  o->error_out = NULL;
  o->error_out_len = 0;
}

int tri_load_new(tri_load **out, const tri_load_config *cfg) {
  if (tri_load_config_problem(cfg)) return TRI_ERR_INVALID;
  tri_load *l = tri_mem_calloc(NULL, 1, sizeof(*l));
  if (!l) return TRI_ERR_NOMEM;
  pthread_mutex_init(&l->lock, NULL);
  pthread_mutex_init(&l->series_lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cond, &ca);
  pthread_condattr_destroy(&ca);
  l->cfg = *cfg;
  l->cfg.requests = NULL; /* the ring holds the copy */
  forget_borrowed(&l->cfg.channel); /* the channels copy them */
  l->cfg.endpoints = NULL; /* borrowed: the channels copied them */
  const char *path = cfg->path ? cfg->path
                     : cfg->mode == TRI_LOAD_BIDI ? STREAM_PATH : UNARY_PATH;
  size_t lh = strlen(cfg->host) + 1, lp = strlen(cfg->port) + 1,
         lpath = strlen(path) + 1;
  int rv = TRI_ERR_NOMEM;
  l->strings = tri_mem_alloc(NULL, lh + lp + lpath);
  l->payload = tri_mem_alloc(NULL, cfg->payload_size ? cfg->payload_size : 1);
  l->w = tri_mem_calloc(NULL, (size_t)cfg->connections, sizeof(worker));
  if (!l->strings || !l->payload || !l->w) goto fail;
  l->cfg.host = memcpy(l->strings, cfg->host, lh);
  l->cfg.port = memcpy(l->strings + lh, cfg->port, lp);
  l->cfg.path = memcpy(l->strings + lh + lp, path, lpath);
  l->path_len = lpath - 1;
  memset(l->payload, 'a', cfg->payload_size);
  /* Nothing reads a unary response's bytes unless the run verifies them:
   * they are checked and counted. */
  l->flags = cfg->mode == TRI_LOAD_UNARY ? (cfg->verify ? 0 : TRI_CALL_DISCARD_BODY)
             : cfg->mode == TRI_LOAD_UNARY_STREAM_PATH
                 ? TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING |
                       TRI_CALL_UNARY_BODY /* bare body on the Triple wire */
                 : TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING;
  l->open_loop = cfg->rate > 0 || cfg->rate_schedule.start > 0;
  l->timeout_ns = cfg->timeout_s > 0 ? (int64_t)(cfg->timeout_s * 1e9) : -1;
  l->drain_ns = l->timeout_ns > 0 ? l->timeout_ns + NS : 10 * NS;
  l->series_cap = cfg->duration_s > 0
                      ? (size_t)(cfg->duration_s + (double)l->drain_ns / 1e9) + 3
                      : SERIES_MAX;
  if (l->series_cap > SERIES_MAX) l->series_cap = SERIES_MAX;
  l->series_seconds = INT64_MAX;
  if (cfg->duration_s > 0) {
    l->series_seconds = (int64_t)cfg->duration_s;
    if ((double)l->series_seconds < cfg->duration_s) l->series_seconds++;
  }
  if (cfg->requests && (rv = tri_ring_new(&l->ring, cfg->requests, cfg->nrequests)))
    goto fail;
  rv = TRI_ERR_NOMEM;
  l->series = tri_mem_calloc(NULL, l->series_cap, sizeof(sec_entry));
  if (!l->series) goto fail;
  int d = cfg->hist_digits;
  if ((rv = tri_hist_new(&l->lat, d)) || (rv = tri_hist_new(&l->wlat, d)))
    goto fail;
  if (l->open_loop) {
    if ((rv = tri_hist_new(&l->corr, d)) || (rv = tri_hist_new(&l->wcorr, d)))
      goto fail;
  } else {
    l->corr = l->lat;
    l->wcorr = l->wlat;
  }
  l->nw = cfg->connections;
  for (int i = 0; i < l->nw; i++)
    if ((rv = worker_init(l, &l->w[i], i, cfg))) goto fail;
  *out = l;
  return 0;
fail:
  tri_load_del(l);
  return rv;
}

/* ---- one call ------------------------------------------------------------ */

static void release_slot(worker *w, slot *s) {
  s->call = NULL;
  s->writes_left = 0;
  s->writing = 0;
  w->free_slots[w->nfree++] = s;
  w->active--;
}

/* Writes one request message: the shared bytes, or a freshly packed one. */
static int write_one(worker *w, slot *s) {
  if (s->entry) return tri_call_write(s->call, s->entry->body, s->entry->len);
  if (w->l->cfg.shared_request)
    return tri_call_write(s->call, tri_buf_begin(w->msg), w->msg->len);
  tri_pool *pool = tri_channel_pool(w->ch);
  tri_buf *b;
  int rv = tri_pb_pack_benchmark_request(pool, w->l->payload,
                                         w->l->cfg.payload_size, 0, &b);
  if (rv) return rv;
  rv = tri_call_write(s->call, tri_buf_begin(b), b->len);
  tri_pool_put(pool, b);
  return rv;
}

/* Reads every queued response message; returns their bytes. */
/* Marks `s` mismatched unless the n bytes at p are its request's: the ring
 * entry it sends, else the worker's BenchmarkRequest (a request packed anew
 * has the same bytes). */
static void verify_echo(const worker *w, slot *s, const uint8_t *p, size_t n) {
  const uint8_t *want = s->entry ? s->entry->body : tri_buf_begin(w->msg);
  size_t len = s->entry ? s->entry->len : w->msg->len;
  if (n != len || (n && memcmp(p, want, n) != 0)) s->mismatched = 1;
}

/* Reads (and with verify, compares) every message the stream has queued;
 * returns their bytes. */
static uint64_t drain_reads(const worker *w, slot *s) {
  tri_buf *m;
  uint64_t bytes = 0;
  while (tri_call_read(s->call, 0, &m) == 1) {
    s->received++;
    bytes += m->len;
    if (w->l->cfg.verify) verify_echo(w, s, tri_buf_begin(m), m->len);
    tri_call_msg_release(s->call, m);
  }
  return bytes;
}

static void add_pending(worker *w, slot *s) {
  if (s->in_pending) return;
  s->in_pending = 1;
  s->next_pending = w->pending;
  w->pending = s;
}

/* Gives a stream the writes that fit without blocking, then half-closes it.
 * Returns with writes left only when it is (now) on the pending list. */
static void service_writes(worker *w, slot *s) {
  tri_call *c = s->call;
  size_t n = s->entry ? s->entry->len : w->msg->len;
  while (s->writes_left > 0) {
    if (tri_call_done(c)) { /* ended early: the completion will tell */
      s->writes_left = 0;
      s->writing = 0;
      return;
    }
    if (!w->big_writes && !tri_call_write_would_not_block(c, n)) {
      /* On a fresh stream nothing is unsent yet: then the message alone is
       * over the writer's limit and no write of it can ever be
       * non-blocking, so this worker writes blocking from now on. */
      if (!w->big_checked && s->sent == 0) {
        w->big_writes = 1;
      } else {
        add_pending(w, s);
        return;
      }
    }
    w->big_checked = 1;
    if (w->big_writes && w->eager) drain_reads(w, s);
    int rv = write_one(w, s);
    if (rv < 0) {
      if (rv != TRI_ERR_CLOSED) tri_call_cancel(c, TRI_CODE_INTERNAL, "load: write failed");
      s->writes_left = 0;
      s->writing = 0;
      return;
    }
    s->writes_left--;
    s->sent++;
  }
  w->big_checked = 1;
  if (s->writing) {
    s->writing = 0;
    int rv = tri_call_done_writing(c);
    if (rv < 0 && rv != TRI_ERR_CLOSED)
      tri_call_cancel(c, TRI_CODE_INTERNAL, "load: half-close failed");
  }
}

static void service_pending(worker *w) {
  slot *list = w->pending;
  w->pending = NULL;
  while (list) {
    slot *s = list;
    list = s->next_pending;
    s->in_pending = 0;
    if (s->call && s->writes_left > 0) service_writes(w, s);
  }
}

/* Adds a ring entry's request metadata to a call not started yet. */
static int add_entry_metadata(tri_call *c, const tri_ring_entry *e) {
  for (size_t i = 0; i < e->nmd; i++) {
    int rv = tri_call_add_metadata(c, e->md[i].key, e->md[i].key_len, e->md[i].value,
                                   e->md[i].value_len);
    if (rv) return rv;
  }
  return 0;
}

/* Schedules: the interval between one thread's sends at time t (ns), and
 * the calls this connection may have in flight at time now. */
static int64_t interval_at(worker *w, int64_t t) {
  tri_load *l = w->l;
  double rate = tri_sched_at(&l->cfg.rate_schedule, (double)(t - l->warmup_end) / 1e9, 1e-3);
  double iv = 1e9 * (double)l->nw / rate;
  return iv < 1 ? 1 : iv > 1e15 ? (int64_t)1e15 : (int64_t)iv;
}

static int in_flight_cap(worker *w, int64_t now) {
  tri_load *l = w->l;
  if (!(l->cfg.concurrency_schedule.start > 0)) return l->cfg.concurrency;
  double total = tri_sched_at(&l->cfg.concurrency_schedule,
                              (double)(now - l->warmup_end) / 1e9, 1);
  double share = total / l->nw;
  int cap = share >= l->cfg.concurrency ? l->cfg.concurrency : (int)(share + 0.5);
  return cap < 1 ? 1 : cap;
}

/* Starts a call in a free slot.  intended < 0: closed loop (= start time). */
static int start_call(worker *w, int64_t intended, int warm) {
  tri_load *l = w->l;
  tri_call *c;
  int rv = tri_call_new(w->ch, &c, l->cfg.path, l->path_len, l->timeout_ns,
                        l->flags);
  if (rv) {
    set_error(l, rv, "load: tri_call_new");
    return rv;
  }
  const tri_ring_entry *e = NULL;
  if (l->ring) {
    e = tri_ring_at(l->ring, atomic_fetch_add_explicit(&l->req_seq, 1,
                                                       memory_order_relaxed));
    if ((rv = add_entry_metadata(c, e))) {
      tri_call_release(c);
      set_error(l, rv, "load: adding request metadata");
      return rv;
    }
    if (l->cfg.mode == TRI_LOAD_UNARY) tri_call_set_request_borrowed(c, e->body, e->len);
  } else if (l->cfg.mode == TRI_LOAD_UNARY) {
    if (l->cfg.shared_request) {
      tri_call_set_request_borrowed(c, tri_buf_begin(w->msg), w->msg->len);
    } else {
      tri_buf *b;
      rv = tri_pb_pack_benchmark_request(tri_channel_pool(w->ch), l->payload,
                                         l->cfg.payload_size, TRI_FRAME_PREFIX, &b);
      if (rv) {
        tri_call_release(c);
        set_error(l, rv, "load: packing the request");
        return rv;
      }
      tri_call_set_request_buf(c, b);
    }
  }
  slot *s = w->free_slots[--w->nfree];
  w->active++;
  tri_call_set_notify(c, s);
  s->call = c;
  s->entry = e;
  s->warm = warm;
  s->sent = s->received = 0;
  s->mismatched = 0;
  s->writes_left = l->cfg.mode == TRI_LOAD_BIDI ? l->cfg.stream_messages
                   : l->cfg.mode == TRI_LOAD_UNARY_STREAM_PATH ? 1 : 0;
  s->writing = l->cfg.mode != TRI_LOAD_UNARY;
  s->t_start = w->t_last_start = tri__now();
  s->t_intended = intended < 0 ? s->t_start : intended;
  tri_call_start(c);
  if (s->writing) service_writes(w, s);
  /* Failed at once (no connection, say): its completion is queued already,
   * and on an I/O thread nothing will wake us for it. */
  if (tri_call_done(c)) w->started_done = 1;
  return 0;
}

static void flush_second(worker *w) {
  if (w->cur_sec < 0 || (!w->sec_calls && !w->sec_errors)) return;
  tri_load *l = w->l;
  size_t i = (size_t)w->cur_sec;
  if (i >= l->series_cap) i = l->series_cap - 1;
  pthread_mutex_lock(&l->series_lock);
  sec_entry *e = &l->series[i];
  if (!e->h) tri_hist_new(&e->h, l->cfg.series_digits); /* NULL: p99 lost */
  if (e->h) tri_hist_add(e->h, w->sec);
  e->calls += w->sec_calls;
  e->errors += w->sec_errors;
  if (i + 1 > l->series_n) l->series_n = i + 1;
  pthread_mutex_unlock(&l->series_lock);
  tri_hist_reset(w->sec);
  w->sec_calls = w->sec_errors = 0;
}

/* A harvested completion, taken at `now`: record it and free the slot. */
static void complete(worker *w, slot *s, int64_t now) {
  tri_load *l = w->l;
  tri_call *c = s->call;
  int code = tri_call_code(c);
  if (code < 0 || code >= TRI_LOAD_CODES) code = TRI_CODE_UNKNOWN;
  uint64_t resp = 0;
  if (l->cfg.mode == TRI_LOAD_BIDI) {
    drain_reads(w, s);
  } else if (l->cfg.mode == TRI_LOAD_UNARY_STREAM_PATH) {
    resp = drain_reads(w, s);
    if (code == TRI_CODE_OK && s->received != 1) code = TRI_CODE_INTERNAL;
    if (code != TRI_CODE_OK) resp = 0;
  } else {
    size_t n;
    if (tri_call_response_size(c, &n)) resp = n;
    if (l->cfg.verify && code == TRI_CODE_OK) {
      const uint8_t *p;
      tri_call_response(c, &p, &n);
      verify_echo(w, s, p, p ? n : 0);
    }
  }
  tri_call_release(c);
  int64_t lat = now - s->t_start, corr = now - s->t_intended;
  int mismatch = code == TRI_CODE_OK && s->mismatched;
  int err = code != TRI_CODE_OK || mismatch;
  if (s->warm) {
    tri_hist_record(w->wlat, lat);
    if (w->wcorr != w->wlat) tri_hist_record(w->wcorr, corr);
    w->wcalls++;
    w->werrors += (uint64_t)err;
  } else {
    tri_hist_record(w->lat, lat);
    if (w->corr != w->lat) tri_hist_record(w->corr, corr);
    w->calls++;
    w->errors += (uint64_t)err;
    if (mismatch)
      w->mismatches++;
    else
      w->codes[code]++;
    w->msent += s->sent;
    w->mrecv += s->received;
    w->resp_bytes += resp;
    if (l->cfg.mode == TRI_LOAD_BIDI && !err &&
        s->received < (uint64_t)l->cfg.stream_messages)
      w->short_streams++;
    if (now > w->last_done) w->last_done = now;
    int64_t sec = (now - l->warmup_end) / NS;
    if (sec < 0) sec = 0;
    if (sec >= l->series_seconds) sec = l->series_seconds - 1; /* drained */
    if (sec != w->cur_sec) {
      flush_second(w);
      w->cur_sec = sec;
    }
    tri_hist_record(w->sec, corr);
    w->sec_calls++;
    w->sec_errors += (uint64_t)err;
  }
  release_slot(w, s);
}

static void cancel_all(worker *w) {
  for (int i = 0; i < w->l->cfg.concurrency; i++)
    if (w->slots[i].call)
      tri_call_cancel(w->slots[i].call, TRI_CODE_CANCELLED, "load stopped");
}

static void snapshot(worker *w, uint64_t *st) {
  w->nst = tri_stats_snapshot(tri_channel_stats(w->ch), st, TRI_LOAD_MAX_COUNTERS);
}

static void begin_measuring(worker *w) {
  tri_load *l = w->l;
  w->measuring = 1;
  snapshot(w, w->st0);
  w->cpu0 = tri_clock_thread_cpu_ns();
  int expected = 0;
  if (atomic_compare_exchange_strong(&l->ru_taken, &expected, 1)) {
    getrusage(RUSAGE_SELF, &l->ru0);
    l->have_ru0 = 1;
  }
}

/* ---- the driver thread --------------------------------------------------- */

/* One blocking call in the run's shape: opens the connection before the
 * clock starts.  Returns TRI_ERR_CONNECT when it ends UNAVAILABLE. */
static int prime(worker *w, char *why, size_t why_len) {
  tri_load *l = w->l;
  tri_call *c;
  int64_t t = l->timeout_ns > 0 && l->timeout_ns < PRIME_TIMEOUT_NS
                  ? l->timeout_ns : PRIME_TIMEOUT_NS;
  int rv = tri_call_new(w->ch, &c, l->cfg.path, l->path_len, t, l->flags);
  if (rv) {
    snprintf(why, why_len, "tri_call_new: %s", tri_strerror(rv));
    return rv;
  }
  if (l->ring && (rv = add_entry_metadata(c, tri_ring_at(l->ring, 0)))) {
    tri_call_release(c);
    snprintf(why, why_len, "request metadata: %s", tri_strerror(rv));
    return rv;
  }
  if (l->cfg.mode == TRI_LOAD_UNARY)
    tri_call_set_request_borrowed(c, tri_buf_begin(w->msg), w->msg->len);
  tri_call_start(c);
  if (l->cfg.mode != TRI_LOAD_UNARY) {
    if (tri_call_write(c, tri_buf_begin(w->msg), w->msg->len) == 0)
      tri_call_done_writing(c);
    if (l->cfg.mode == TRI_LOAD_BIDI) {
      tri_buf *m;
      while (tri_call_read(c, -1, &m) == 1) tri_call_msg_release(c, m);
    }
  }
  tri_call_wait(c, -1);
  rv = 0;
  if (tri_call_code(c) == TRI_CODE_UNAVAILABLE) {
    const char *msg;
    size_t n;
    tri_call_message(c, &msg, &n);
    snprintf(why, why_len, "%s:%s unavailable: %.*s", l->cfg.host, l->cfg.port,
             (int)n, msg);
    rv = TRI_ERR_CONNECT;
  }
  tri_call_release(c);
  return rv;
}

/* The start gate: the last thread to be primed starts the clock. */
static int wait_ready(worker *w, int prime_rv, const char *why) {
  tri_load *l = w->l;
  pthread_mutex_lock(&l->lock);
  if (prime_rv) set_error_locked(l, prime_rv, "%s", why);
  if (++l->ready == l->nthreads && !l->err) {
    int64_t now = tri__now();
    l->t0 = now > l->cfg.start_at_ns ? now : l->cfg.start_at_ns;
    l->late_ns = l->cfg.start_at_ns && now > l->cfg.start_at_ns
                     ? now - l->cfg.start_at_ns : 0;
    l->warmup_end = l->t0 + (int64_t)(l->cfg.warmup_s * 1e9);
    l->deadline = l->cfg.duration_s > 0
                      ? l->warmup_end + (int64_t)(l->cfg.duration_s * 1e9)
                      : INT64_MAX;
    l->go = 1;
    pthread_cond_broadcast(&l->cond);
  }
  while (!l->go && !l->err && !atomic_load(&l->stop))
    pthread_cond_wait(&l->cond, &l->lock);
  int ok = l->go && !l->err;
  pthread_mutex_unlock(&l->lock);
  return ok;
}

/* One pass of the driver loop: take the completions, decide whether to
 * stop, start calls in the free slots, give pending streams their writes.
 * Returns 1 when this worker's run is over; otherwise 0, with *sleep_ns the
 * longest the caller may wait for a completion before the next pass. */
static int step(worker *w, int64_t *sleep_ns) {
  tri_load *l = w->l;
  const tri_load_config *c = &l->cfg;
  int n = w->on_io ? tri_channel_take_completions(w->ch, w->tokens, c->concurrency)
                   : tri_channel_poll_completions(w->ch, w->tokens, c->concurrency, 0);
  if (n < 0) { /* the channel closed under us: nothing more will come */
    set_error(l, TRI_ERR_CLOSED, "load: channel closed");
    return 1;
  }
  /* One clock for the batch: its calls were all read by the same read(). */
  int64_t now = tri__now();
  for (int i = 0; i < n; i++) complete(w, (slot *)w->tokens[i], now);
  w->started_done = 0;
  if (!w->stopping) {
    if (atomic_load(&l->stop)) {
      w->stopping = 1;
      cancel_all(w);
      w->cancelled = 1;
    } else if (now >= l->deadline) {
      w->stopping = 1;
      if (l->open_loop && w->next_intended < l->deadline) {
        int64_t from = w->next_intended > l->warmup_end ? w->next_intended
                                                         : l->warmup_end;
        w->missed += (uint64_t)((l->deadline - from + w->interval - 1) / w->interval);
      }
    }
    if (w->stopping) w->stop_at = now;
  }
  int cap = in_flight_cap(w, now);
  while (!w->stopping && w->nfree > 0 && w->active < cap) {
    int64_t intended = -1, t = now;
    if (l->open_loop) {
      if (w->next_intended > now) break;
      intended = t = w->next_intended;
    }
    int warm = t < l->warmup_end;
    if (!warm && c->count && atomic_fetch_add(&l->issued, 1) >= c->count) {
      w->stopping = 1;
      w->stop_at = now;
      break;
    }
    if (!warm && !w->measuring) begin_measuring(w);
    if (l->open_loop) {
      if (l->cfg.rate_schedule.start > 0) w->interval = interval_at(w, w->next_intended);
      w->next_intended += w->interval;
    }
    if (start_call(w, intended, warm)) {
      w->stopping = 1;
      w->stop_at = now;
      break;
    }
    if (!l->open_loop) now = w->t_last_start;
  }
  if (w->stopping) {
    if (w->active == 0) return 1;
    if (!w->cancelled && (atomic_load(&l->stop) || now - w->stop_at > l->drain_ns)) {
      cancel_all(w);
      w->cancelled = 1;
    }
  }
  if (w->pending) service_pending(w);
  if (w->eager)
    for (int i = 0; i < c->concurrency; i++)
      if (w->slots[i].call) drain_reads(w, &w->slots[i]);
  int64_t to;
  if (w->started_done) {
    to = 0;
  } else if (w->pending || w->eager) {
    to = PENDING_POLL_NS;
  } else if (w->stopping) {
    to = IDLE_POLL_NS;
  } else if (l->open_loop && w->nfree > 0) {
    to = w->next_intended - tri__now();
    if (to > l->deadline - now) to = l->deadline - now;
  } else {
    to = l->deadline - now;
  }
  if (to > IDLE_POLL_NS) to = IDLE_POLL_NS;
  *sleep_ns = to;
  return 0;
}

/* Sleeps up to timeout_ns (ns precision: ppoll) or until the channel's
 * notify fd says a completion is waiting. */
static void wait_notify(worker *w, int64_t timeout_ns) {
  if (timeout_ns <= 0) return;
  struct timespec ts = {timeout_ns / NS, timeout_ns % NS};
  struct pollfd p = {.fd = tri_channel_notify_fd(w->ch), .events = POLLIN};
  ppoll(&p, 1, &ts, NULL);
}

/* The I/O hook: one pass on the connection's I/O thread.  Returns how many
 * ms that thread may sleep (-1: until an event). */
static int io_pass(void *arg) {
  worker *w = arg;
  if (pthread_mutex_trylock(&w->pass_lock)) return 1; /* another thread's pass */
  int ms = -1;
  if (!atomic_load(&w->finished)) {
    int64_t to;
    atomic_store(&w->last_pass, tri__now());
    if (step(w, &to)) atomic_store(&w->finished, 1);
    else ms = to <= 0 ? 0 : (int)((to + 999999) / 1000000);
  }
  pthread_mutex_unlock(&w->pass_lock);
  return ms;
}

/* The loop on this driver thread: pass, wait for a completion, repeat. */
static void run_on_driver(worker *w) {
  int64_t to;
  while (!step(w, &to)) wait_notify(w, to);
}

/* The loop on the connection's I/O thread (the hook), this thread standing
 * by: should no pass happen for STALE_PASS_NS (the connection died, so its
 * thread is gone, and nothing starts the next one), it makes one itself. */
static void run_on_io(worker *w) {
  w->on_io = 1;
  w->hook.fn = io_pass;
  w->hook.arg = w;
  atomic_store(&w->last_pass, tri__now());
  tri_channel_set_io_hook(w->ch, &w->hook);
  while (!atomic_load(&w->finished)) {
    struct timespec nap = {0, DRIVER_NAP_NS};
    nanosleep(&nap, NULL);
    if (tri__now() - atomic_load(&w->last_pass) > STALE_PASS_NS) io_pass(w);
  }
  tri_channel_set_io_hook(w->ch, NULL);
  pthread_mutex_lock(&w->pass_lock); /* a pass still running ends first */
  pthread_mutex_unlock(&w->pass_lock);
}

/* Closed-loop unary runs never block a pass, so the I/O thread can run them. */
static int io_driven(const tri_load *l) {
  return !l->cfg.driver_threads && !l->open_loop &&
         (l->cfg.mode == TRI_LOAD_UNARY || l->cfg.mode == TRI_LOAD_UNARY_STREAM_PATH);
}

/* Sleeps until the clock's start (start_at_ns), waking every
 * DRIVER_NAP_NS to see tri_load_stop. */
static void sleep_until_start(tri_load *l) {
  for (int64_t left = l->t0 - tri__now(); left > 0 && !atomic_load(&l->stop);
       left = l->t0 - tri__now()) {
    int64_t nap = left < DRIVER_NAP_NS ? left : DRIVER_NAP_NS;
    struct timespec ts = {nap / NS, nap % NS};
    nanosleep(&ts, NULL);
  }
}

static void run(worker *w) {
  tri_load *l = w->l;
  sleep_until_start(l);
  if (l->open_loop) {
    w->interval = l->cfg.rate_schedule.start > 0
                      ? interval_at(w, l->t0)
                      : (int64_t)(1e9 * (double)l->nw / l->cfg.rate);
    if (w->interval < 1) w->interval = 1;
    w->next_intended = l->t0 + l->cfg.phase_ns + w->interval * w->id / l->nw;
  }
  if (io_driven(l)) run_on_io(w);
  else run_on_driver(w);
  flush_second(w);
  if (w->measuring) {
    snapshot(w, w->st1);
    w->cpu1 = w->on_io ? w->cpu0 : tri_clock_thread_cpu_ns();
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  tri_load *l = w->l;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* ns-precise sleeps */
  char why[200] = "";
  int rv = prime(w, why, sizeof(why));
  if (wait_ready(w, rv, why)) run(w);
  pthread_mutex_lock(&l->lock);
  if (--l->running == 0) {
    getrusage(RUSAGE_SELF, &l->ru1);
    l->have_ru1 = 1;
    pthread_cond_broadcast(&l->cond);
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

/* ---- control --------------------------------------------------------------- */

int tri_load_start(tri_load *l) {
  pthread_mutex_lock(&l->lock);
  if (l->started) {
    pthread_mutex_unlock(&l->lock);
    return TRI_ERR_INVALID;
  }
  l->started = 1;
  /* Threads block on the lock at the start gate until all are created. */
  int rv = 0;
  for (int i = 0; i < l->nw; i++) {
    if (tri_thread_create(&l->w[i].thread, "tri-load", worker_main, &l->w[i])) {
      set_error_locked(l, TRI_ERR_SYSTEM, "load: pthread_create failed");
      atomic_store(&l->stop, 1);
      rv = TRI_ERR_SYSTEM;
      break;
    }
    l->nthreads++;
  }
  l->running = l->nthreads;
  pthread_mutex_unlock(&l->lock);
  return rv;
}

void tri_load_stop(tri_load *l) {
  atomic_store(&l->stop, 1);
  pthread_mutex_lock(&l->lock);
  pthread_cond_broadcast(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

static double tv_s(struct timeval tv) {
  return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Joins the threads and merges the figures (once). */
static void finish(tri_load *l) {
  if (l->finished) return;
  l->finished = 1;
  for (int i = 0; i < l->nthreads; i++) pthread_join(l->w[i].thread, NULL);
  tri_load_result *r = &l->res;
  memset(r, 0, sizeof(*r));
  int64_t last = 0, stopped = 0;
  for (int i = 0; i < l->nw; i++) {
    worker *w = &l->w[i];
    tri_hist_add(l->lat, w->lat);
    tri_hist_add(l->wlat, w->wlat);
    if (l->corr != l->lat) tri_hist_add(l->corr, w->corr);
    if (l->wcorr != l->wlat) tri_hist_add(l->wcorr, w->wcorr);
    r->calls += w->calls;
    r->errors += w->errors;
    r->warmup_calls += w->wcalls;
    r->warmup_errors += w->werrors;
    for (int k = 0; k < TRI_LOAD_CODES; k++) r->codes[k] += w->codes[k];
    r->messages_sent += w->msent;
    r->messages_received += w->mrecv;
    r->short_streams += w->short_streams;
    r->mismatches += w->mismatches;
    r->response_bytes += w->resp_bytes;
    r->missed += w->missed;
    if (w->last_done > last) last = w->last_done;
    if (w->stopping && w->stop_at > stopped) stopped = w->stop_at;
    if (w->measuring) {
      r->driver_cpu_s += (double)(w->cpu1 - w->cpu0) / 1e9;
      r->ncounters = w->nst;
      for (int k = 0; k < w->nst; k++) r->counters[k] += w->st1[k] - w->st0[k];
    }
  }
  if (!r->ncounters) { /* nobody measured: zero deltas, all the names */
    uint64_t scratch[TRI_LOAD_MAX_COUNTERS];
    r->ncounters = tri_stats_snapshot(tri_channel_stats(l->w[0].ch), scratch,
                                      TRI_LOAD_MAX_COUNTERS);
  }
  r->warmup_ns = (int64_t)(l->cfg.warmup_s * 1e9);
  r->start_ns = l->t0;
  r->late_ns = l->late_ns;
  /* The window ends when the calls stopped starting (the deadline at the
   * latest) or at the last completion if that is later: an open loop at a
   * low rate measures its whole duration, not its few calls' spans. */
  if (stopped > l->deadline) stopped = l->deadline;
  if (last > stopped) stopped = last;
  r->elapsed_ns = r->calls && stopped > l->warmup_end ? stopped - l->warmup_end : 0;
  r->qps = r->elapsed_ns ? (double)r->calls / ((double)r->elapsed_ns / 1e9) : 0;
  r->latency = l->lat;
  r->latency_corrected = l->corr;
  r->warmup_latency = l->wlat;
  r->warmup_latency_corrected = l->wcorr;
  if (l->have_ru0 && l->have_ru1) {
    r->cpu_user_s = tv_s(l->ru1.ru_utime) - tv_s(l->ru0.ru_utime);
    r->cpu_sys_s = tv_s(l->ru1.ru_stime) - tv_s(l->ru0.ru_stime);
  }
  size_t n = l->series_n;
  l->s_calls = tri_mem_calloc(NULL, n ? n : 1, sizeof(uint64_t));
  l->s_errors = tri_mem_calloc(NULL, n ? n : 1, sizeof(uint64_t));
  l->s_p99 = tri_mem_calloc(NULL, n ? n : 1, sizeof(int64_t));
  if (l->s_calls && l->s_errors && l->s_p99) {
    for (size_t i = 0; i < n; i++) {
      l->s_calls[i] = l->series[i].calls;
      l->s_errors[i] = l->series[i].errors;
      l->s_p99[i] = l->series[i].h ? tri_hist_percentile(l->series[i].h, 99) : 0;
    }
    r->seconds = n;
  } else if (!l->err) {
    l->err = TRI_ERR_NOMEM;
    snprintf(l->errstr, sizeof(l->errstr), "load: no memory for the series");
  }
  r->series_calls = l->s_calls;
  r->series_errors = l->s_errors;
  r->series_p99_ns = l->s_p99;
}

int tri_load_wait(tri_load *l, int64_t timeout_ns) {
  tri__wakes_flush(); /* the waiting thread's held-back wake-ups (tri_call.h) */
  /* l->cond waits on CLOCK_MONOTONIC (tri_load_new). */
  struct timespec end =
      tri_clock_timespec(tri__now() + (timeout_ns > 0 ? timeout_ns : 0));
  pthread_mutex_lock(&l->lock);
  while (l->running > 0) {
    if (timeout_ns < 0) {
      pthread_cond_wait(&l->cond, &l->lock);
    } else if (pthread_cond_timedwait(&l->cond, &l->lock, &end) == ETIMEDOUT) {
      break;
    }
  }
  int done = l->running == 0;
  pthread_mutex_unlock(&l->lock);
  if (!done) return TRI_ERR_TIMEOUT;
  finish(l);
  return 0;
}

int tri_load_run(tri_load *l) {
  tri_load_start(l);
  tri_load_wait(l, -1);
  return tri_load_status(l, NULL);
}

int tri_load_status(const tri_load *l, const char **errstr) {
  if (errstr) *errstr = l->err ? l->errstr : "";
  return l->err;
}

const tri_load_config *tri_load_config_of(const tri_load *l) { return &l->cfg; }

const tri_load_result *tri_load_results(const tri_load *l) {
  return l->finished ? &l->res : NULL;
}

void tri_load_del(tri_load *l) {
  if (!l) return;
  if (l->started) {
    tri_load_stop(l);
    tri_load_wait(l, -1);
  }
  if (l->w)
    for (int i = 0; i < l->nw; i++) worker_free(&l->w[i]);
  if (l->series)
    for (size_t i = 0; i < l->series_cap; i++) tri_hist_del(l->series[i].h);
  tri_mem_free(l->series);
  if (l->corr != l->lat) tri_hist_del(l->corr);
  if (l->wcorr != l->wlat) tri_hist_del(l->wcorr);
  tri_hist_del(l->lat);
  tri_hist_del(l->wlat);
  tri_mem_free(l->s_calls);
  tri_mem_free(l->s_errors);
  tri_mem_free(l->s_p99);
  tri_mem_free(l->w);
  tri_mem_free(l->payload);
  tri_ring_del(l->ring);
  tri_mem_free(l->strings);
  pthread_mutex_destroy(&l->lock);
  pthread_mutex_destroy(&l->series_lock);
  pthread_cond_destroy(&l->cond);
  tri_mem_free(l);
}
