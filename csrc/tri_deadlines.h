/*
 * tri_deadlines: timers of many owners, earliest first.  The client keeps
 * one set per connection for its calls' deadlines; the embedded server one
 * per worker for its streams' delays, job intervals and deadlines.  An owner
 * is any object (a call, a stream); the set never dereferences it.
 *
 * A binary min-heap of 16-byte entries (deadline, slot).  Each owner that has
 * a deadline holds a slot, a small integer; two dense arrays indexed by slot
 * give the owner and its current heap position.  Sifting moves entries and
 * rewrites positions in those arrays, never the owners: an owner's own memory
 * is touched only when it is added and removed.  With 1,000 calls in flight the
 * calls' structs are cold, and the earlier heap, which wrote the index into
 * each call it moved, paid about ten cache misses per completion (every
 * call of a run has the same timeout, so a completion removes an entry near
 * the root and the last entry sinks the whole depth).  Free slots are reused
 * last-freed first, so the arrays stay as small as the calls in flight.
 *
 * Ownership: the set owns its arrays; it borrows the owners (never
 * dereferences them) and the stats.  One thread at a time (the connection's
 * I/O thread, the server's worker).
 */
#ifndef TRI_DEADLINES_H
#define TRI_DEADLINES_H

#include <stddef.h>
#include <stdint.h>

#include "tri_stats.h"

typedef struct tri_deadline {
  int64_t at;    /* the deadline, copied from the owner */
  uint32_t slot; /* the owner's slot */
} tri_deadline;

typedef struct tri_deadlines {
  tri_deadline *heap;        /* heap[0..n): min-heap by `at` */
  void **owner;              /* by slot: the owner, NULL while the slot is free */
  uint32_t *pos;             /* by slot: index in heap */
  uint32_t *free_slots;      /* free_slots[0..nfree): a stack */
  size_t n, cap, nfree;      /* entries, slots, free slots (n + nfree == cap) */
  tri_stats *stats;          /* borrowed; allocations are counted here */
} tri_deadlines;

/* An empty set counting its allocations into `stats` (may be NULL). */
void tri_deadlines_init(tri_deadlines *d, tri_stats *stats);
/* Frees the arrays; the owners still in it are not touched. */
void tri_deadlines_free(tri_deadlines *d);

/* Adds `owner` (not NULL) with deadline `at`.  Returns its slot (>= 0), or
 * TRI_ERR_NOMEM (then the set is unchanged). */
int tri_deadlines_add(tri_deadlines *d, void *owner, int64_t at);
/* Removes the entry of `slot` (from tri_deadlines_add, not yet removed). */
void tri_deadlines_remove(tri_deadlines *d, int slot);
/* Moves the entry of `slot` to deadline `at` (the slot stays). */
void tri_deadlines_update(tri_deadlines *d, int slot, int64_t at);

/* The number of entries, and the earliest one (only when n > 0). */
static inline size_t tri_deadlines_count(const tri_deadlines *d) { return d->n; }
static inline int64_t tri_deadlines_first_at(const tri_deadlines *d) {
  return d->heap[0].at;
}
static inline void *tri_deadlines_first(const tri_deadlines *d) {
  return d->owner[d->heap[0].slot];
}
static inline int tri_deadlines_first_slot(const tri_deadlines *d) {
  return (int)d->heap[0].slot;
}

#endif
