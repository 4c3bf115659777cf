/*
 * tri_channel: a client endpoint for one target ("host:port").
 *
 * A channel owns at most one live connection (tri_conn) at a time, opened
 * lazily by the first call and replaced on the next call after it dies, so a
 * lost connection fails its in-flight calls with UNAVAILABLE and the channel
 * reconnects by itself.  It also owns the buffer pool and call pool its calls
 * use, the counters (tri_stats), and the completion queue for calls that
 * asked for notification, and keeps two finished connections' nghttp2
 * blocks (up to TRI_ARENA_MAX_CACHED each) and read/output buffers for the
 * next ones, so a reconnect does not free and re-allocate them.
 *
 * Connection backoff (grpc's connection-backoff.md, see tri_backoff.h): a
 * connection attempt that failed (refused, TLS failure, timed out, or closed
 * before the server's HTTP/2 SETTINGS arrived) makes the next attempt wait;
 * until then new calls fail at once with UNAVAILABLE, as grpcio's do without
 * wait_for_ready.  A connection that worked and then broke is replaced at
 * once, and the backoff starts over.
 *
 * Threads: every function may be called from any thread, concurrently, except
 * tri_channel_del, which must be the last use.
 */
#ifndef TRI_CHANNEL_H
#define TRI_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "tri_buf.h"
#include "tri_stats.h"

/* The user-agent a channel sends unless told otherwise. */
#define TRI_USER_AGENT "triple-py"

typedef struct tri_channel tri_channel;

typedef struct tri_channel_opts {
  const char *host;          /* copied; name or address */
  const char *port;          /* copied; decimal (unused for unix sockets) */
  int address_kind;          /* TRI_ADDRESS_TCP (default): host:port; _UNIX: host
                                is a socket path; _UNIX_ABSTRACT: host is a name
                                in the abstract namespace */
  const char *authority;     /* copied; NULL: "host:port" */
  int64_t max_recv_bytes;    /* -1: unlimited; default 4 MiB */
  int64_t max_send_bytes;    /* -1: unlimited (default) */
  uint32_t stream_window;    /* our SETTINGS_INITIAL_WINDOW_SIZE */
  uint32_t conn_window;      /* our connection window */
  uint32_t max_frame_size;   /* our SETTINGS_MAX_FRAME_SIZE */
  uint32_t max_metadata_size; /* our SETTINGS_MAX_HEADER_LIST_SIZE, and the
                                 largest response header block (initial or
                                 trailing, HPACK size) a call accepts (8 KiB) */
  const char *user_agent;    /* copied; default TRI_USER_AGENT */
  uint32_t write_buffer_size;     /* coalescing watermark; 0 = off
                                     (default TRI_WRITER_DEFAULT_WATERMARK) */
  uint32_t write_buffer_delay_us; /* longest wait of a partial chunk (200) */
  int wire;                    /* TRI_WIRE_GRPC (default) or TRI_WIRE_TRIPLE */
  int dialect;                 /* Triple wire headers: TRI_DIALECT_AUTO (default),
                                  _GO or _SPEC (below) */
  int compress;                /* default request compression: TRI_COMPRESS_* */
  const char *service_group;   /* copied; tri-service-group, NULL/"" = none */
  const char *service_version; /* copied; tri-service-version */
  const char *triple_codec;    /* copied; Triple content-type suffix ("proto") */
  char content_type_triple[48]; /* derived: "application/<codec>" */
  int tls;                     /* 1: TLS (ALPN h2, verification on) */
  const char *tls_roots;       /* PEM, borrowed during tri_channel_new; NULL: system store */
  size_t tls_roots_len;
  const char *tls_key;         /* PEM client key (mTLS), with tls_chain */
  size_t tls_key_len;
  const char *tls_chain;       /* PEM client certificate chain */
  size_t tls_chain_len;
  const char *tls_server_name; /* copied; name to verify (default: host) */
  int tls_skip_verify;         /* 1: accept any server certificate (load tests only) */
  /* Without tls_roots: a CA file and a hashed CA directory trusted besides
   * OpenSSL's default store (a statically linked OpenSSL's compiled-in
   * directory may not be this host's); borrowed during tri_channel_new, NULL:
   * none. */
  const char *tls_verify_file;
  const char *tls_verify_dir;
  /* Liveness (tri_conn.h).  0 turns a watchdog off. */
  uint32_t write_stall_timeout_ms; /* output blocked this long kills the
                                      connection (default 10000) */
  uint32_t keepalive_time_ms;      /* PING after this long without reading,
                                      while calls are open (0: off, default) */
  uint32_t keepalive_timeout_ms;   /* an unanswered PING kills it (20000) */
  int keepalive_permit_without_calls; /* ping with no call open too (0) */
  uint32_t max_pings_without_data; /* PINGs between our HEADERS/DATA frames;
                                      0: unlimited (default 2, as grpcio) */
  /* Connection backoff (grpcio's defaults; values under 100 ms mean 100). */
  uint32_t initial_reconnect_backoff_ms; /* 1000 */
  uint32_t max_reconnect_backoff_ms;     /* 120000 */
  uint32_t min_connect_timeout_ms;       /* grpc.min_reconnect_backoff_ms: the
                                            least time an attempt gets (20000) */
  /* I/O threads (tri_conn.h, tri_loop.h). */
  struct tri_loop *io_loop;    /* NULL (default): each connection runs its own
                                  I/O thread; else its connections, this one's
                                  and every reconnect's, run on this shared
                                  loop.  tri_channel_new takes a reference of
                                  its own, dropped by tri_channel_del. */
  int in_place_reads;          /* 1 (default): plaintext connections read
                                  large DATA payload straight into its message
                                  (tri_conn.h); 0: every byte through the read
                                  buffer, and no frame tracking (a channel
                                  whose calls keep no bodies, or an A/B) */
  int shared_io_thread;        /* for the layer that creates several channels
                                  for one target's backends (the Python
                                  balancer): 1 = give them one io_loop.  A
                                  channel alone does nothing with it. */
  int io_on_event_loop;        /* for the asyncio layer: 1 = a channel to one
                                  endpoint gets a driven io_loop (tri_loop.h)
                                  that the event loop's thread turns.  A
                                  channel alone does nothing with it. */
  char *error_out;             /* optional: why tri_channel_new failed */
  size_t error_out_len;
} tri_channel_opts;

