#include "tri_mem.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The failing-allocation hook's state (tri_mem.h).  `armed` is the only
 * field the disarmed path reads. */
static _Atomic int hook_armed;
static struct {
  unsigned long fail_nth;
  int fail_after;
  tri_mem_hook_counts counts;
} hook;

void tri_mem_hook_arm(unsigned long fail_nth, int fail_after) {
  memset(&hook, 0, sizeof(hook));
  hook.fail_nth = fail_nth;
  hook.fail_after = fail_after;
  atomic_store(&hook_armed, 1);
}

tri_mem_hook_counts tri_mem_hook_disarm(void) {
  atomic_store(&hook_armed, 0);
  return hook.counts;
}

/* Counts an allocation; nonzero when it must fail. */
static __attribute__((noinline)) int hook_alloc_fails(void) {
  unsigned long nth = ++hook.counts.allocs;
  int fail = hook.fail_nth && (nth == hook.fail_nth ||
                               (hook.fail_after && nth > hook.fail_nth));
  hook.counts.failed += (unsigned long)fail;
  return fail;
}

#define HOOK_ARMED() \
  __builtin_expect(atomic_load_explicit(&hook_armed, memory_order_relaxed), 0)

void *tri_mem_alloc(tri_stats *st, size_t n) {
  if (HOOK_ARMED() && hook_alloc_fails()) return NULL;
  if (st) TRI_STATS_ADD(st, allocations, 1);
  return malloc(n);
}

void *tri_mem_calloc(tri_stats *st, size_t n, size_t size) {
  if (HOOK_ARMED() && hook_alloc_fails()) return NULL;
  if (st) TRI_STATS_ADD(st, allocations, 1);
  return calloc(n, size);
}

void tri_mem_free(void *p) {
  if (HOOK_ARMED() && p) hook.counts.frees++;
  free(p);
}

/* Each arena block starts with a 16-byte header (keeps payload 16-aligned)
 * holding its size class; TRI_ARENA_CLASSES marks a block too big to pool,
 * whose header also records its size for realloc. */
typedef struct {
  uint32_t cls;
  uint32_t pad;
  size_t size;
} block_hdr;

#define HDR 16
_Static_assert(sizeof(block_hdr) <= HDR, "arena header must fit in 16 bytes");

/* Class c holds 16 << c/2 bytes (even c) or 24 << c/2 (odd c).  Returns the
 * smallest class that fits n (TRI_ARENA_CLASSES or more: too big to pool). */
static unsigned class_of(size_t n) {
  if (n <= 16) return 0;
  /* 2^b < n <= 2^(b+1), b >= 4: the class is 3 * 2^(b-1) or 2^(b+1). */
  unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
  return n <= ((size_t)3 << (b - 1)) ? 2 * b - 7 : 2 * b - 6;
}

static size_t class_size(unsigned c) {
  return (c & 1) ? (size_t)24 << (c >> 1) : (size_t)16 << (c >> 1);
}

void tri_arena_init(tri_arena *a, tri_stats *stats) {
  memset(a, 0, sizeof(*a));
  a->max_cached = TRI_ARENA_MAX_CACHED;
  a->stats = stats;
}

void tri_arena_free_all(tri_arena *a) {
  for (int c = 0; c < TRI_ARENA_CLASSES; c++) {
    void *p = a->free_list[c];
    while (p) {
      void *next = *(void **)p;
      tri_mem_free((char *)p - HDR);
      p = next;
    }
    a->free_list[c] = NULL;
  }
  a->cached = 0;
}

void *tri_arena_alloc(tri_arena *a, size_t n) {
  unsigned c = class_of(n ? n : 1);
  if (c < TRI_ARENA_CLASSES && a->free_list[c]) {
    void *p = a->free_list[c];
    a->free_list[c] = *(void **)p;
    a->cached -= class_size(c);
    return p;
  }
  size_t sz = c < TRI_ARENA_CLASSES ? class_size(c) : n;
  char *raw = tri_mem_alloc(a->stats, HDR + sz);
  if (!raw) {
    a->failed = 1;
    return NULL;
  }
  block_hdr *h = (block_hdr *)raw;
  h->cls = c < TRI_ARENA_CLASSES ? c : TRI_ARENA_CLASSES;
  h->size = sz;
  return raw + HDR;
}

void *tri_arena_calloc(tri_arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    a->failed = 1;
    return NULL;
  }
  void *p = tri_arena_alloc(a, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void tri_arena_free(tri_arena *a, void *p) {
  if (!p) return;
  block_hdr *h = (block_hdr *)((char *)p - HDR);
  if (h->cls >= TRI_ARENA_CLASSES || a->cached + h->size > a->max_cached) {
    tri_mem_free(h);
    return;
  }
  *(void **)p = a->free_list[h->cls];
  a->free_list[h->cls] = p;
  a->cached += h->size;
}

void tri_arena_merge(tri_arena *dst, tri_arena *src) {
  for (int c = 0; c < TRI_ARENA_CLASSES; c++) {
    void *p = src->free_list[c];
    src->free_list[c] = NULL;
    while (p) {
      void *next = *(void **)p;
      src->cached -= class_size((unsigned)c);
      tri_arena_free(dst, p);
      p = next;
    }
  }
}

void *tri_arena_realloc(tri_arena *a, void *p, size_t n) {
  if (!p) return tri_arena_alloc(a, n);
  if (n == 0) {
    tri_arena_free(a, p);
    return NULL;
  }
  block_hdr *h = (block_hdr *)((char *)p - HDR);
  if (n <= h->size) return p;
  void *q = tri_arena_alloc(a, n);
  if (!q) return NULL;
  memcpy(q, p, h->size);
  tri_arena_free(a, p);
  return q;
}
