/* fuzz_server.c: the embedded server's parsers on arbitrary bytes.  The
 * first byte picks the target:
 *   0  tri_ts_decode_simple        2  tri_ts_decode_input
 *   1  tri_ts_decode_output and    3  tri_ts_decode_simple_json
 *      every tri_ts_next_params
 *   4+ the request path: the rest is what a client sends after its preface
 *      and an empty SETTINGS, fed to one server connection (header parsing,
 *      routing, gRPC and Triple bodies, gzip, the TestService and echo
 *      handlers, x-misbehave, the answers); nothing may crash or leak.
 * Decoded lengths must stay inside the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/runtime.h"
#include "server/ts_codec.h"
#include "tri_server.h"

static void check_request(const tri_ts_request *r, size_t n) {
  if (r->payload_len > n || r->status_msg_len > (n > TRI_TS_MAX_STATUS_MSG ? n : TRI_TS_MAX_STATUS_MSG))
    abort();
}

static void decoders(int which, const uint8_t *p, size_t n) {
  tri_ts_request r;
  switch (which) {
  case 0:
    if (tri_ts_decode_simple(p, n, &r) == 0) check_request(&r, n);
    break;
  case 1: {
    if (tri_ts_decode_output(p, n, &r) == 0) check_request(&r, n);
    size_t off = 0, seen = 0;
    tri_ts_params prm;
    while (tri_ts_next_params(p, n, &off, &prm) == 1) {
      if (off > n || ++seen > n) abort(); /* each one consumes input */
    }
    break;
  }
  case 2:
    if (tri_ts_decode_input(p, n, &r) == 0) check_request(&r, n);
    break;
  default:
    if (tri_ts_decode_simple_json(p, n, &r) == 0) check_request(&r, n);
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tri_server *srv;
  if (size == 0) return 0;
  if (data[0] < 4) {
    decoders(data[0], data + 1, size - 1);
    return 0;
  }
  if (!srv) {
    tri_server_opts o;
    tri_server_opts_init(&o);
    o.max_message = 1 << 20; /* keeps generated answers small */
    if (tri_server_new(&srv, &o)) abort();
  }
  static const uint8_t hello[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                 "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  size_t hl = sizeof(hello) - 1, n = size - 1;
  uint8_t *in = malloc(hl + n);
  if (!in) abort();
  memcpy(in, hello, hl);
  memcpy(in + hl, data + 1, n);
  if (tri__server_feed(srv, in, hl + n)) abort();
  free(in);
  return 0;
}
