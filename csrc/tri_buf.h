/*
 * tri_buf: pooled byte buffers with headroom.
 *
 * A tri_buf is one heap block: this header followed by `cap` bytes of
 * storage.  Content lives in data[off, off+len); the `off` bytes in front are
 * headroom, so a 5-byte envelope prefix can be written in front of a payload
 * that was packed first, without moving the payload.
 *
 * A tri_pool keeps free buffers in power-of-4 size classes from 512 B to
 * 8 MiB.  It is thread-safe (one mutex per class): buffers are taken on caller
 * threads and returned from the I/O thread.  Bigger requests are served
 * unpooled (counted as a miss and an allocation) and freed on put.
 *
 * Ownership: a buffer has exactly one owner at a time.  tri_pool_get gives it
 * to the caller; tri_pool_put takes it back.  The pool must outlive every
 * buffer it handed out (detached buffers, below, excepted).
 */
#ifndef TRI_BUF_H
#define TRI_BUF_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tri_mpsc.h"
#include "tri_stats.h"

typedef struct tri_buf {
  struct tri_buf *next; /* free-list or queue link, owned by the current owner */
  tri_node qnode;       /* link for lock-free hand-off queues (tri_mpsc) */
  uint8_t *data;        /* storage, cap bytes, right after this header */
  size_t cap;
  size_t off; /* start of content; bytes before it are headroom */
  size_t len; /* content length */
  int cls;    /* pool size class, or -1 when unpooled */
  int detached; /* from the process-wide pool of tri_buf_new */
} tri_buf;

#define TRI_POOL_CLASSES 8
#define TRI_POOL_MIN 512u

typedef struct tri_pool_class {
  pthread_mutex_t lock;
  tri_buf *free;
  size_t count; /* buffers on `free` */
  size_t out;   /* buffers taken and not yet given back */
  size_t peak;  /* the most ever out at once */
} tri_pool_class;

typedef struct tri_pool {
  tri_pool_class cls[TRI_POOL_CLASSES];
  size_t max_cached_bytes; /* per class; beyond it, put frees */
  /* When nonzero, a class may also keep as many buffers as were ever out at
   * once (its working set's high-water mark), up to this many bytes. */
  size_t peak_cached_bytes;
  tri_stats *stats;        /* borrowed; must outlive the pool */
} tri_pool;

/* Initialises an empty pool counting into `stats` (may be NULL). */
void tri_pool_init(tri_pool *p, tri_stats *stats);
/* Frees every cached buffer.  Buffers still out are not tracked. */
void tri_pool_free(tri_pool *p);

/* Raises the cache limit so that `count` free buffers of `size` bytes (of
 * their size class) can be kept; never lowers it.  For an owner that knows
 * its working set (the load generator: calls in flight x messages per call),
 * so that big messages do not go back to malloc on every call.  Only before
 * the pool is shared with other threads. */
void tri_pool_keep(tri_pool *p, size_t count, size_t size);

/* Returns a buffer with at least `headroom + size` bytes of storage, with
 * off = headroom and len = 0, or NULL when out of memory. */
tri_buf *tri_pool_get(tri_pool *p, size_t size, size_t headroom);
/* Gives `b` back (NULL is ignored). */
void tri_pool_put(tri_pool *p, tri_buf *b);

/*
 * Detached buffers: for content that may outlive the pool and the channel it
 * was received on (a message a language binding keeps as its own object).
 * They come from one process-wide pool (same size classes), so a steady
 * stream of them reuses warm memory instead of going back to malloc, whose
 * freed megabytes return to the kernel and fault in again.  A class keeps up
 * to TRI_DETACHED_CACHED bytes, or as many buffers as were ever out at once
 * (50 calls in flight each receiving 1 MiB: 50 buffers of the 2 MiB class),
 * up to TRI_DETACHED_PEAK_CACHED bytes: memory the process held at its peak
 * anyway, kept instead of faulted in again on every call.  The pool's locks are made new in a child
 * of fork(), its cached buffers then left behind.
 */
#define TRI_DETACHED_CACHED ((size_t)64 << 20)
#define TRI_DETACHED_PEAK_CACHED ((size_t)512 << 20)

/* A detached buffer with at least `headroom + size` bytes of storage
 * (off = headroom, len = 0), an allocation counted into `st` (may be NULL)
 * when none was cached, or NULL when out of memory.  Its owner gives it back
 * with tri_buf_free, from any thread; tri_pool_put of any pool does the same. */
tri_buf *tri_buf_new(tri_stats *st, size_t size, size_t headroom);
/* Gives a detached buffer back (NULL is ignored). */
void tri_buf_free(tri_buf *b);
/* Nonzero for a detached buffer (tri_buf_new). */
static inline int tri_buf_detached(const tri_buf *b) { return b->detached; }

/* Content pointer and the end of storage. */
static inline uint8_t *tri_buf_begin(tri_buf *b) { return b->data + b->off; }
static inline size_t tri_buf_tailroom(const tri_buf *b) {
  return b->cap - b->off - b->len;
}

/* Ensures room for `extra` more content bytes, moving the content into a
 * bigger pooled buffer if needed.  *bp is replaced on growth (the old buffer
 * goes back to the pool).  Returns 0 or TRI_ERR_NOMEM (then *bp is intact). */
int tri_buf_reserve(tri_pool *p, tri_buf **bp, size_t extra);

/* Like tri_buf_reserve without the doubling: room for exactly `extra` more
 * (rounded up to the size class), for callers that enforce a cap. */
int tri_buf_reserve_exact(tri_pool *p, tri_buf **bp, size_t extra);

/* Appends n bytes, growing as tri_buf_reserve does.  src may be NULL when n
 * is 0. */
int tri_buf_append(tri_pool *p, tri_buf **bp, const void *src, size_t n);

#endif
