/*
 * tri_gzip: gzip (and deflate) for message bodies, with zlib streams reused
 * from a pool and a hard cap on inflated size.
 *
 * Two formats, as the gRPC and HTTP encodings name them: "gzip" (RFC 1952)
 * and "deflate", which is the zlib format (RFC 1950: a deflate stream with
 * the zlib header and Adler-32 trailer), as grpc core sends it.  The
 * tri_gzip_* functions are gzip; tri_zlib_* take the format.
 *
 * gRPC compresses each message on its own (envelope flag 0x01); the Triple
 * wire compresses the whole unary body.  Both use these two functions.
 * Compressed output goes into a pooled buffer with the requested headroom
 * (room for the 5-byte envelope prefix), so compression costs no copy beyond
 * zlib's own.  Inflating stops as soon as the output would pass `limit`: a
 * gzip bomb costs at most `limit` bytes of memory.
 *
 * A tri_gzip_pool keeps initialised zlib streams (deflateReset/inflateReset
 * between uses), so steady-state calls allocate nothing; zlib's allocations
 * go through tri_mem and are counted.  The pool is thread-safe.
 */
#ifndef TRI_GZIP_H
#define TRI_GZIP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tri_buf.h"
#include "tri_stats.h"

typedef struct tri_zstream tri_zstream;

/* The formats (index into the pool's lists). */
enum { TRI_ZFMT_GZIP = 0, TRI_ZFMT_DEFLATE = 1, TRI_ZFMT_COUNT = 2 };

typedef struct tri_gzip_pool {
  pthread_mutex_t lock;
  tri_zstream *deflaters[TRI_ZFMT_COUNT]; /* idle, ready streams per format */
  tri_zstream *inflaters[TRI_ZFMT_COUNT];
  tri_stats *stats;       /* borrowed; counts zlib's allocations */
} tri_gzip_pool;

void tri_gzip_pool_init(tri_gzip_pool *zp, tri_stats *stats);
/* Ends every idle stream.  Streams in use must have been returned. */
void tri_gzip_pool_free(tri_gzip_pool *zp);

/* Compresses in[0..n) as one gzip member into a new buffer from `pool` with
 * `headroom` bytes in front.  Returns 0 and *out (owned by the caller), or
 * TRI_ERR_NOMEM. */
int tri_gzip_compress(tri_gzip_pool *zp, tri_pool *pool, const uint8_t *in,
                      size_t n, size_t headroom, tri_buf **out);

/* Inflates the gzip data in[0..n) into a new pooled buffer (owned by the
 * caller).  Returns 0, TRI_ERR_TOO_LARGE when the output would exceed
 * `limit` bytes (limit < 0: no limit), TRI_ERR_FRAME when the data is not
 * valid gzip (corrupt, truncated, or trailing garbage), or TRI_ERR_NOMEM. */
int tri_gzip_decompress(tri_gzip_pool *zp, tri_pool *pool, const uint8_t *in,
                        size_t n, int64_t limit, tri_buf **out);

/* The same for `format` (TRI_ZFMT_*). */
int tri_zlib_compress(tri_gzip_pool *zp, int format, tri_pool *pool,
                      const uint8_t *in, size_t n, size_t headroom, tri_buf **out);
int tri_zlib_decompress(tri_gzip_pool *zp, int format, tri_pool *pool,
                        const uint8_t *in, size_t n, int64_t limit, tri_buf **out);

#endif
