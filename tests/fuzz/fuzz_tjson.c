/* fuzz_tjson.c: the Triple JSON error reader on arbitrary bytes; outputs
 * must stay inside the documented capacities. */
#include <stdint.h>
#include <stdlib.h>

#include "tri_tjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *msg = malloc(TRI_TJSON_MSG_CAP(size));
  uint8_t *pb = malloc(TRI_TJSON_PB_CAP(size));
  int code;
  size_t ml, pl;
  if (tri_tjson_error_parse((const char *)data, size, &code, msg, &ml, pb, &pl) == 0) {
    if (ml > TRI_TJSON_MSG_CAP(size) || pl > TRI_TJSON_PB_CAP(size)) abort();
    if (code < 1 || code > 17) abort();
  }
  free(msg);
  free(pb);
  return 0;
}
