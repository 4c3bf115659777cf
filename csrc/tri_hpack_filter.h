/*
 * tri_hpack_filter: which request metadata deserves a slot in the HPACK
 * dynamic table.
 *
 * HPACK's dynamic table (4096 bytes by default) pays off for header fields
 * that repeat: an indexed field costs one byte on the wire and almost no
 * work.  A value that differs on every call (a request id, a bearer token per
 * call, a trace id) never repeats, yet indexing it inserts it into the table
 * and evicts older entries, among them the fields that do repeat (:path,
 * :authority, user-agent, constant metadata), which then go out literally
 * and are inserted again: every call pays for table churn.  Counted with
 * callgrind, one per-call `x-request-id` raised the client's instructions per
 * 128 B unary call by 46 %.
 *
 * The filter remembers a hash of each (name, value) it has seen, in a small
 * direct-mapped table: a pair seen before is "popular" and is indexed; a pair
 * seen for the first time is sent as a literal that is not indexed.  So a
 * constant field is indexed from its second use on, and a field that changes
 * on every call never enters the table.  (grpc-core's HPACK encoder does the
 * same with its popularity counters.)  A hash collision only decides
 * indexing, never what is sent.
 *
 * Ownership: plain value type, embedded in its owner (one per connection: the
 * decision must follow that connection's encoder).  Not thread-safe: the
 * owner's I/O thread is its only user.
 */
#ifndef TRI_HPACK_FILTER_H
#define TRI_HPACK_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define TRI_HPACK_FILTER_SLOTS 256 /* a power of two */

typedef struct tri_hpack_filter {
  uint32_t seen[TRI_HPACK_FILTER_SLOTS]; /* hash | 1 of a recent pair; 0: empty */
} tri_hpack_filter;

/* Empties the filter. */
void tri_hpack_filter_init(tri_hpack_filter *f);

/* 1 when (name, value) was seen recently: index it.  0 when it is new: send
 * it without indexing.  Either way the pair is remembered as recent. */
int tri_hpack_filter_popular(tri_hpack_filter *f, const uint8_t *name,
                             size_t name_len, const uint8_t *value,
                             size_t value_len);

#endif
