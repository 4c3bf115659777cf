/*
 * tri_load: a load generator that runs entirely in C threads, on the public
 * channel and call API (no Python, no GIL).
 *
 * Shape of a run: M connections (one tri_channel each, hence one HTTP/2
 * connection each) and one driver thread per connection keeping N calls in
 * flight on it.  Closed loop: a finished call is replaced at once.  Open
 * loop (rate > 0): each thread sends on a fixed schedule of rate/M calls/s
 * (threads staggered by 1/rate), never more than N in flight; a call that
 * could not go out on time goes out as soon as a slot frees, and its
 * latency is measured both from the intended send time (the coordinated-
 * omission corrected figure) and from the actual send (uncorrected).  In a
 * closed loop both figures are the same.
 *
 * Timeline: every thread first makes one priming call (it opens the
 * connection; UNAVAILABLE there fails the run with TRI_ERR_CONNECT); the
 * clock starts when all threads are primed, or at start_at_ns if that is
 * later (the threads sleep until then).  Calls whose intended send time
 * falls in the first warmup_s seconds are warm-up calls: they have
 * histograms of their own and are excluded from every other figure.  Then
 * calls start until duration_s has passed and/or `count` measured calls
 * were started (whichever comes first), and the calls in flight are
 * drained (waited for: at most timeout_s + 1 s, or 10 s without a timeout,
 * after which they are cancelled).  elapsed_ns runs from the end of the
 * warm-up to when calls stopped starting (the end of duration_s at the
 * latest: the count reached, tri_load_stop) or to the last measured
 * completion if that is later, and qps = calls / elapsed.
 *
 * Modes:
 *  - UNARY: the fast path.  tri_call_new(TRI_CALL_DISCARD_BODY): the
 *    response is checked (status, envelope, length) and its length counted,
 *    but not copied out (nothing here reads its bytes).  The request is, with
 *    shared_request (the default), one BenchmarkRequest packed per thread up
 *    front and lent to every call (set_request_borrowed), or without it
 *    packed per call into a pooled buffer (tri_call_set_request_buf).
 *  - UNARY_STREAM_PATH: the same unary call through the full-duplex
 *    streaming machinery (the baseline arm, like the seeds' duplexHTTPCall):
 *    CLIENT|SERVER streaming, one tri_call_write, tri_call_done_writing, the
 *    answer read with tri_call_read.  A call that ends OK without exactly
 *    one response message counts as INTERNAL, as the fast path reports a
 *    unary answer of two messages.
 *  - Any of them with a request ring (requests/nrequests): the bodies and
 *    request metadata were encoded before the run (tri_ring.h); the load
 *    numbers every call it starts, priming calls excepted, from 0 over all
 *    threads (one atomic counter) and call i sends entry i mod nrequests
 *    (its body lent, its metadata added); in BIDI every message of stream i
 *    is entry i's body.  payload_size and shared_request are then ignored.
 *    The priming calls send entry 0.
 *  - BIDI: CLIENT|SERVER streaming (default path
 *    /benchmark.BenchmarkService/StreamCall): K = stream_messages writes,
 *    done_writing, and K responses read.  One stream is one "call" in every
 *    figure (latency is start to final status); messages are counted too.
 *
 * How one thread keeps N streams in flight (BIDI): nothing on the driver
 * thread blocks on one stream.  Right after tri_call_start a stream gets as
 * many of its K writes as tri_call_write_would_not_block allows, then
 * tri_call_done_writing; a stream that ran out of room goes on a pending
 * list that the loop retries between short polls (20 us), so other streams
 * keep moving.  Responses are left queued in the call and drained with
 * tri_call_read(c, 0, ...) when its completion is harvested.  Because a
 * call's receive queue stops the peer's window at 4 MiB of unread data, a
 * stream whose responses may exceed 1 MiB (K * (size + 5)) is instead
 * drained eagerly on every loop iteration.  One exception: a message too
 * big to ever pass tri_call_write_would_not_block (over the writer's send
 * limit on its own) is written with a blocking tri_call_write, after
 * draining; that wait only depends on the socket, not on other streams.
 * Unary modes never block the driver thread except in the priming call.
 *
 * Completions: every call is started with tri_call_set_notify (token = its
 * slot) and harvested with tri_channel_poll_completions; a thread sleeps in
 * ppoll on tri_channel_notify_fd, so open-loop sends are timed in
 * nanoseconds, not poll()'s milliseconds (timer slack is set to 1 ns).
 *
 * Who runs the loop: in closed-loop unary runs (UNARY, UNARY_STREAM_PATH),
 * whose passes never block, the loop runs on the connection's own I/O
 * thread, as an I/O hook (tri_channel_set_io_hook): the thread that read a
 * batch of responses records them and starts their replacements, which go
 * out in the same sendmsg, with no eventfd and no thread switch in between
 * (h2load's shape: one thread per connection).  The driver thread then only
 * stands by: when no pass ran for 20 ms (the connection died and its thread
 * with it) it makes one, which starts the calls that open the next
 * connection.  driver_threads = 1 keeps the loop on the driver threads;
 * open-loop and BIDI runs always use them (they time sends in ns, or may
 * block in a write).
 *
 * Schedules (tri_sched.h): with rate_schedule, each thread's next intended
 * send is one interval of the schedule's rate at that send's time after the
 * previous one (a STEP or LINE ramp of ghz's --load-schedule).  With
 * concurrency_schedule, a pass starts calls only while fewer than the
 * schedule's value at that moment (its share for this connection, at least
 * one) are in flight; when it goes down, finished calls are not replaced.
 *
 * Figures (tri_load_result): histograms of measured and warm-up latency
 * (uncorrected and corrected), per-thread and merged at the end; a
 * one-second series of completions, errors and p99 (corrected latency, 2
 * significant digits) by completion time after the warm-up (completions
 * of the drain, after the duration, count in its last second); status code
 * counts; CPU time; the channels' tri_stats counters over the measured part
 * (each thread snapshots its channel when it starts its first measured call
 * and when it is done, so warm-up calls still in flight at that moment leak
 * a little into the delta).
 *
 * CPU: cpu_user_s/cpu_sys_s are getrusage(RUSAGE_SELF) over the measured
 * part: the whole process, including the connections' I/O threads (where
 * most of the work is) but also anything else the process runs (an
 * in-process server, other Python threads).  driver_cpu_s is the driver
 * threads alone (CLOCK_THREAD_CPUTIME_ID), without the I/O threads; in
 * I/O-driven runs the loop's work is on the I/O threads and it is 0.
 *
 * Threads: tri_load_start spawns the threads; tri_load_wait / stop /
 * status / results may be called from any one thread at a time;
 * tri_load_del must be the last use.
 */
