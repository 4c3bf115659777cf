/*
 * tri_ring: a ring of pre-encoded requests, for loads whose requests vary
 * per call (a templated body or metadata) without building anything per
 * call: every request is rendered and encoded before the run, and call
 * number i sends entry i mod n.
 *
 * An entry is a serialized request message (the body, without the 5-byte
 * gRPC prefix) and its request metadata: key/value pairs as
 * tri_call_add_metadata takes them ("-bin" values raw; the call base64-
 * encodes them).
 *
 * Ownership: tri_ring_new copies everything it is given (entries, bodies,
 * metadata arrays, keys and values) into one allocation owned by the ring;
 * the caller's arrays may be freed as soon as it returns.  Pointers returned
 * by tri_ring_at point into the ring and stay valid and unchanged until
 * tri_ring_del; a ring is never modified after tri_ring_new, so any number of
 * threads may read it at once.
 */
#ifndef TRI_RING_H
#define TRI_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct tri_ring_md {
  const char *key;   /* not NUL-terminated */
  size_t key_len;
  const char *value; /* raw bytes for "-bin" keys */
  size_t value_len;
} tri_ring_md;

typedef struct tri_ring_entry {
  const uint8_t *body; /* serialized message; may be NULL when len is 0 */
  size_t len;
  const tri_ring_md *md; /* nmd pairs; may be NULL when nmd is 0 */
  size_t nmd;
} tri_ring_entry;

typedef struct tri_ring tri_ring;

#define TRI_RING_MAX_ENTRIES (1u << 24)
#define TRI_RING_MAX_MD 64 /* metadata pairs per entry */

/* Copies `n` entries (1..TRI_RING_MAX_ENTRIES, each with at most
 * TRI_RING_MAX_MD pairs) into a new ring.  Returns 0, TRI_ERR_INVALID (n or
 * nmd out of range, a NULL pointer with a non-zero length) or
 * TRI_ERR_NOMEM.  *out is owned by the caller (tri_ring_del). */
int tri_ring_new(tri_ring **out, const tri_ring_entry *entries, size_t n);

/* The number of entries. */
size_t tri_ring_size(const tri_ring *r);

/* Entry i mod size (owned by the ring, valid until tri_ring_del). */
const tri_ring_entry *tri_ring_at(const tri_ring *r, uint64_t i);

/* The longest body, in bytes. */
size_t tri_ring_max_len(const tri_ring *r);

/* Frees the ring and everything in it; NULL is a no-op. */
void tri_ring_del(tri_ring *r);

#endif
