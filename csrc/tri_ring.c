#include "tri_ring.h"

#include <string.h>

#include "tri_error.h"
#include "tri_mem.h"

/* One allocation: the struct, the entries, every entry's metadata array,
 * then the bytes (bodies, keys, values). */
struct tri_ring {
  size_t n;
  size_t max_len;
  tri_ring_entry *entries;
};

static int bad_bytes(const void *p, size_t n) { return n && !p; }

int tri_ring_new(tri_ring **out, const tri_ring_entry *entries, size_t n) {
  *out = NULL;
  if (n == 0 || n > TRI_RING_MAX_ENTRIES || !entries) return TRI_ERR_INVALID;
  size_t mds = 0, bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const tri_ring_entry *e = &entries[i];
    if (e->nmd > TRI_RING_MAX_MD || bad_bytes(e->md, e->nmd) ||
        bad_bytes(e->body, e->len))
      return TRI_ERR_INVALID;
    if (e->len > SIZE_MAX / 4 || bytes > SIZE_MAX / 4) return TRI_ERR_INVALID;
    bytes += e->len;
    mds += e->nmd;
    for (size_t j = 0; j < e->nmd; j++) {
      const tri_ring_md *m = &e->md[j];
      if (bad_bytes(m->key, m->key_len) || bad_bytes(m->value, m->value_len))
        return TRI_ERR_INVALID;
      if (m->key_len > SIZE_MAX / 8 || m->value_len > SIZE_MAX / 8)
        return TRI_ERR_INVALID;
      bytes += m->key_len + m->value_len;
      if (bytes > SIZE_MAX / 4) return TRI_ERR_INVALID;
    }
  }
  size_t head = sizeof(tri_ring) + n * sizeof(tri_ring_entry) +
                mds * sizeof(tri_ring_md);
  tri_ring *r = tri_mem_alloc(NULL, head + bytes + 1);
  if (!r) return TRI_ERR_NOMEM;
  r->n = n;
  r->max_len = 0;
  r->entries = (tri_ring_entry *)(r + 1);
  tri_ring_md *md = (tri_ring_md *)(r->entries + n);
  char *p = (char *)r + head;
  for (size_t i = 0; i < n; i++) {
    const tri_ring_entry *src = &entries[i];
    tri_ring_entry *dst = &r->entries[i];
    dst->len = src->len;
    dst->body = (const uint8_t *)p;
    if (src->len) memcpy(p, src->body, src->len);
    p += src->len;
    if (src->len > r->max_len) r->max_len = src->len;
    dst->nmd = src->nmd;
    dst->md = src->nmd ? md : NULL;
    for (size_t j = 0; j < src->nmd; j++, md++) {
      const tri_ring_md *m = &src->md[j];
      md->key = p;
      md->key_len = m->key_len;
      if (m->key_len) memcpy(p, m->key, m->key_len);
      p += m->key_len;
      md->value = p;
      md->value_len = m->value_len;
      if (m->value_len) memcpy(p, m->value, m->value_len);
      p += m->value_len;
    }
  }
  *out = r;
  return 0;
}

size_t tri_ring_size(const tri_ring *r) { return r->n; }

const tri_ring_entry *tri_ring_at(const tri_ring *r, uint64_t i) {
  return &r->entries[i % r->n];
}

size_t tri_ring_max_len(const tri_ring *r) { return r->max_len; }

void tri_ring_del(tri_ring *r) { tri_mem_free(r); }
