/*
 * tri_mem: counted heap allocation, and a small-object arena for nghttp2.
 *
 * tri_mem_alloc/tri_mem_free are malloc/free that count into a tri_stats
 * (stats may be NULL).  Every heap allocation in the core goes through them, so
 * the `allocations` counter is the whole truth.
 *
 * tri_arena recycles blocks up to 128 KiB on per-size-class free lists (two
 * classes per power of two: 16, 24, 32, 48, 64 ... 96 Ki, 128 Ki bytes, so a
 * block wastes at most a third; nghttp2's frame and inbound buffers, hash
 * tables and HPACK rings are recycled too, not only its per-stream objects).
 * It is NOT thread-safe: one arena belongs to one connection's I/O thread,
 * which hands it to nghttp2 (nghttp2_session_client_new3), so the per-stream
 * objects nghttp2 allocates come from recycled blocks in steady state.
 * Freed blocks are kept, up to max_cached bytes (TRI_ARENA_MAX_CACHED by
 * default; beyond it they go back to the C heap), until tri_arena_free_all.
 * A finished connection's blocks can be handed to the next connection
 * (tri_arena_merge), so reconnecting does not free and re-allocate them.
 */
#ifndef TRI_MEM_H
#define TRI_MEM_H

#include <stddef.h>

#include "tri_stats.h"

void *tri_mem_alloc(tri_stats *st, size_t n);
void *tri_mem_calloc(tri_stats *st, size_t n, size_t size);
void tri_mem_free(void *p);

/*
 * Failing-allocation hook for tests (after nghttp2's failmalloc tests).
 *
 * Always compiled in: while disarmed, tri_mem_alloc/tri_mem_calloc pay one
 * relaxed load of a global and a branch that is never taken, next to a
 * malloc that costs a hundred times more; pool and arena hits never get here.
 * Armed, the hook counts every tri_mem_alloc/tri_mem_calloc and every
 * tri_mem_free of a non-NULL pointer (arena blocks included: the arena
 * allocates and frees through these), and makes the `fail_nth`-th allocation
 * after arming return NULL (with `fail_after`, that one and every later one).
 * fail_nth 0 only counts.
 *
 * Not for concurrent use: arm and disarm while no other thread allocates.
 */
typedef struct tri_mem_hook_counts {
  unsigned long allocs; /* allocations asked for while armed, failed ones too */
  unsigned long frees;  /* tri_mem_free of non-NULL pointers while armed */
  unsigned long failed; /* allocations the hook made fail */
} tri_mem_hook_counts;

void tri_mem_hook_arm(unsigned long fail_nth, int fail_after);
/* Disarms the hook and returns what it counted since arming. */
tri_mem_hook_counts tri_mem_hook_disarm(void);

#define TRI_ARENA_CLASSES 27 /* 16, 24, 32, 48, ... 98304, 131072 bytes */
#define TRI_ARENA_MAX_CACHED (4u << 20)

typedef struct tri_arena {
  void *free_list[TRI_ARENA_CLASSES];
  size_t cached;     /* bytes of the blocks on the free lists */
  size_t max_cached; /* a freed block beyond this goes back to the C heap */
  tri_stats *stats;  /* borrowed; counts the blocks it really allocates */
  int failed;        /* an allocation returned NULL since tri_arena_init */
} tri_arena;

void tri_arena_init(tri_arena *a, tri_stats *stats);
/* Frees every block on the free lists.  Blocks still in use stay valid; given
 * to tri_arena_free later, they are cached again (up to max_cached). */
void tri_arena_free_all(tri_arena *a);
void *tri_arena_alloc(tri_arena *a, size_t n);
void *tri_arena_calloc(tri_arena *a, size_t n, size_t size);
void *tri_arena_realloc(tri_arena *a, void *p, size_t n);
void tri_arena_free(tri_arena *a, void *p);
/* Moves every free block of `src` onto `dst`'s free lists (those beyond
 * dst's max_cached are released); `src` is left empty.  Neither arena may be
 * in use by another thread meanwhile; blocks `src` handed out and did not
 * get back stay valid and may later be freed into either arena. */
void tri_arena_merge(tri_arena *dst, tri_arena *src);

#endif