#ifndef TRI_LOAD_H
#define TRI_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "tri_channel.h"
#include "tri_hist.h"
#include "tri_ring.h"
#include "tri_sched.h"

typedef enum {
  TRI_LOAD_UNARY = 0,
  TRI_LOAD_UNARY_STREAM_PATH = 1,
  TRI_LOAD_BIDI = 2
} tri_load_mode;

#define TRI_LOAD_CODES 17        /* status codes 0..16; others count as UNKNOWN */
#define TRI_LOAD_MAX_COUNTERS 16 /* >= the number of tri_stats fields */
#define TRI_LOAD_SERIES_DIGITS 2 /* the default of series_digits */

/* One server of a load spread over several (a pool, a Dubbo interface's
 * providers): connection i of the load goes to endpoint i % nendpoints. */
typedef struct tri_load_endpoint {
  const char *host;          /* name, address, or unix socket path/name */
  const char *port;          /* decimal ("0" for unix sockets) */
  int address_kind;          /* TRI_ADDRESS_* (tri_channel.h) */
} tri_load_endpoint;

typedef struct tri_load_config {
  const char *host;          /* copied by tri_load_new */
  const char *port;          /* copied; decimal */
  const tri_load_endpoint *endpoints; /* borrowed during tri_load_new (the
                                channels copy them); NULL: host and port.
                                Connection i dials endpoint i % nendpoints:
                                each connection's calls stay on it, so no
                                state is shared between connections */
  int nendpoints;            /* 0..256; at most `connections` */
  const char *path;          /* copied; NULL: UnaryCall, or StreamCall in BIDI */
  int mode;                  /* tri_load_mode */
  int connections;           /* M >= 1: channels, connections and threads */
  int concurrency;           /* N >= 1: calls in flight per connection */
  double duration_s;         /* measured seconds after the warm-up; 0: none */
  uint64_t count;            /* measured calls in total; 0: none */
  double warmup_s;           /* >= 0 */
  size_t payload_size;       /* BenchmarkRequest payload bytes (<= 64 MiB) */
  int stream_messages;       /* BIDI: K >= 1 messages each way per stream */
  double timeout_s;          /* per call; <= 0: no deadline */
  double rate;               /* open loop: calls/s over all threads; 0: closed */
  int shared_request;        /* default 1 (the request never varies): UNARY
                                lends one packed request to all calls, the
                                others write the same bytes; 0 packs each
                                message anew (the per-call cost of a client
                                that serializes every request) */
  int verify;                /* 1: every response message must be its request's
                                bytes (an echo server; in BIDI each message
                                the one written at its place): the unary
                                modes then keep the response (no
                                TRI_CALL_DISCARD_BODY) to compare it.  A call
                                that ends OK with other bytes counts as an
                                error, in `mismatches`, not in codes[OK].
                                0 (default): the status (and the framing
                                checks of tri_call.h) only, as h2load and ghz */
  int hist_digits;           /* significant digits of the histograms; 0: 3 */
  int series_digits;         /* ... of the one-second p99 series (1..4) */
  int driver_threads;        /* 1: closed-loop unary runs too are driven from
                                the driver threads, not the I/O threads */
  int64_t start_at_ns;       /* CLOCK_MONOTONIC time at which the clock (the
                                warm-up) starts, once every thread is primed;
                                0: as soon as they are.  A start_at_ns already
                                past when priming ends starts at once and is
                                reported as late_ns.  Lets loads in several
                                processes share one measured window. */
  int64_t phase_ns;          /* open loop: every intended send shifted by
                                this (>= 0), so that loads in several
                                processes interleave their schedules */
  const tri_ring_entry *requests; /* copied by tri_load_new (tri_ring_new);
                                     NULL: BenchmarkRequests of payload_size */
  size_t nrequests; /* entries of `requests` (1..TRI_RING_MAX_ENTRIES) */
  tri_sched rate_schedule;   /* start > 0: open loop whose rate (calls/s over all
                                threads) follows it from the end of the
                                warm-up (`rate` is then ignored) */
  tri_sched concurrency_schedule; /* start > 0: calls in flight over all
                                connections follow it, at most
                                connections * concurrency (closed loop) */
  /* The options of every connection (the rows of tri_options.c;
   * tri_load_config_init writes their defaults).  Its strings and PEM bytes
   * are borrowed during tri_load_new (the channels copy them; the load's copy
   * of the config has them NULL); error_out too (why tri_load_new failed to
   * make a channel).  The load sets host and port per connection (the
   * endpoint's, with its address_kind, when there are endpoints) and raises
   * a limited max_recv_bytes to fit the echoes.  wire TRI_WIRE_TRIPLE: UNARY
   * and UNARY_STREAM_PATH send Triple unary calls (TRI_CALL_UNARY_BODY); BIDI
   * streams are gRPC-framed, as Triple frames streams. */
  tri_channel_opts channel;
} tri_load_config;

