/*
 * tri_outq: the output queue of one HTTP/2 connection, written with one
 * writev (sendmsg) for many frames.  The client's connection (tri_conn) and
 * the embedded server's (csrc/server/) both use it.
 *
 * An entry is `len` bytes either by reference (`ptr`: a request's or a
 * response's own bytes, sent NO_COPY) or at an offset into `staging`, where
 * frame bytes from nghttp2 are copied (offsets, not pointers: staging may
 * move when it grows).  Staged bytes that follow one another share one
 * entry.  An entry may also carry a buffer (`buf`, with its `buf_owner`) and
 * an owner reference (`ref`) that the queue never touches: they go back to
 * the owner of the queue when the entry has been written (or is dropped),
 * through the `done` function it passes, and the owner releases them.  An
 * entry may be empty: it then only hands its buffer back, in order.
 *
 * Ownership: the queue owns `staging` (from `pool`) but not the entry array,
 * which its owner allocates and frees (the client recycles it through the
 * channel); a growable queue (the server's) replaces the array itself when
 * full and then owns the new one.  It borrows every `ptr` until that entry
 * is written or dropped, and the pool and stats.  One thread at a time (the
 * connection's I/O thread).
 *
 * The hot functions are inline: the client adds two or three entries and
 * retires them on every call.
 */
#ifndef TRI_OUTQ_H
#define TRI_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "tri_buf.h"
#include "tri_error.h"
#include "tri_stats.h"

typedef struct tri_outq_entry {
  const uint8_t *ptr; /* the bytes by reference, or NULL: staging[off..] */
  size_t off, len;
  void *ref;          /* the queue owner's: e.g. whose bytes `ptr` borrows */
  tri_buf *buf;       /* handed back to the owner once written (may be NULL) */
  void *buf_owner;    /* the queue owner's: whose `buf` it is */
} tri_outq_entry;

typedef struct tri_outq {
  tri_outq_entry *e;  /* e[head..n): pending, oldest first */
  size_t head, n, cap;
  size_t pending;     /* bytes in e[head..n) */
  tri_buf *staging;   /* copied bytes the entries refer to by offset */
  tri_pool *pool;     /* borrowed: staging grows from it */
  tri_stats *stats;   /* borrowed: a growable queue's array allocations */
  int growable;       /* full: replace the array (else adding fails) */
} tri_outq;

/* Sets up `q` over the caller's entries[0..cap) and `staging` (a buffer
 * from `pool`, taken).  growable: when full, the queue replaces the array
 * by one twice as large (allocated against `stats`) and frees the old one. */
void tri_outq_init(tri_outq *q, tri_outq_entry *entries, size_t cap,
                   tri_buf *staging, tri_pool *pool, tri_stats *stats,
                   int growable);
/* Doubles a growable queue's array.  Returns 0 or TRI_ERR_NOMEM (always for
 * a fixed queue). */
int tri_outq_grow(tri_outq *q);

static inline int tri_outq_empty(const tri_outq *q) { return q->head == q->n; }
/* Entries that can still be added without growing. */
static inline size_t tri_outq_room(const tri_outq *q) { return q->cap - q->n; }

/* The first byte of entry `e`. */
static inline const uint8_t *tri_outq_bytes(const tri_outq *q,
                                            const tri_outq_entry *e) {
  return e->ptr ? e->ptr : tri_buf_begin(q->staging) + e->off;
}

/* A new entry of `len` bytes at `ptr` (NULL: staging[off..]), with no ref
 * or buffer.  NULL when the queue is full and cannot grow. */
static inline tri_outq_entry *tri_outq_push(tri_outq *q, const uint8_t *ptr,
                                            size_t off, size_t len) {
  if (q->n == q->cap && tri_outq_grow(q)) return NULL;
  tri_outq_entry *e = &q->e[q->n++];
  memset(e, 0, sizeof(*e));
  e->ptr = ptr;
  e->off = off;
  e->len = len;
  q->pending += len;
  return e;
}

/* Copies p[0..n) into staging, at the end of the last entry when that one
 * is staged bytes just before them.  Returns 0 or TRI_ERR_NOMEM (then the
 * queue is unchanged). */
static inline int tri_outq_stage(tri_outq *q, const void *p, size_t n) {
  size_t at = q->staging->len;
  int rv = tri_buf_append(q->pool, &q->staging, p, n);
  if (rv) return rv;
  if (q->n > q->head) {
    tri_outq_entry *last = &q->e[q->n - 1];
    if (!last->ptr && !last->buf && last->off + last->len == at) {
      last->len += n; /* contiguous with the previous staged bytes */
      q->pending += n;
      return 0;
    }
  }
  if (!tri_outq_push(q, NULL, at, n)) {
    q->staging->len = at;
    return TRI_ERR_NOMEM;
  }
  return 0;
}

/* Fills iov[0..max) from the oldest pending entries (empty ones skipped).
 * Returns the count; *bytes gets their total. */
static inline size_t tri_outq_iov(const tri_outq *q, struct iovec *iov,
                                  size_t max, size_t *bytes) {
  size_t k = 0, total = 0;
  for (size_t i = q->head; i < q->n && k < max; i++) {
    const tri_outq_entry *e = &q->e[i];
    if (!e->len) continue;
    iov[k].iov_base = (void *)(uintptr_t)tri_outq_bytes(q, e);
    iov[k].iov_len = e->len;
    total += e->len;
    k++;
  }
  *bytes = total;
  return k;
}

/* Empties a queue with nothing pending (staging included). */
static inline void tri_outq_clear(tri_outq *q) {
  q->head = q->n = 0;
  q->pending = 0;
  q->staging->len = 0;
}

/* Takes `n` written bytes off the front.  Each entry written to its end
 * leaves the queue through done(e, ctx) (e->len still its unwritten length
 * before this write); the entry the bytes end inside stays, advanced, and
 * part(e, k, ctx) (may be NULL) is told the k bytes taken from it.  Returns
 * 1 when nothing is left (the queue is cleared), else 0. */
static inline int tri_outq_written(tri_outq *q, size_t n,
                                   void (*done)(tri_outq_entry *, void *),
                                   void (*part)(tri_outq_entry *, size_t,
                                                void *),
                                   void *ctx) {
  while (q->head < q->n) {
    tri_outq_entry *e = &q->e[q->head];
    if (e->len > n) {
      if (e->ptr) e->ptr += n;
      else e->off += n;
      e->len -= n;
      q->pending -= n;
      if (part) part(e, n, ctx);
      return 0;
    }
    n -= e->len;
    q->pending -= e->len;
    done(e, ctx);
    q->head++;
  }
  tri_outq_clear(q);
  return 1;
}

/* Drops everything pending: done(e, ctx) for each entry, oldest first, then
 * the queue is cleared. */
static inline void tri_outq_drop(tri_outq *q,
                                 void (*done)(tri_outq_entry *, void *),
                                 void *ctx) {
  for (size_t i = q->head; i < q->n; i++) done(&q->e[i], ctx);
  tri_outq_clear(q);
}

#endif
