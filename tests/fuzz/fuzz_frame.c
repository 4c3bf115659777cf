/* fuzz_frame.c: the incremental envelope decoder.  The first input byte
 * picks the split size; the decoder must never read out of bounds and must
 * deliver exactly the payload bytes it announced. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tri_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t step = (size_t)data[0] % 16 + 1;
  data++;
  size--;
  tri_frame_decoder d;
  tri_frame_decoder_init(&d);
  uint64_t announced = 0, delivered = 0;
  for (size_t pos = 0; pos < size; pos += step) {
    size_t n = size - pos < step ? size - pos : step;
    const uint8_t *p = data + pos;
    for (;;) {
      size_t used;
      tri_frame_event ev;
      tri_frame_event_type t = tri_frame_decode(&d, p, n, &used, &ev);
      p += used;
      n -= used;
      if (t == TRI_FRAME_NEED_MORE) break;
      if (t == TRI_FRAME_HEADER) announced += ev.length;
      if (t == TRI_FRAME_CHUNK) delivered += ev.len;
    }
  }
  if (delivered > announced) abort();
  return 0;
}