/* Defaults: UNARY on 127.0.0.1:50051, 1 x 1, 10 s, no warm-up, 128 B,
 * shared_request, K = 1, every channel option at its default
 * (tri_channel_opts_init), 10 s timeout, closed loop, TRI_LOAD_SERIES_DIGITS.
 */
void tri_load_config_init(tri_load_config *c);

/* NULL when `c` is acceptable, else a static description of its first bad
 * field (what tri_load_new reports as TRI_ERR_INVALID).  Limits: 1..256
 * connections, 1..100000 in flight each, payload <= 64 MiB, a duration or a
 * count, K >= 1 in BIDI, 0..4 histogram digits. */
const char *tri_load_config_problem(const tri_load_config *c);

/* One range tri_load_config_problem enforces, by run_load's keyword name
 * ("concurrency" is per connection; "requests" and "endpoints" count
 * entries). */
typedef struct {
  const char *name;
  double min, max; /* inclusive */
} tri_load_limit;

/* The ranges, a static table of *n entries (the caller reads, never frees). */
const tri_load_limit *tri_load_limits(size_t *n);

typedef struct tri_load_result {
  int64_t elapsed_ns;        /* warm-up end to the stop or last completion */
  int64_t warmup_ns;         /* the configured warm-up */
  uint64_t calls;            /* measured calls (streams in BIDI) completed */
  uint64_t errors;           /* ... with a status other than OK */
  uint64_t warmup_calls, warmup_errors;
  uint64_t codes[TRI_LOAD_CODES]; /* measured calls by status code */
  uint64_t messages_sent;    /* streaming modes, measured: messages written */
  uint64_t messages_received;/* BIDI, measured: messages read */
  uint64_t short_streams;    /* BIDI: OK streams with fewer than K responses */
  uint64_t mismatches;       /* verify: measured calls (streams) that ended OK
                                with a response that is not their request's
                                bytes; counted in errors, not in codes */
  uint64_t response_bytes;   /* unary modes: response message bytes of OK calls */
  uint64_t missed;           /* open loop: intended sends never made (deadline
                                reached with the schedule behind) */
  double qps;                /* calls / elapsed */
  /* Latency histograms (ns), owned by the load (valid until tri_load_del). */
  const tri_hist *latency;            /* measured, from the actual send */
  const tri_hist *latency_corrected;  /* measured, from the intended send */
  const tri_hist *warmup_latency;
  const tri_hist *warmup_latency_corrected;
  /* One-second series after the warm-up, by completion time; arrays of
   * `seconds` entries owned by the load. */
  size_t seconds;
  const uint64_t *series_calls;
  const uint64_t *series_errors;
  const int64_t *series_p99_ns;
  double cpu_user_s, cpu_sys_s; /* process (RUSAGE_SELF), measured part */
  double driver_cpu_s;          /* the driver threads only */
  int64_t start_ns;             /* CLOCK_MONOTONIC time the clock started */
  int64_t late_ns;              /* start_ns - start_at_ns when positive */
  int ncounters;                /* tri_stats deltas, tri_stats_names order */
  uint64_t counters[TRI_LOAD_MAX_COUNTERS];
} tri_load_result;

