/*
 * tri_deadlines: the deadlines of one connection's calls, earliest first.
 *
 * A binary min-heap of 16-byte entries (deadline, slot).  Each call that has
 * a deadline holds a slot, a small integer; two dense arrays indexed by slot
 * give the call and its current heap position.  Sifting moves entries and
 * rewrites positions in those arrays, never the calls: a call's own memory is
 * touched only when it is added and removed.  With 1,000 calls in flight the
 * calls' structs are cold, and the earlier heap, which wrote the index into
 * each call it moved, paid about ten cache misses per completion (every
 * call of a run has the same timeout, so a completion removes an entry near
 * the root and the last entry sinks the whole depth).  Free slots are reused
 * last-freed first, so the arrays stay as small as the calls in flight.
 *
 * Ownership: the set owns its arrays; it borrows the calls (never
 * dereferences them) and the stats.  One thread at a time (the connection's
 * I/O thread).
 */
#ifndef TRI_DEADLINES_H
#define TRI_DEADLINES_H

#include <stddef.h>
#include <stdint.h>

#include "tri_stats.h"

struct tri_call;

typedef struct tri_deadline {
  int64_t at;    /* the deadline, copied from the call */
  uint32_t slot; /* the call's slot */
} tri_deadline;

typedef struct tri_deadlines {
  tri_deadline *heap;        /* heap[0..n): min-heap by `at` */
  struct tri_call **owner;   /* by slot: the call, NULL while the slot is free */
  uint32_t *pos;             /* by slot: index in heap */
  uint32_t *free_slots;      /* free_slots[0..nfree): a stack */
  size_t n, cap, nfree;      /* entries, slots, free slots (n + nfree == cap) */
  tri_stats *stats;          /* borrowed; allocations are counted here */
} tri_deadlines;

/* An empty set counting its allocations into `stats` (may be NULL). */
void tri_deadlines_init(tri_deadlines *d, tri_stats *stats);
/* Frees the arrays; the calls still in it are not touched. */
void tri_deadlines_free(tri_deadlines *d);

/* Adds `call` with deadline `at`.  Returns its slot (>= 0), or
 * TRI_ERR_NOMEM (then the set is unchanged). */
int tri_deadlines_add(tri_deadlines *d, struct tri_call *call, int64_t at);
/* Removes the entry of `slot` (from tri_deadlines_add, not yet removed). */
void tri_deadlines_remove(tri_deadlines *d, int slot);

/* The number of entries, and the earliest one (only when n > 0). */
static inline size_t tri_deadlines_count(const tri_deadlines *d) { return d->n; }
static inline int64_t tri_deadlines_first_at(const tri_deadlines *d) {
  return d->heap[0].at;
}
static inline struct tri_call *tri_deadlines_first(const tri_deadlines *d) {
  return d->owner[d->heap[0].slot];
}
static inline int tri_deadlines_first_slot(const tri_deadlines *d) {
  return (int)d->heap[0].slot;
}

#endif
