/*
 * tri_h2: the nghttp2 glue that the client connection (tri_conn) and the
 * embedded server's connections share: the session allocator over a
 * tri_arena, the DATA frame sizing callback, and the copied parts of a
 * NO_COPY DATA frame.
 */
#ifndef TRI_H2_H
#define TRI_H2_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <sys/types.h>

#include "tri_mem.h"
#include "tri_outq.h"

/* Makes `mem` allocate from `arena` (borrowed; it must outlive every session
 * created with `mem`, and be used by one thread at a time, as the arena). */
void tri_h2_mem_init(nghttp2_mem *mem, tri_arena *arena);

/* nghttp2's data_source_read_length_callback: DATA frames as large as both
 * windows and the peer's SETTINGS_MAX_FRAME_SIZE allow (at least 1 byte),
 * instead of nghttp2's 16 KiB. */
ssize_t tri_h2_read_length(nghttp2_session *s, uint8_t type, int32_t sid,
                           int32_t conn_win, int32_t stream_win,
                           uint32_t max_frame, void *user);

/* Sets nghttp2's cap on the CONTINUATION frames of one header block (its
 * guard against CONTINUATION floods, 8 by default) for an endpoint whose
 * SETTINGS_MAX_HEADER_LIST_SIZE is `limit`: room for a block of 4 times the
 * limit, and at least 1 MiB, in the smallest frames a peer may use (16 KiB).
 * A peer that ignores the limit by that much still costs one stream, not the
 * connection (the block is decoded and the stream refused). */
void tri_h2_set_max_continuations(nghttp2_option *opt, uint32_t limit);

/* The copied parts of a NO_COPY DATA frame (send_data_callback): before its
 * payload, the 9-byte header and, when padded, the pad length byte; after
 * it, the padding.  Each returns 0 or TRI_ERR_NOMEM. */
static inline int tri_h2_stage_data_head(tri_outq *q, const uint8_t *framehd,
                                         size_t padlen) {
  if (tri_outq_stage(q, framehd, 9)) return TRI_ERR_NOMEM;
  uint8_t pad = (uint8_t)(padlen - 1);
  return padlen > 0 ? tri_outq_stage(q, &pad, 1) : 0;
}

static inline int tri_h2_stage_data_tail(tri_outq *q, size_t padlen) {
  static const uint8_t zeros[256];
  return padlen > 1 ? tri_outq_stage(q, zeros, padlen - 1) : 0;
}

#endif
