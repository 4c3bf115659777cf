/*
 * tri_mpsc: a lock-free multi-producer, single-consumer queue of intrusive
 * nodes (a Treiber stack that the consumer takes whole and reverses, so
 * items come out in push order per producer).
 *
 * Nodes are embedded in their owners; the queue never allocates or frees.
 * A node may be on at most one queue at a time.
 */
#ifndef TRI_MPSC_H
#define TRI_MPSC_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct tri_node {
  struct tri_node *next;
} tri_node;

typedef struct tri_mpsc {
  _Atomic(tri_node *) head;
} tri_mpsc;

static inline void tri_mpsc_init(tri_mpsc *q) { atomic_init(&q->head, NULL); }

/* Pushes n; any thread.  Returns nonzero when the queue was empty before. */
static inline int tri_mpsc_push(tri_mpsc *q, tri_node *n) {
  tri_node *old = atomic_load_explicit(&q->head, memory_order_relaxed);
  do {
    n->next = old;
  } while (!atomic_compare_exchange_weak_explicit(
      &q->head, &old, n, memory_order_release, memory_order_relaxed));
  return old == NULL;
}

/* Takes every queued node, oldest first, as a NULL-terminated list; consumer
 * thread only (or any thread when there is one consumer at a time). */
static inline tri_node *tri_mpsc_take_all(tri_mpsc *q) {
  tri_node *n = atomic_exchange_explicit(&q->head, NULL, memory_order_acquire);
  tri_node *rev = NULL;
  while (n) {
    tri_node *next = n->next;
    n->next = rev;
    rev = n;
    n = next;
  }
  return rev;
}

#endif
