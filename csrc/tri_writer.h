/*
 * tri_writer: the coalescing stream writer (dubbo-go PR #3746, in C).
 *
 * Messages are appended, each with its 5-byte envelope prefix (none when
 * `bare` is set: the Triple unary body, which is the bare message), into a
 * pooled chunk.  The chunk is handed to the sink when it reaches the watermark, on
 * tri_writer_flush, on tri_writer_close, and before a message that alone
 * reaches the watermark (pending bytes first, then that message in a buffer
 * of its own: order is never changed).  With watermark 0 every message goes
 * to the sink alone.
 *
 * Rules:
 *  - the first error freezes the writer: write, flush and close all return
 *    that same error from then on; a sink that accepts fewer bytes than it was
 *    given (a short write) is an error (TRI_ERR_IO);
 *  - close flushes and seals under the writer's lock, so a write racing with
 *    close either lands in the final flush or fails with TRI_ERR_CLOSED; it
 *    is never accepted and then dropped.  Close is idempotent; flush after a
 *    successful close writes nothing and returns 0;
 *  - an empty flush calls nothing; close on an empty writer still calls the
 *    sink once with end = 1 (so an empty stream still ends).
 *
 * The writer does no I/O itself: the sink decides what "written" means (the
 * connection's queue in production, a recording buffer in tests).  All
 * functions are thread-safe.  The writer does not own the sink's context.
 */
#ifndef TRI_WRITER_H
#define TRI_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tri_buf.h"

typedef struct tri_writer_sink {
  /* Takes ownership of `chunk` (NULL only for a bare end of stream) and
   * returns how many bytes it accepted (chunk->len, or 0 for NULL), or a
   * negative TRI_ERR_*.  `end` marks the last call.  Called with the writer's
   * lock held; may block for backpressure when `may_block`. */
  ssize_t (*write)(void *ctx, tri_buf *chunk, int end, int may_block);
  /* Optional: called (lock held) when bytes start waiting in an empty chunk,
   * so the owner can bound how long they wait (a flush timer); called after
   * they are counted in tri_writer_pending_bytes, so a timer that finds that
   * count 0 may let go (the next chunk calls armed again).  Not called when
   * the first message filled the chunk to the watermark (it went at once). */
  void (*armed)(void *ctx);
  void *ctx;
} tri_writer_sink;

typedef struct tri_writer {
  pthread_mutex_t lock;
  tri_pool *pool;       /* borrowed; chunks come from and return to it */
  size_t watermark;     /* 0: coalescing off */
  tri_buf *chunk;       /* pending bytes, or NULL */
  _Atomic int64_t pending; /* chunk's length, stored under the lock, read
                              without it (tri_writer_pending_bytes) */
  int err;              /* sticky first error, 0 if none */
  int closed;           /* sealed by a successful close */
  tri_writer_sink sink;
  uint64_t sink_calls;  /* for tests and counters */
  int bare;             /* 1: no envelope prefix, `flags` ignored (set after
                           init, before the first write) */
} tri_writer;

#define TRI_WRITER_DEFAULT_WATERMARK (32u << 10)

void tri_writer_init(tri_writer *w, tri_pool *pool, size_t watermark,
                     const tri_writer_sink *sink);
/* Returns any pending chunk to the pool (unsent).  No other call may run. */
void tri_writer_free(tri_writer *w);

/* Appends one message.  Returns 0, the sticky error, or TRI_ERR_CLOSED after
 * close.  The message bytes are copied; the caller keeps them. */
int tri_writer_write(tri_writer *w, const uint8_t *msg, size_t n,
                     uint8_t flags);
/* Appends one message and hands the chunk to the sink at once, without
 * arming the flush timer: for a message that must not wait (Nagle's rule in
 * tri_call_write).  Returns as tri_writer_write. */
int tri_writer_write_now(tri_writer *w, const uint8_t *msg, size_t n,
                         uint8_t flags);
/* Sends pending bytes now.  Returns 0 or the sticky error. */
int tri_writer_flush(tri_writer *w);
/* Like flush, but never waits: returns TRI_ERR_AGAIN if another thread holds
 * the writer, and does not let the sink block. */
int tri_writer_flush_nowait(tri_writer *w);
/* Flushes and seals.  Returns 0 or the sticky error (also when repeated). */
int tri_writer_close(tri_writer *w);
/* The bytes waiting in the current chunk, read without the lock: a snapshot
 * that another thread may change at once (it is stored under the lock each
 * time the chunk changes).  For whoever must neither wait for the lock nor
 * misread a busy lock: readers deciding whether to flush, the I/O thread's
 * flush timer (which must not wait on a writer that may itself be waiting
 * for the I/O thread to free room), tri_call_write_would_not_block. */
int64_t tri_writer_pending_bytes(tri_writer *w);
#endif
