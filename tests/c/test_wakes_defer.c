/*
 * test_wakes_defer.c: batched wake-ups (tri_wakes_defer_begin, tri_call.h).
 * In a burst, the first op on a connection wakes its I/O thread at once; the
 * later ones wake nothing, and those queued after the I/O thread took the
 * earlier ones are owed one wake-up at the end; a wait in the library sends
 * what is owed first; other threads and nested bursts keep their own rules.
 * Detached connection: no network, no I/O thread; its wake_pending flag
 * shows whether a wake-up was sent, and clearing it plays the I/O thread
 * taking the queue.
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

static void *kick_from_another_thread(void *arg) {
  tri_conn *conn = arg;
  atomic_store(&conn->wake_pending, 0);
  tri__conn_kick(conn); /* this thread never began a burst */
  return NULL;
}

void test_wakes_defer(void) {
  tri_channel *ch;
  tri_conn *conn;
  CHECK_EQ_INT(detached_open(&ch, &conn), 0);
  tri_call *calls[5];
  int refs = atomic_load(&conn->refs);

  /* The burst's first start wakes at once; one reference is held. */
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_begin();
  calls[0] = submitted(ch, conn);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 1 + 1); /* the call's, the burst's */
  /* The I/O thread takes it (clears the flag); the next start waits for the
   * end, and so does the one after it (one wake-up owed). */
  atomic_store(&conn->wake_pending, 0);
  calls[1] = submitted(ch, conn);
  calls[2] = submitted(ch, conn);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  tri_wakes_defer_begin(); /* nested: the inner end sends nothing */
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 3);

  /* A burst whose first wake-up still covers its later starts owes nothing. */
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_begin();
  calls[3] = submitted(ch, conn);
  calls[4] = submitted(ch, conn);
  atomic_store(&conn->wake_pending, 0); /* taken after both */
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);

  /* Another thread's wake-up goes out at once meanwhile. */
  tri_wakes_defer_begin();
  tri__conn_kick(conn); /* this thread: a kick always wakes */
  pthread_t t;
  pthread_create(&t, NULL, kick_from_another_thread, conn);
  pthread_join(t, NULL);
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  tri_wakes_defer_end();

  /* A wait in the library sends what is owed first: a thread never sleeps
   * on a call its I/O thread was not told of. */
  tri_call *more[2];
  tri_wakes_defer_begin();
  atomic_store(&conn->wake_pending, 0);
  more[0] = submitted(ch, conn); /* the first: at once */
  atomic_store(&conn->wake_pending, 0);
  more[1] = submitted(ch, conn); /* owed */
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);
  CHECK_EQ_INT(tri_call_wait(more[1], 1000000), TRI_ERR_TIMEOUT); /* 1 ms */
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 1);
  atomic_store(&conn->wake_pending, 0);
  tri_wakes_defer_end(); /* nothing owed any more */
  CHECK_EQ_INT(atomic_load(&conn->wake_pending), 0);

  /* An end without a begin changes nothing. */
  tri_wakes_defer_end();
  CHECK_EQ_INT(atomic_load(&conn->refs), refs + 5 + 2);

  tri_call *all[7] = {calls[0], calls[1], calls[2], calls[3], calls[4], more[0], more[1]};
  detached_teardown(ch, conn, all, 7);
}
