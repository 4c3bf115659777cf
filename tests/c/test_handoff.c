/*
 * test_handoff.c: finished callers woken in turn (tri_handoff.h) are never
 * left asleep.  Waiter threads share one mutex, as Python threads share the
 * GIL: each makes a call in hand-off mode, lets go of the "GIL", waits, takes
 * it back and goes back to its "own code" (tri_handoff_leave); some then block
 * elsewhere for a while with their turn kept.  A completer thread plays the
 * I/O thread: it completes the calls as tri__call_complete does for a call in
 * hand-off mode and runs tri_handoff_tick every turn.  A lost wake-up shows as
 * a wait that times out (2 s); run under TSan for the races.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_handoff.h"
#include "tri_int.h"
#include "tri_test.h"

#define WAITERS 8
#define ROUNDS 400

static tri_channel *ch;
static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
static struct {
  pthread_mutex_t lock;
  tri_call *calls[WAITERS * 2];
  int n;
} box = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Atomic int waiters_left, timeouts, made;

static void post(tri_call *c) {
  for (;;) {
    pthread_mutex_lock(&box.lock);
    if (box.n < WAITERS * 2) {
      box.calls[box.n++] = c;
      pthread_mutex_unlock(&box.lock);
      return;
    }
    pthread_mutex_unlock(&box.lock);
    usleep(10);
  }
}

static void *waiter(void *arg) {
  long i = (long)arg;
  pthread_mutex_lock(&gil);
  for (int r = 0; r < ROUNDS; r++) {
    tri_call *c;
    if (tri_call_new(ch, &c, "/s/M", 4, -1, 0)) break;
    atomic_fetch_add(&made, 1);
    tri_call_set_handoff(c);
    atomic_fetch_add(&c->refs, 1); /* the "I/O thread's" reference */
    post(c);
    pthread_mutex_unlock(&gil); /* the call waits without the "GIL" */
    int rv = tri_call_wait(c, 2000000000LL);
    pthread_mutex_lock(&gil);
    if (rv) atomic_fetch_add(&timeouts, 1);
    tri_handoff_leave();             /* back to its own code, the "GIL" held */
    if (i % 4 == 1 && r % 16 == 0) { /* blocks where the hand-off cannot see */
      pthread_mutex_unlock(&gil);
      usleep(300);
      pthread_mutex_lock(&gil);
    }
    tri_call_release(c);
  }
  pthread_mutex_unlock(&gil);
  atomic_fetch_sub(&waiters_left, 1);
  return NULL;
}

/* What tri__call_complete does for a call in hand-off mode, on the I/O
 * thread (the test cannot be one: it plays it). */
static void complete(tri_call *c) {
  atomic_store(&c->hstate, TRI_HS_QUEUED);
  atomic_store(&c->done, 1);
  if (atomic_load(&c->waiters)) tri__handoff_push(c);
}

static void *completer(void *arg) {
  (void)arg;
  unsigned seed = 1;
  while (atomic_load(&waiters_left) > 0) {
    tri_call *batch[WAITERS * 2];
    pthread_mutex_lock(&box.lock);
    int n = box.n;
    for (int k = 0; k < n; k++) batch[k] = box.calls[k];
    box.n = 0;
    pthread_mutex_unlock(&box.lock);
    for (int k = 0; k < n; k++) {
      complete(batch[k]);
      tri__call_unref(batch[k]); /* as the I/O thread lets go after completing */
    }
    tri_handoff_tick();
    seed = seed * 1103515245u + 12345u;
    usleep(5 + (seed >> 16) % 40); /* a loop turn: calls pile up meanwhile */
  }
  return NULL;
}

void test_handoff(void) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  tri_handoff_stats before, after;
  tri_handoff_stats_get(&before);
  atomic_store(&waiters_left, WAITERS);
  pthread_t w[WAITERS], io;
  pthread_create(&io, NULL, completer, NULL);
  for (long i = 0; i < WAITERS; i++)
    pthread_create(&w[i], NULL, waiter, (void *)i);
  for (int i = 0; i < WAITERS; i++) pthread_join(w[i], NULL);
  pthread_join(io, NULL);
  tri_handoff_stats_get(&after);
  CHECK_EQ_INT(atomic_load(&made), WAITERS * ROUNDS);
  CHECK_EQ_INT(atomic_load(&timeouts), 0); /* no caller left asleep */
  uint64_t queued = after.queued - before.queued;
  uint64_t handed = after.handed - before.handed;
  uint64_t woken = handed + (after.started - before.started) +
                   (after.lapsed - before.lapsed) +
                   (after.restarted - before.restarted);
  CHECK(queued > 0);
  CHECK(handed > 0);      /* the callers did the waking */
  CHECK(woken <= queued); /* each queued call woken at most once */
  tri_channel_close(ch);
  tri_channel_del(ch);
}

/* A call whose waiter left the wait by itself stays queued (claimed) until a
 * hand-off skips it, holding the queue's reference: deleting its channel
 * meanwhile must take it out, or that later drop returns the call to a freed
 * channel (a use after free under ASan; it hung a benchmark run on a
 * destroyed lock). */
void test_handoff_channel_gone(void) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  tri_channel *gone;
  CHECK_EQ_INT(tri_channel_new(&gone, &o), 0);
  tri_call *first, *left;
  CHECK_EQ_INT(tri_call_new(gone, &first, "/s/M", 4, -1, 0), 0);
  CHECK_EQ_INT(tri_call_new(gone, &left, "/s/M", 4, -1, 0), 0);
  tri_call_set_handoff(first);
  tri_call_set_handoff(left);
  atomic_store(&first->waiters, 1); /* as if a thread were waiting on each */
  atomic_store(&left->waiters, 1);
  complete(first);             /* no turn live: woken at once, a turn starts */
  complete(left);              /* queued behind the live turn */
  tri__handoff_resumed(left);  /* its waiter leaves by itself: claimed */
  tri__handoff_resumed(first); /* this thread takes the turn */
  tri_call_release(first);
  tri_call_release(left); /* the queue's reference is the last */
  tri_channel_close(gone);
  tri_channel_del(gone);
  tri_handoff_yield(); /* hands the turn on: nothing of `gone` left queued */
  tri_handoff_stats s;
  tri_handoff_stats_get(&s);
  CHECK(s.queued >= 2);
}