typedef struct tri_load tri_load;

/* Validates `cfg`, copies it, and creates the channels, histograms and
 * buffers; connects nothing and starts no thread.  Returns 0,
 * TRI_ERR_INVALID (a bad field) or TRI_ERR_NOMEM.  *out is owned by the
 * caller (tri_load_del). */
int tri_load_new(tri_load **out, const tri_load_config *cfg);

/* Starts the driver threads and returns.  Returns 0, or TRI_ERR_SYSTEM
 * when a thread could not be created (threads already started are stopped
 * and the load is finished: tri_load_wait returns 0 at once).  Only once. */
int tri_load_start(tri_load *l);

/* Waits up to timeout_ns (< 0: forever) for the run to end.  Returns 0 once
 * it ended (threads joined, results merged), TRI_ERR_TIMEOUT otherwise. */
int tri_load_wait(tri_load *l, int64_t timeout_ns);

/* Ends the run early: no new calls, calls in flight are cancelled (they
 * count as CANCELLED).  Returns at once; tri_load_wait reports the end. */
void tri_load_stop(tri_load *l);

/* tri_load_start then tri_load_wait(-1).  Returns tri_load_status. */
int tri_load_run(tri_load *l);

/* After the run: 0, or the first error (TRI_ERR_CONNECT: a priming call
 * failed with UNAVAILABLE; TRI_ERR_NOMEM; TRI_ERR_SYSTEM).  *errstr (may be
 * NULL) gets a static-until-del description. */
int tri_load_status(const tri_load *l, const char **errstr);

/* The figures, once tri_load_wait returned 0 (NULL before); valid until
 * tri_load_del.  Filled even when the status is an error. */
const tri_load_result *tri_load_results(const tri_load *l);

/* The load's copy of its configuration, with the path resolved (valid
 * until tri_load_del). */
const tri_load_config *tri_load_config_of(const tri_load *l);

/* Stops and joins a running load, then frees everything. */
void tri_load_del(tri_load *l);

#endif