enum { TRI_ADDRESS_TCP = 0, TRI_ADDRESS_UNIX = 1, TRI_ADDRESS_UNIX_ABSTRACT = 2 };

/* Wires: unary calls follow the channel's wire; streams are always gRPC-framed
 * (dubbo-go streams only over gRPC, docs/triple-wire.md §2). */
enum { TRI_WIRE_GRPC = 0, TRI_WIRE_TRIPLE = 1 };
/* Triple dialects: which version and deadline headers a Triple unary call
 * sends (docs/triple-wire.md §1.1).  GO: dubbo-go's
 * triple-protocol-version: 0.1.0 and triple-timeout-ms.  SPEC: the Triple
 * spec's, read by Dubbo Java and dubbo-js: tri-protocol-version: 1.0.0 and
 * tri-service-timeout.  AUTO: both pairs; every implementation reads its own
 * and ignores the other's.  Replies are read in every form whatever the
 * dialect. */
enum { TRI_DIALECT_AUTO = 0, TRI_DIALECT_GO = 1, TRI_DIALECT_SPEC = 2 };
/* Request compression (grpcio's Compression values): deflate is the zlib
 * format, as grpc core sends "deflate" (tri_gzip.h).  tri_channel_new refuses
 * any other value (TRI_ERR_INVALID). */
enum { TRI_COMPRESS_NONE = 0, TRI_COMPRESS_DEFLATE = 1, TRI_COMPRESS_GZIP = 2 };

/* Fills `o` with the defaults, the rows of tri_channel_options (tri_options.c,
 * the one place they are written): 4 MiB receive limit, no send limit, 16 MiB-1
 * stream window, 1 GiB-1 connection window, 64 KiB frames, the coalescing
 * writer on (TRI_WRITER_DEFAULT_WATERMARK), a 10 s write-stall timeout, no
 * keepalive, grpcio's reconnect backoff.  A new option is a field here plus
 * one row there (see tri_options.h). */
