#include "tri_outq.h"

#include "tri_mem.h"

void tri_outq_init(tri_outq *q, tri_outq_entry *entries, size_t cap,
                   tri_buf *staging, tri_pool *pool, tri_stats *stats,
                   int growable) {
  memset(q, 0, sizeof(*q));
  q->e = entries;
  q->cap = cap;
  q->staging = staging;
  q->pool = pool;
  q->stats = stats;
  q->growable = growable;
}

int tri_outq_grow(tri_outq *q) {
  if (!q->growable) return TRI_ERR_NOMEM;
  size_t cap = q->cap ? 2 * q->cap : 64;
  tri_outq_entry *e = tri_mem_alloc(q->stats, cap * sizeof(*e));
  if (!e) return TRI_ERR_NOMEM;
  if (q->n) memcpy(e, q->e, q->n * sizeof(*e));
  tri_mem_free(q->e);
  q->e = e;
  q->cap = cap;
  return 0;
}
