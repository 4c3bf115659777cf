/*
 * test_writable.c: tri_call_write_would_not_block answers from the counters
 * alone, whoever holds the writer's lock.  The I/O thread holds that lock for
 * an instant each time its flush timer looks at a chunk; a "would block"
 * said then, with nothing queued, promised a TRI_EV_WRITABLE that nothing
 * would send, and an asyncio ping-pong stream waited until its deadline (a
 * CI failure, test_requests_depending_on_responses).  Here the test holds
 * the lock itself, as the timer does.  Detached connection: no network, no
 * I/O thread.
 */
#include "detached_call.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_int.h"
#include "tri_test.h"

#define EVENTS (TRI_EV_DONE | TRI_EV_HEADERS | TRI_EV_MESSAGE | TRI_EV_WRITABLE)

void test_writable(void) {
  tri_channel *ch;
  tri_conn *conn;
  CHECK_EQ_INT(detached_open(&ch, &conn), 0);
  int token;
  tri_call *c;
  CHECK_EQ_INT(tri_call_new(ch, &c, "/s/M", 4, -1, TRI_CALL_CLIENT_STREAMING), 0);
  tri_call_set_notify_events(c, &token, EVENTS);
  detached_submit(conn, c);

  /* Nothing queued: writable, with the lock free and with it held. */
  CHECK(tri_call_write_would_not_block(c, 10));
  pthread_mutex_lock(&c->writer.lock);
  CHECK(tri_call_write_would_not_block(c, 10));
  pthread_mutex_unlock(&c->writer.lock);

  /* A small message waits in the chunk: still writable either way, and
   * the chunk's length is seen without the lock. */
  static const uint8_t msg[100];
  CHECK_EQ_INT(tri_call_write(c, msg, sizeof(msg)), 0);
  CHECK(tri_writer_pending_bytes(&c->writer) == (int64_t)(5 + sizeof(msg)));
  pthread_mutex_lock(&c->writer.lock);
  CHECK(tri_call_write_would_not_block(c, 10));
  CHECK(tri_writer_pending_bytes(&c->writer) == (int64_t)(5 + sizeof(msg)));
  pthread_mutex_unlock(&c->writer.lock);

  /* A write bigger than the room left would wait: the answer is no, and
   * the pending chunk was handed over, so its being written will notify. */
  size_t big = (size_t)c->send_limit;
  CHECK(!tri_call_write_would_not_block(c, big));
  CHECK(tri_writer_pending_bytes(&c->writer) == 0);
  CHECK(atomic_load(&c->unsent) == (int64_t)(5 + sizeof(msg)));

  tri_call *calls[1] = {c};
  detached_teardown(ch, conn, calls, 1);
}
