/* fuzz_gzip.c: bounded gzip inflation of arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "tri_error.h"
#include "tri_gzip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tri_pool pool;
  static tri_gzip_pool zp;
  static int ready;
  if (!ready) {
    tri_pool_init(&pool, NULL);
    tri_gzip_pool_init(&zp, NULL);
    ready = 1;
  }
  const int64_t limit = 1 << 20;
  tri_buf *out = NULL;
  int rv = tri_gzip_decompress(&zp, &pool, data, size, limit, &out);
  if (rv == 0) {
    if (out->len > (size_t)limit) abort(); /* the cap must hold */
    tri_pool_put(&pool, out);
  } else if (rv != TRI_ERR_FRAME && rv != TRI_ERR_TOO_LARGE && rv != TRI_ERR_NOMEM) {
    abort();
  }
  return 0;
}
