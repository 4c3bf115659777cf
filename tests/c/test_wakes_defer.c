/*
 * test_wakes_defer.c: batched wake-ups (tri_wakes_defer_begin, tri_call.h).
 * While a thread defers, its pushes record the connection (with a reference)
 * instead of waking the I/O thread; the end wakes each recorded connection
 * once; a wait in the library wakes them first; other threads and nested
 * deferrals keep their own rules.  Detached connection: no network, no I/O
 * thread; its wake_pending flag shows whether a wake-up was sent.
 */
#include <pthread.h>

#include "detached_call.h"
#include "tri_test.h"

static tri_call *submitted(tri_channel *ch, tri_conn *conn) {
  tri_call *c;
  tri_call_new(ch, &c, "/s/M", 4, -1, 0);
  detached_submit(conn, c);
  return c;
}

static void *push_from_another_thread(void *arg) {
  tri_conn *conn = arg;
  tri__conn_kick(conn); /* not deferred: this thread never began */
  return NULL;
}

void test_wakes_defer(void) {
  tri_channel *ch;
  tri_conn *conn;
  CHECK_EQ_INT(detached_open(&ch, &conn), 0);
  tri_call *calls[4];
  int refs = atomic_load(&conn->refs);

  /* Two starts in a burst: no wake-up until the end, one reference held. */
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_begin();
  calls[0] = submitted(ch, conn);
  calls[1] = submitted(ch, conn);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 2 + 1); /* two calls, one record */
  tri_wakes_defer_begin(); /* nested: the inner end wakes nothing */
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 2);

  /* Another thread's wake-up goes out at once meanwhile. */
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_begin();
  pthread_t t;
  pthread_create(&t, NULL, push_from_another_thread, conn);
  pthread_join(t, NULL);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  tri_wakes_defer_end();

  /* A wait in the library sends the recorded wake-ups first: a thread never
   * sleeps on a call its I/O thread was not told of. */
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_begin();
  calls[2] = submitted(ch, conn);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  CHECK_EQ_INT(tri_call_wait(calls[2], 1000000), TRI_ERR_TIMEOUT); /* 1 ms */
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 3);
  tri_wakes_defer_end(); /* nothing left to wake */
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 3);

  /* An end without a begin changes nothing. */
  tri_wakes_defer_end();
  atomic_store(&conn->wake_pending, 0);
  calls[3] = submitted(ch, conn);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);

  detached_teardown(ch, conn, calls, 4);
}
