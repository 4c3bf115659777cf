/*
 * loopback.h: what the tests of channels on a tri_loop share: the embedded
 * server started on loopback, and an empty unary call to it.
 *
 * Ownership: loopback_server's server is the caller's (tri_server_del);
 * empty_unary's call is the caller's (tri_call_release), not started yet, so
 * that the caller can set a notify token first.
 */
#ifndef LOOPBACK_H
#define LOOPBACK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_server.h"
#include "tri_test.h"

#define LOOPBACK_UNARY "/benchmark.BenchmarkService/UnaryCall"

/* The embedded server, listening on 127.0.0.1 (a free port), or NULL after a
 * failed check when it cannot start. */
static inline tri_server *loopback_server(void) {
  tri_server *srv = NULL;
  CHECK_EQ_INT(tri_server_new(&srv, NULL), 0);
  if (!srv) return NULL;
  if (tri_server_start(srv)) {
    fprintf(stderr, "the loopback server did not start: %s\n", tri_server_errstr(srv));
    CHECK(0);
    tri_server_del(srv);
    return NULL;
  }
  return srv;
}

/* An empty SimpleRequest to the server's unary method, with a deadline of
 * `timeout_ns` from now; NULL after a failed check when it cannot be made. */
static inline tri_call *empty_unary(tri_channel *ch, int64_t timeout_ns) {
  tri_call *c = NULL;
  CHECK_EQ_INT(tri_call_new(ch, &c, LOOPBACK_UNARY, strlen(LOOPBACK_UNARY), timeout_ns, 0), 0);
  if (c) tri_call_set_request_borrowed(c, (const uint8_t *)"", 0);
  return c;
}

#endif
