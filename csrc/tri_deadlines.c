#include "tri_deadlines.h"

#include <string.h>

#include "tri_error.h"
#include "tri_mem.h"

void tri_deadlines_init(tri_deadlines *d, tri_stats *stats) {
  memset(d, 0, sizeof(*d));
  d->stats = stats;
}

void tri_deadlines_free(tri_deadlines *d) {
  tri_mem_free(d->heap);
  tri_mem_free(d->owner);
  tri_mem_free(d->pos);
  tri_mem_free(d->free_slots);
  tri_stats *stats = d->stats;
  tri_deadlines_init(d, stats);
}

/* Doubles the slots (64 at first).  All four arrays or none are replaced. */
static int grow(tri_deadlines *d) {
  size_t cap = d->cap ? 2 * d->cap : 64;
  if (cap > UINT32_MAX) return TRI_ERR_NOMEM;
  tri_deadline *heap = tri_mem_alloc(d->stats, cap * sizeof(*heap));
  void **owner = tri_mem_alloc(d->stats, cap * sizeof(*owner));
  uint32_t *pos = tri_mem_alloc(d->stats, cap * sizeof(*pos));
  uint32_t *free_slots = tri_mem_alloc(d->stats, cap * sizeof(*free_slots));
  if (!heap || !owner || !pos || !free_slots) {
    tri_mem_free(heap);
    tri_mem_free(owner);
    tri_mem_free(pos);
    tri_mem_free(free_slots);
    return TRI_ERR_NOMEM;
  }
  if (d->cap) {
    memcpy(heap, d->heap, d->n * sizeof(*heap));
    memcpy(owner, d->owner, d->cap * sizeof(*owner));
    memcpy(pos, d->pos, d->cap * sizeof(*pos));
    memcpy(free_slots, d->free_slots, d->nfree * sizeof(*free_slots));
  }
  /* The new slots go under the old free ones, highest first, so that the
   * lowest new slot is the next one taken. */
  for (size_t s = cap; s > d->cap; s--) {
    owner[s - 1] = NULL;
    free_slots[d->nfree++] = (uint32_t)(s - 1);
  }
  tri_mem_free(d->heap);
  tri_mem_free(d->owner);
  tri_mem_free(d->pos);
  tri_mem_free(d->free_slots);
  d->heap = heap;
  d->owner = owner;
  d->pos = pos;
  d->free_slots = free_slots;
  d->cap = cap;
  return 0;
}

static void place(tri_deadlines *d, size_t i, tri_deadline e) {
  d->heap[i] = e;
  d->pos[e.slot] = (uint32_t)i;
}

static void sift_up(tri_deadlines *d, size_t i) {
  tri_deadline e = d->heap[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (d->heap[p].at <= e.at) break;
    place(d, i, d->heap[p]);
    i = p;
  }
  place(d, i, e);
}

static void sift_down(tri_deadlines *d, size_t i) {
  tri_deadline e = d->heap[i];
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = l;
    if (l >= d->n) break;
    if (r < d->n && d->heap[r].at < d->heap[l].at) m = r;
    if (d->heap[m].at >= e.at) break;
    place(d, i, d->heap[m]);
    i = m;
  }
  place(d, i, e);
}

/* Restores the heap after heap[i] changed. */
static void resift(tri_deadlines *d, size_t i) {
  if (i > 0 && d->heap[(i - 1) / 2].at > d->heap[i].at)
    sift_up(d, i);
  else
    sift_down(d, i);
}

int tri_deadlines_add(tri_deadlines *d, void *owner, int64_t at) {
  if (!d->nfree) {
    int rv = grow(d);
    if (rv) return rv;
  }
  uint32_t slot = d->free_slots[--d->nfree];
  d->owner[slot] = owner;
  d->heap[d->n] = (tri_deadline){at, slot};
  sift_up(d, d->n++);
  return (int)slot;
}

void tri_deadlines_remove(tri_deadlines *d, int slot) {
  size_t i = d->pos[slot];
  d->owner[slot] = NULL;
  d->free_slots[d->nfree++] = (uint32_t)slot;
  if (--d->n == i) return;
  d->heap[i] = d->heap[d->n];
  resift(d, i);
}

void tri_deadlines_update(tri_deadlines *d, int slot, int64_t at) {
  size_t i = d->pos[slot];
  d->heap[i].at = at;
  resift(d, i);
}