void tri_channel_opts_init(tri_channel_opts *o);

/* Creates a channel; nothing is connected yet.  Returns 0, TRI_ERR_INVALID (a
 * missing host/port, a bad window or frame size, an unknown wire or dialect) or
 * TRI_ERR_NOMEM.  *out is owned by the caller (tri_channel_del). */
int tri_channel_new(tri_channel **out, const tri_channel_opts *opts);

/* Closes the channel: every pending call completes with CANCELLED, the I/O
 * threads are joined, and later calls complete with CANCELLED at start.
 * Idempotent. */
void tri_channel_close(tri_channel *ch);

/* Frees the channel (closing it first).  All its calls must be released. */
void tri_channel_del(tri_channel *ch);

/* The channel's counters (borrowed; valid until tri_channel_del). */
tri_stats *tri_channel_stats(tri_channel *ch);

/* The channel's buffer pool, for tri_call_set_request_buf (borrowed). */
tri_pool *tri_channel_pool(tri_channel *ch);

/* A file descriptor that becomes readable when notified calls completed
 * (an eventfd; for event loops).  Valid until tri_channel_del. */
int tri_channel_notify_fd(tri_channel *ch);

/* Takes up to `max` tokens of completed notified calls.  Waits up to
 * timeout_ns (< 0: forever, 0: no wait) for at least one.  Returns the count
 * (0 on timeout), or TRI_ERR_CLOSED once the channel is closed and empty. */
int tri_channel_poll_completions(tri_channel *ch, void **tokens, int max,
                                 int64_t timeout_ns);

/* Makes a tri_channel_poll_completions that is waiting (or the next one to
 * wait) return 0 at once, as on a timeout: for an owner that wants its
 * polling thread to look at its own state (e.g. "nobody will start calls any
 * more") without closing the channel. */
void tri_channel_wake_pollers(tri_channel *ch);

/* Nonzero once tri_channel_close has been called. */
int tri_channel_closed(tri_channel *ch);

/* Nonzero in a child of fork() for a channel made before the fork (see
 * tri_fork.h).  Such a channel fails every call at start with UNAVAILABLE
 * ("Channel was created before fork(): ..."); tri_channel_close and
 * tri_channel_del neither wait for nor join the parent's I/O threads (which
 * do not exist in the child) and never block on its locks; the parent's
 * connections keep working in the parent.  Calls that were in flight at the
 * fork cannot complete in the child. */
int tri_channel_inherited(tri_channel *ch);

/* An I/O hook lets a caller run its own loop on the connection's I/O thread,
 * the way h2load drives nghttp2: no thread hop between a completion and the
 * next call.  The I/O thread calls fn(arg) once per loop iteration, after it
 * has read the socket and before it submits queued work, so calls started
 * inside fn go out in the same sendmsg; fn returns how many milliseconds the
 * thread may sleep before calling it again (-1: until the next event).
 * While a hook is set, completions of notified calls that happen on an I/O
 * thread are queued without writing the notify fd (fn takes them with
 * tri_channel_take_completions), and calls fn starts wake nobody.
 *
 * fn runs on whichever I/O thread the channel has (a reconnect starts a new
 * one), so it must serialize itself; it must never block (no waits on calls,
 * no blocking writes).  `hook` is borrowed and must stay valid until the
 * channel is deleted: after tri_channel_set_io_hook(ch, NULL) returns, an I/O
 * thread may still be inside or about to enter the old fn once. */
typedef struct tri_io_hook {
  int (*fn)(void *arg);
  void *arg;
} tri_io_hook;

void tri_channel_set_io_hook(tri_channel *ch, const tri_io_hook *hook);

/* Takes up to `max` tokens of completed notified calls without waiting and
 * without a system call (it does not reset the notify fd).  For hooks. */
int tri_channel_take_completions(tri_channel *ch, void **tokens, int max);

#endif
