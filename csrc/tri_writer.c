#include "tri_writer.h"

#include <string.h>

#include "tri_error.h"
#include "tri_frame.h"

void tri_writer_init(tri_writer *w, tri_pool *pool, size_t watermark,
                     const tri_writer_sink *sink) {
  memset(w, 0, sizeof(*w));
  pthread_mutex_init(&w->lock, NULL);
  w->pool = pool;
  w->watermark = watermark;
  w->sink = *sink;
}

void tri_writer_free(tri_writer *w) {
  tri_pool_put(w->pool, w->chunk);
  w->chunk = NULL;
  atomic_store(&w->pending, 0);
  pthread_mutex_destroy(&w->lock);
}

/* Hands `b` to the sink; records the first failure.  Lock held. */
static int emit(tri_writer *w, tri_buf *b, int end, int may_block) {
  size_t len = b ? b->len : 0;
  w->sink_calls++;
  ssize_t n = w->sink.write(w->sink.ctx, b, end, may_block);
  if (n < 0) return w->err = (int)n;
  if ((size_t)n != len) return w->err = TRI_ERR_IO; /* short write */
  return 0;
}

/* Sends the pending chunk, if any.  Lock held. */
static int flush_locked(tri_writer *w, int end, int may_block) {
  if (w->err) return w->err;
  tri_buf *b = w->chunk;
  if (!b && !end) return 0;
  w->chunk = NULL;
  atomic_store(&w->pending, 0);
  return emit(w, b, end, may_block);
}

/* tri_writer_write (now 0) and tri_writer_write_now (now 1).  Lock held. */
static int write_locked(tri_writer *w, const uint8_t *msg, size_t n,
                        uint8_t flags, int now) {
  int rv = w->err ? w->err : w->closed ? TRI_ERR_CLOSED : 0;
  if (rv) return rv;
  size_t pre = w->bare ? 0 : TRI_FRAME_PREFIX;
  size_t need = pre + n;
  if (need > UINT32_MAX) return TRI_ERR_TOO_LARGE;
  if (w->watermark == 0 || need >= w->watermark) {
    /* Alone: pending bytes first, so order is kept. */
    if ((rv = flush_locked(w, 0, 1))) return rv;
    tri_buf *b = tri_pool_get(w->pool, need, 0);
    if (!b) return w->err = TRI_ERR_NOMEM;
    if (pre) tri_frame_put_prefix(tri_buf_begin(b), flags, (uint32_t)n);
    memcpy(tri_buf_begin(b) + pre, msg, n);
    b->len = need;
    return emit(w, b, 0, 1);
  }
  int fresh = !w->chunk;
  if (w->chunk && tri_buf_tailroom(w->chunk) < need) {
    /* Would overflow the chunk: send what is there, start a new one. */
    if ((rv = flush_locked(w, 0, 1))) return rv;
    fresh = 1;
  }
  if (fresh && !(w->chunk = tri_pool_get(w->pool, w->watermark, 0)))
    return w->err = TRI_ERR_NOMEM;
  uint8_t *dst = tri_buf_begin(w->chunk) + w->chunk->len;
  if (pre) tri_frame_put_prefix(dst, flags, (uint32_t)n);
  memcpy(dst + pre, msg, n);
  w->chunk->len += need;
  atomic_store(&w->pending, (int64_t)w->chunk->len);
  if (now || w->chunk->len >= w->watermark) return flush_locked(w, 0, 1);
  /* After the bytes are counted in `pending`: the owner's timer may look at
   * that count without the lock (see the sink's `armed`). */
  if (fresh && w->sink.armed) w->sink.armed(w->sink.ctx);
  return 0;
}

static int write_one(tri_writer *w, const uint8_t *msg, size_t n, uint8_t flags,
                     int now) {
  pthread_mutex_lock(&w->lock);
  int rv = write_locked(w, msg, n, flags, now);
  pthread_mutex_unlock(&w->lock);
  return rv;
}

int tri_writer_write(tri_writer *w, const uint8_t *msg, size_t n,
                     uint8_t flags) {
  return write_one(w, msg, n, flags, 0);
}

int tri_writer_write_now(tri_writer *w, const uint8_t *msg, size_t n,
                         uint8_t flags) {
  return write_one(w, msg, n, flags, 1);
}

int tri_writer_flush(tri_writer *w) {
  pthread_mutex_lock(&w->lock);
  int rv = w->closed ? w->err : flush_locked(w, 0, 1);
  pthread_mutex_unlock(&w->lock);
  return rv;
}

int tri_writer_flush_nowait(tri_writer *w) {
  if (pthread_mutex_trylock(&w->lock)) return TRI_ERR_AGAIN;
  int rv = w->closed ? w->err : flush_locked(w, 0, 0);
  pthread_mutex_unlock(&w->lock);
  return rv;
}

int tri_writer_close(tri_writer *w) {
  pthread_mutex_lock(&w->lock);
  int rv;
  if (w->closed || w->err) {
    rv = w->err;
  } else {
    rv = flush_locked(w, 1, 1);
#ifndef TRI_WRITER_BROKEN_SEAL /* only for the reverse test: see Makefile */
    if (!rv) w->closed = 1;
#endif
  }
  pthread_mutex_unlock(&w->lock);
  return rv;
}

int64_t tri_writer_pending_bytes(tri_writer *w) {
  return atomic_load(&w->pending);
}
