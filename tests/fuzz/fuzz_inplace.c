/* fuzz_inplace.c: in-place reads (tri_inplace.h) against the model of
 * tests/c/inplace_sim.h.  Input: four 2-byte read sizes, a 2-byte message
 * size per stream (times 4), then the server's bytes.  Any violation of the
 * model's checks (a byte lost or misordered, in-place payload away from
 * where its message wants it, a piece fed from an ended stream's buffer,
 * a stream holding other than its payload) aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../c/inplace_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 10) return 0;
  size_t sizes[4];
  for (int i = 0; i < 4; i++) sizes[i] = 1 + (size_t)(data[2 * i] << 8 | data[2 * i + 1]) * 4;
  size_t want = (size_t)(data[8] << 8 | data[9]) * 4;
  if (inplace_sim(data + 10, size - 10, sizes, 4, want)) abort();
  return 0;
}
