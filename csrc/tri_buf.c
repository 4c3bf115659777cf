#include "tri_buf.h"

#include <stdint.h>
#include <string.h>

#include "tri_error.h"
#include "tri_mem.h"

static size_t class_cap(int c) { return (size_t)TRI_POOL_MIN << (2 * c); }

static int class_for(size_t n) {
  for (int c = 0; c < TRI_POOL_CLASSES; c++)
    if (n <= class_cap(c)) return c;
  return -1;
}

void tri_pool_init(tri_pool *p, tri_stats *stats) {
  memset(p, 0, sizeof(*p));
  for (int c = 0; c < TRI_POOL_CLASSES; c++)
    pthread_mutex_init(&p->cls[c].lock, NULL);
  p->max_cached_bytes = 32u << 20;
  p->stats = stats;
}

void tri_pool_keep(tri_pool *p, size_t count, size_t size) {
  int c = class_for(size);
  if (c < 0 || count > SIZE_MAX / class_cap(c)) return; /* never pooled */
  if (count * class_cap(c) > p->max_cached_bytes)
    p->max_cached_bytes = count * class_cap(c);
}

void tri_pool_free(tri_pool *p) {
  for (int c = 0; c < TRI_POOL_CLASSES; c++) {
    tri_buf *b = p->cls[c].free;
    while (b) {
      tri_buf *next = b->next;
      tri_mem_free(b);
      b = next;
    }
    p->cls[c].free = NULL;
    p->cls[c].count = 0;
    pthread_mutex_destroy(&p->cls[c].lock);
  }
}

static tri_buf *new_buf(tri_stats *st, size_t cap, int c) {
  tri_buf *b = tri_mem_alloc(st, sizeof(tri_buf) + cap);
  if (!b) return NULL;
  b->next = NULL;
  b->data = (uint8_t *)(b + 1);
  b->cap = cap;
  b->cls = c;
  b->detached = 0;
  return b;
}

/* tri_pool_get, counting hits, misses and allocations into `st`. */
static tri_buf *pool_take(tri_pool *p, tri_stats *st, size_t size, size_t headroom) {
  if (size > SIZE_MAX - headroom) return NULL;
  size_t need = size + headroom;
  int c = class_for(need);
  tri_buf *b = NULL;
  if (c >= 0) {
    tri_pool_class *k = &p->cls[c];
    pthread_mutex_lock(&k->lock);
    b = k->free;
    if (b) {
      k->free = b->next;
      k->count--;
    }
    if (++k->out > k->peak) k->peak = k->out;
    pthread_mutex_unlock(&k->lock);
  }
  if (b) {
    if (st) TRI_STATS_ADD(st, pool_hits, 1);
  } else {
    if (st) TRI_STATS_ADD(st, pool_misses, 1);
    b = new_buf(st, c >= 0 ? class_cap(c) : need, c);
    if (!b) return NULL;
  }
  b->next = NULL;
  b->off = headroom;
  b->len = 0;
  return b;
}

tri_buf *tri_pool_get(tri_pool *p, size_t size, size_t headroom) {
  return pool_take(p, p->stats, size, headroom);
}

/* The process-wide pool of detached buffers (tri_buf.h). */
static tri_pool detached_pool;
static pthread_once_t detached_once = PTHREAD_ONCE_INIT;

/* The parent's pool as a child of fork() found it: other threads of the
 * parent may have held its locks, and its lists may be half-changed, so the
 * child never uses it; kept here so that its buffers stay reachable (not
 * leaks to a leak checker) for the child's life.  External, so that the
 * compiler does not drop the stores to a variable nothing reads. */
tri_pool tri__detached_inherited;

static void detached_start(void) {
  tri_pool_init(&detached_pool, NULL);
  detached_pool.max_cached_bytes = TRI_DETACHED_CACHED;
  detached_pool.peak_cached_bytes = TRI_DETACHED_PEAK_CACHED;
}

/* In a child of fork(): start over with an empty pool. */
static void detached_in_child(void) {
  tri__detached_inherited = detached_pool;
  detached_start();
}

static void detached_init(void) {
  detached_start();
  pthread_atfork(NULL, NULL, detached_in_child);
}

tri_buf *tri_buf_new(tri_stats *st, size_t size, size_t headroom) {
  pthread_once(&detached_once, detached_init);
  tri_buf *b = pool_take(&detached_pool, st, size, headroom);
  if (b) b->detached = 1;
  return b;
}

static void pool_give(tri_pool *p, tri_buf *b);

void tri_buf_free(tri_buf *b) {
  if (b) pool_give(&detached_pool, b); /* initialised by the tri_buf_new that made b */
}

void tri_pool_put(tri_pool *p, tri_buf *b) {
  if (b && b->detached) tri_buf_free(b);
  else if (b) pool_give(p, b);
}

/* How many bytes class `k` (buffers of `cap` bytes) may keep: the pool's
 * limit, or with peak_cached_bytes its high-water mark, up to that (lock
 * held). */
static size_t class_limit(const tri_pool *p, const tri_pool_class *k, size_t cap) {
  size_t limit = p->max_cached_bytes;
  if (!p->peak_cached_bytes) return limit;
  size_t working_set = k->peak <= p->peak_cached_bytes / cap ? k->peak * cap
                                                             : p->peak_cached_bytes;
  return working_set > limit ? working_set : limit;
}

static void pool_give(tri_pool *p, tri_buf *b) {
  if (b->cls >= 0) {
    tri_pool_class *k = &p->cls[b->cls];
    pthread_mutex_lock(&k->lock);
    if (k->out) k->out--; /* a buffer made before a fork, say, was not counted */
    if ((k->count + 1) * b->cap <= class_limit(p, k, b->cap)) {
      b->next = k->free;
      k->free = b;
      k->count++;
      b = NULL;
    }
    pthread_mutex_unlock(&k->lock);
  }
  if (b) tri_mem_free(b);
}

/* Moves the content into a pooled buffer with room for `want` bytes. */
static int grow_to(tri_pool *p, tri_buf **bp, size_t want) {
  tri_buf *b = *bp;
  tri_buf *nb = tri_pool_get(p, want, b->off);
  if (!nb) return TRI_ERR_NOMEM;
  memcpy(tri_buf_begin(nb), tri_buf_begin(b), b->len);
  nb->len = b->len;
  tri_pool_put(p, b);
  *bp = nb;
  return 0;
}

int tri_buf_reserve(tri_pool *p, tri_buf **bp, size_t extra) {
  tri_buf *b = *bp;
  if (tri_buf_tailroom(b) >= extra) return 0;
  size_t want = b->len + extra;
  /* Grow geometrically so repeated appends stay amortised O(1). */
  if (want < 2 * b->len) want = 2 * b->len;
  return grow_to(p, bp, want);
}

int tri_buf_reserve_exact(tri_pool *p, tri_buf **bp, size_t extra) {
  if (tri_buf_tailroom(*bp) >= extra) return 0;
  return grow_to(p, bp, (*bp)->len + extra);
}

int tri_buf_append(tri_pool *p, tri_buf **bp, const void *src, size_t n) {
  int rv = tri_buf_reserve(p, bp, n);
  if (rv) return rv;
  if (n) memcpy(tri_buf_begin(*bp) + (*bp)->len, src, n); /* src may be NULL when n is 0 */
  (*bp)->len += n;
  return 0;
}
