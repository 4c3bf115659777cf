#include "tri_h2.h"

static void *arena_malloc(size_t n, void *u) { return tri_arena_alloc(u, n); }
static void arena_free(void *p, void *u) { tri_arena_free(u, p); }
static void *arena_calloc(size_t n, size_t sz, void *u) {
  return tri_arena_calloc(u, n, sz);
}
static void *arena_realloc(void *p, size_t n, void *u) {
  return tri_arena_realloc(u, p, n);
}

void tri_h2_mem_init(nghttp2_mem *mem, tri_arena *arena) {
  mem->mem_user_data = arena;
  mem->malloc = arena_malloc;
  mem->free = arena_free;
  mem->calloc = arena_calloc;
  mem->realloc = arena_realloc;
}

ssize_t tri_h2_read_length(nghttp2_session *s, uint8_t type, int32_t sid,
                           int32_t conn_win, int32_t stream_win,
                           uint32_t max_frame, void *user) {
  (void)s, (void)type, (void)sid, (void)user;
  int32_t n = conn_win < stream_win ? conn_win : stream_win;
  if ((uint32_t)n > max_frame) n = (int32_t)max_frame;
  return n > 0 ? n : 1;
}

void tri_h2_set_max_continuations(nghttp2_option *opt, uint32_t limit) {
  uint64_t block = (uint64_t)limit * 4;
  if (block < (1u << 20)) block = 1u << 20;
  nghttp2_option_set_max_continuations(opt, (size_t)(block / 16384 + 1));
}
