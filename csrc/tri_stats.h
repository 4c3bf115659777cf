/*
 * tri_stats: the counters a channel exposes (channel.stats() in Python).
 *
 * Every field is a relaxed atomic so that callers on any thread and the
 * connection's I/O thread can bump them without a lock.  A tri_stats is
 * embedded in the object that owns it; nothing here allocates.
 */
#ifndef TRI_STATS_H
#define TRI_STATS_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct tri_stats {
  _Atomic uint64_t calls;          /* RPCs started */
  _Atomic uint64_t write_syscalls; /* writev/sendmsg calls on sockets */
  _Atomic uint64_t bytes_written;
  _Atomic uint64_t read_syscalls;  /* read calls that returned data or EOF */
  _Atomic uint64_t bytes_read;
  _Atomic uint64_t allocations;    /* real heap allocations made by the core */
  _Atomic uint64_t pool_hits;      /* buffer or call objects reused from a pool */
  _Atomic uint64_t pool_misses;    /* pool was empty (or size unpooled) */
  _Atomic uint64_t wakeups;        /* eventfd writes that woke an I/O thread */
  _Atomic uint64_t connects;       /* connections opened (connection attempts) */
  _Atomic uint64_t connect_failures; /* attempts that never got the server's SETTINGS;
                                        booked when the channel next looks for a
                                        connection (the next call), not when the
                                        attempt fails */
  _Atomic uint64_t write_stalls;   /* connections killed by the write-stall watchdog */
  _Atomic uint64_t keepalive_timeouts; /* connections killed by an unanswered PING */
  _Atomic uint64_t bytes_read_in_place; /* of bytes_read, read straight into the
                                           message they belong to (tri_conn.h) */
} tri_stats;

/* Names of the fields above, in order, NULL-terminated; for bindings. */
extern const char *const tri_stats_names[];

#define TRI_STATS_ADD(st, field, n) \
  atomic_fetch_add_explicit(&(st)->field, (uint64_t)(n), memory_order_relaxed)

/* Copies the counters into out[], in tri_stats_names order; returns how many. */
int tri_stats_snapshot(const tri_stats *st, uint64_t *out, int max);

/* Adds every counter of src into dst. */
void tri_stats_accumulate(tri_stats *dst, const tri_stats *src);

#endif
