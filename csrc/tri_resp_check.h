/*
 * tri_resp_check: the HTTP/2 message rules (RFC 9113 §8.1-8.3) one response
 * must follow, checked by the client itself.
 *
 * The client's nghttp2 session runs with no_http_messaging: nghttp2 then
 * still enforces the framing, stream states, flow control and HPACK, but no
 * longer looks at what the header fields say.  These are the rules it
 * applied to a response before, applied the same way, field by field as the
 * fields are decoded:
 *
 *  - names: a token of lowercase characters (!#$%&'*+-.^_`|~, digits, a-z),
 *    a pseudo-header ':' and a token; values: no NUL, CR, LF or other
 *    control byte but HTAB, no leading or trailing SP or HTAB;
 *  - the only response pseudo-header is :status: three digits, not 101, one
 *    per response, before every regular field and never in trailers; a
 *    request pseudo-header (or any other) is a fault;
 *  - no connection-specific field (connection, keep-alive, proxy-connection,
 *    transfer-encoding, upgrade), te only as "trailers" (any case);
 *  - content-length: digits, at most once per stream (trailers included),
 *    not in a 1xx, and equal to the DATA bytes received once the stream
 *    ends (never exceeded on the way); a 204 may carry "content-length: 0",
 *    which is dropped;
 *  - 1xx responses (not 101) are informational: the final response follows
 *    in the next header block with a :status of its own, and neither DATA
 *    nor END_STREAM may come before it;
 *  - a header block after the final response is trailers and must end the
 *    stream (END_STREAM).
 *
 * A fault is a stream error (PROTOCOL_ERROR): the caller resets that stream
 * and ignores the rest of it.  The caller learns which header block it is in
 * from nghttp2 (the stream's first block is the response; later blocks are
 * trailers unless a 1xx came first: tri_resp_check_trailer).
 *
 * Ownership: plain value type, embedded in the call it checks; all-zero
 * bytes are its initial state.  Not thread-safe: the connection's I/O thread
 * is its only user.
 */
#ifndef TRI_RESP_CHECK_H
#define TRI_RESP_CHECK_H

#include <stddef.h>
#include <stdint.h>

typedef struct tri_resp_check {
  uint64_t content_length; /* declared length (flags & TRI_RESP_HAS_LENGTH) */
  uint64_t received;       /* DATA payload bytes of the stream so far */
  int16_t status;          /* :status of the current response; 0 none yet */
  uint8_t flags;           /* TRI_RESP_* below */
} tri_resp_check;

/* flags */
#define TRI_RESP_HAS_STATUS 0x01   /* the current response had :status */
#define TRI_RESP_REGULAR_SEEN 0x02 /* a regular field: no pseudo-header now */
#define TRI_RESP_HAS_LENGTH 0x04   /* content-length was declared */
#define TRI_RESP_EXPECT_FINAL 0x08 /* a 1xx came: the final response is due */

/* Outcomes of tri_resp_check_field. */
#define TRI_RESP_FIELD_OK 0 /* deliver the field */
#define TRI_RESP_FIELD_DROP \
  1 /* a 204's "content-length: 0": valid, not delivered */
#define TRI_RESP_FIELD_BAD -1 /* a fault: reset the stream */

/* Nonzero when a header block that is not the stream's first holds
 * trailers (no 1xx is waiting for its final response). */
static inline int tri_resp_check_trailer(const tri_resp_check *s) {
  return !(s->flags & TRI_RESP_EXPECT_FINAL);
}

/* One decoded field of a header block; `trailer`: the block holds trailers
 * (a later block, tri_resp_check_trailer).  Returns TRI_RESP_FIELD_*. */
int tri_resp_check_field(tri_resp_check *s, const uint8_t *name, size_t nl,
                         const uint8_t *value, size_t vl, int trailer);

/* The end of a header block whose fields were all OK or DROP: `first` it is
 * the stream's first block, `end_stream` it carried END_STREAM.  Returns 0,
 * or -1 for a fault. */
int tri_resp_check_block(tri_resp_check *s, int first, int end_stream);

/* `n` bytes of DATA payload (padding excluded).  Returns 0, or -1 when they
 * come before the final response or exceed the declared content-length. */
int tri_resp_check_data(tri_resp_check *s, size_t n);

/* Nonzero when n more DATA bytes would pass tri_resp_check_data (which
 * still has to be called for them). */
int tri_resp_check_data_fits(const tri_resp_check *s, size_t n);

/* A DATA frame with END_STREAM.  Returns 0, or -1 when the final response
 * never came or the DATA fell short of the declared content-length. */
int tri_resp_check_data_end(const tri_resp_check *s);

#endif
