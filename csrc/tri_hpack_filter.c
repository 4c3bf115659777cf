/* tri_hpack_filter.c: see tri_hpack_filter.h. */
#include "tri_hpack_filter.h"

#include <string.h>

void tri_hpack_filter_init(tri_hpack_filter *f) { memset(f, 0, sizeof(*f)); }

/* FNV-1a, 32 bits, continued from h. */
static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

int tri_hpack_filter_popular(tri_hpack_filter *f, const uint8_t *name,
                             size_t name_len, const uint8_t *value,
                             size_t value_len) {
  static const uint8_t sep = 0; /* "ab"+"c" and "a"+"bc" hash apart */
  uint32_t h = fnv1a(2166136261u, name, name_len);
  h = fnv1a(h, &sep, 1);
  h = fnv1a(h, value, value_len) | 1u;
  uint32_t *slot = &f->seen[(h >> 1) & (TRI_HPACK_FILTER_SLOTS - 1)];
  int popular = *slot == h;
  *slot = h;
  return popular;
}
