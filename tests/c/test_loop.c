/* test_loop.c: tri_loop, one I/O thread shared by several members.
 *
 * The first cases drive the loop with members of the test's own, whose
 * descriptor is an eventfd (no network): readiness, steps, timeouts, leaving,
 * references and fork.  The last case runs two channels' connections on one
 * loop against the embedded server on 127.0.0.1 (loopback, as test_server
 * does): calls complete on both, the loop is one thread, a closed channel's
 * connection leaves it and the other channel keeps working.  The driven
 * loop's cases (no thread: the caller turns it) use fake members too, and one
 * channel over loopback whose calls complete with no I/O thread at all. */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_clock.h"
#include "tri_error.h"
#include "tri_loop.h"
#include "tri_server.h"
#include "tri_test.h"
#include "tri_wire.h"
#include "loopback.h"

#define WAIT_NS 5000000000LL

typedef struct {
  tri_loop_member m; /* first: the callbacks cast back */
  int efd;
  _Atomic int steps, ready_steps, leaves, left_on_thread;
  _Atomic int done_after; /* leave once this many steps ran (0: never) */
  int timeout_ms;         /* what step returns */
} fake;

static int fake_step(tri_loop_member *m, int ready) {
  fake *f = (fake *)m;
  int n = atomic_fetch_add(&f->steps, 1) + 1;
  if (ready) {
    atomic_fetch_add(&f->ready_steps, 1);
    uint64_t v;
    ssize_t r = read(f->efd, &v, sizeof(v));
    (void)r;
  }
  int after = atomic_load(&f->done_after);
  if (after && n >= after) return TRI_LOOP_DONE;
  return f->timeout_ms;
}

static void fake_leave(tri_loop_member *m) {
  fake *f = (fake *)m;
  atomic_fetch_add(&f->leaves, 1);
  atomic_store(&f->left_on_thread, tri_loop_on_thread());
  close(f->efd); /* as a connection closes its epoll fd */
  f->efd = -1;
}

static void fake_init(fake *f, int timeout_ms) {
  memset(f, 0, sizeof(*f));
  f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  f->m.fd = f->efd;
  f->m.step = fake_step;
  f->m.leave = fake_leave;
  f->timeout_ms = timeout_ms;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits (bounded) until *v reaches `want`; returns whether it did. */
static int wait_for(_Atomic int *v, int want) {
  for (int i = 0; i < 5000 && atomic_load(v) < want; i++) sleep_ms(1);
  return atomic_load(v) >= want;
}

static int threads_listed(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* The number of threads once /proc/self/task has stopped changing for 10 ms
 * (at most 2 s).  A thread just joined can still be listed for a moment: the
 * kernel wakes pthread_join before it has released the task (about 5 % of
 * runs under TSan counted it). */
static int threads_now(void) {
  int n = threads_listed();
  for (int i = 0; i < 200; i++) {
    sleep_ms(10);
    int m = threads_listed();
    if (m == n) return n;
    n = m;
  }
  return n;
}

/* A member whose fd becomes readable is stepped with ready = 1; members
 * with nothing to do are stepped after every wake-up all the same. */
static void readiness_and_steps(void) {
  int before = threads_now();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new(&loop), 0);
  CHECK_EQ_INT(threads_now(), before + 1); /* one thread, however many members */
  fake a, b;
  fake_init(&a, -1);
  fake_init(&b, -1);
  CHECK_EQ_INT(tri_loop_attach(loop, &a.m), 0);
  CHECK_EQ_INT(tri_loop_attach(loop, &b.m), 0);
  CHECK_EQ_INT(tri_loop_member_count(loop), 2);
  CHECK(wait_for(&a.steps, 1) &&
        wait_for(&b.steps, 1)); /* first step on attach */
  CHECK_EQ_INT(threads_now(), before + 1);
  int a_ready = atomic_load(&a.ready_steps),
      b_ready = atomic_load(&b.ready_steps);
  uint64_t one = 1;
  CHECK_EQ_INT(write(b.efd, &one, sizeof(one)), 8);
  CHECK(wait_for(&b.ready_steps, b_ready + 1));
  CHECK_EQ_INT(atomic_load(&a.ready_steps), a_ready); /* a's fd had nothing */
  CHECK(atomic_load(&a.steps) >= 2); /* but a was stepped too */
  /* A wake-up with no fd event steps everyone, ready = 0. */
  int a_steps = atomic_load(&a.steps), b_steps = atomic_load(&b.steps);
  tri_loop_wake(loop);
  CHECK(wait_for(&a.steps, a_steps + 1) && wait_for(&b.steps, b_steps + 1));
  CHECK_EQ_INT(atomic_load(&a.ready_steps), a_ready);
  /* Leaving: on the loop's thread, after which `left` is set. */
  atomic_store(&a.done_after, atomic_load(&a.steps) + 1);
  atomic_store(&b.done_after, atomic_load(&b.steps) + 1);
  tri_loop_wake(loop);
  tri_loop_wait_left(loop, &a.m);
  tri_loop_wait_left(loop, &b.m);
  CHECK_EQ_INT(atomic_load(&a.leaves), 1);
  CHECK_EQ_INT(atomic_load(&b.leaves), 1);
  CHECK_EQ_INT(atomic_load(&a.left_on_thread), 1);
  CHECK_EQ_INT(tri_loop_member_count(loop), 0);
  CHECK(!tri_loop_on_thread());
  tri_loop_unref(loop);
  CHECK_EQ_INT(threads_now(), before); /* the last reference joined it */
}

/* The loop sleeps no longer than its members' shortest timeout: a member
 * that asks to run again in 5 ms is stepped with no event or wake-up at all
 * (else it would never leave), and one that answers 0 runs at once again. */
static void timeouts(void) {
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new(&loop), 0);
  fake idle, timed, busy;
  fake_init(&idle, -1);
  fake_init(&timed, 5);
  fake_init(&busy, 0);
  atomic_store(&timed.done_after, 10);
  atomic_store(&busy.done_after, 100);
  CHECK_EQ_INT(tri_loop_attach(loop, &idle.m), 0);
  CHECK_EQ_INT(tri_loop_attach(loop, &timed.m), 0);
  CHECK(wait_for(&timed.leaves, 1));
  CHECK_EQ_INT(atomic_load(&timed.steps), 10);
  CHECK_EQ_INT(tri_loop_attach(loop, &busy.m), 0);
  CHECK(wait_for(&busy.leaves, 1));
  CHECK_EQ_INT(atomic_load(&busy.steps), 100);
  CHECK_EQ_INT(tri_loop_member_count(loop), 1);
  /* A member may attach again after it left (a reconnect reuses nothing
   * else, but the member struct may be recycled). */
  fake_init(&timed, 1);
  atomic_store(&timed.done_after, 3);
  CHECK_EQ_INT(tri_loop_attach(loop, &timed.m), 0);
  tri_loop_wait_left(loop, &timed.m);
  CHECK_EQ_INT(atomic_load(&timed.steps), 3);
  atomic_store(&idle.done_after, 1);
  tri_loop_wake(loop);
  tri_loop_wait_left(loop, &idle.m);
  tri_loop_unref(loop);
}

/* References: the thread lives until the last one goes, whoever drops it. */
static void references(void) {
  int before = threads_now();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new(&loop), 0);
  tri_loop_ref(loop);
  tri_loop_unref(loop);
  CHECK_EQ_INT(threads_now(), before + 1);
  fake f;
  fake_init(&f, -1);
  CHECK_EQ_INT(tri_loop_attach(loop, &f.m), 0); /* still usable */
  CHECK(wait_for(&f.steps, 1));
  atomic_store(&f.done_after, atomic_load(&f.steps) + 1);
  tri_loop_wake(loop);
  tri_loop_wait_left(loop, &f.m);
  tri_loop_unref(loop);
  CHECK_EQ_INT(threads_now(), before);
}

static tri_loop *forked_loop;

/* In a child of fork(): no loop thread; attaching is refused, and dropping
 * the last reference returns at once (it must not join a thread that does
 * not exist here). */
static tri_channel *loop_channel(tri_loop *loop, int port);
static int unary(tri_channel *ch);

static int forked_child(void) {
  fake f;
  fake_init(&f, -1);
  if (tri_loop_attach(forked_loop, &f.m) != TRI_ERR_FORKED) return 1;
  /* A channel made here on the parent's loop (a balancer adding a backend
   * in the child): its calls fail at once instead of waiting for a thread. */
  tri_channel *ch = loop_channel(forked_loop, 1);
  if (!ch) return 2;
  if (unary(ch) != TRI_CODE_UNAVAILABLE) return 3;
  tri_channel_del(ch);
  tri_loop_unref(forked_loop);
  return 0;
}

static void fork_child_does_not_join(void) {
  CHECK_EQ_INT(tri_loop_new(&forked_loop), 0);
  fake f;
  fake_init(&f, -1);
  CHECK_EQ_INT(tri_loop_attach(forked_loop, &f.m), 0); /* a member mid-life */
  CHECK(wait_for(&f.steps, 1));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10); /* a join would hang: the alarm kills the child */
    _exit(forked_child());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status),
               0);
  /* The parent's loop is untouched. */
  atomic_store(&f.done_after, atomic_load(&f.steps) + 1);
  tri_loop_wake(forked_loop);
  tri_loop_wait_left(forked_loop, &f.m);
  tri_loop_unref(forked_loop);
}

static tri_channel *loop_channel(tri_loop *loop, int port) {
  char p[16];
  snprintf(p, sizeof(p), "%d", port);
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = p;
  o.io_loop = loop;
  tri_channel *ch = NULL;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  return ch;
}

/* One unary call (an empty SimpleRequest); returns its status code. */
static int unary(tri_channel *ch) {
  tri_call *c = empty_unary(ch, WAIT_NS);
  if (!c) return -1;
  tri_call_start(c);
  int code = tri_call_wait(c, WAIT_NS) ? -2 : tri_call_code(c);
  tri_call_release(c);
  return code;
}

/* Two channels (a balancer's two backends) on one loop, over loopback. */
static void channels_share_a_loop(void) {
  tri_server *srv = loopback_server();
  if (!srv) return;
  int port = tri_server_port(srv);
  int before = threads_now();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new(&loop), 0);
  tri_channel *a = loop_channel(loop, port), *b = loop_channel(loop, port);
  tri_loop_unref(loop); /* the channels' references keep it */
  for (int i = 0; i < 20; i++) {
    CHECK_EQ_INT(unary(a), TRI_CODE_OK);
    CHECK_EQ_INT(unary(b), TRI_CODE_OK);
  }
  CHECK_EQ_INT(tri_loop_member_count(loop), 2);
  CHECK_EQ_INT(threads_now(), before + 1); /* not one per connection */
  CHECK_EQ_INT(tri_channel_stats(a)->connects, 1);
  tri_channel_del(a); /* its connection leaves; b's stays */
  CHECK_EQ_INT(tri_loop_member_count(loop), 1);
  CHECK_EQ_INT(unary(b), TRI_CODE_OK);
  /* The server goes away: b's connection dies and leaves the loop; the
   * next call fails (nothing listens), the loop thread is still there. */
  tri_server_stop(srv);
  int code = unary(b);
  CHECK(code == TRI_CODE_UNAVAILABLE);
  int stopped =
      threads_now();  /* the server's threads are gone, the loop's is not */
  tri_channel_del(b); /* the last reference: the loop's thread is joined */
  CHECK_EQ_INT(threads_now(), stopped - 1);
  tri_server_del(srv);
}

static int readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

/* A driven loop has no thread: its fd says when it needs a turn, a turn
 * steps the members on the caller's thread, and held wake-ups write
 * nothing until the holder lets go. */
static void driven_turns_on_the_caller(void) {
  int before = threads_now();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  CHECK(tri_loop_is_driven(loop));
  CHECK_EQ_INT(threads_now(), before);
  fake f;
  fake_init(&f, -1); /* no timed turns here: driven_timed_turns */
  CHECK_EQ_INT(tri_loop_attach(loop, &f.m), 0);
  CHECK(readable(tri_loop_fd(loop))); /* the attach woke it */
  CHECK_EQ_INT(atomic_load(&f.steps), 0);
  CHECK_EQ_INT(tri_loop_turn(loop, 0, NULL), -1); /* the member's timeout */
  CHECK_EQ_INT(atomic_load(&f.steps), 1);
  CHECK_EQ_INT(atomic_load(&f.ready_steps), 1); /* a joiner looks at once */
  CHECK(!readable(tri_loop_fd(loop)));
  CHECK(!tri_loop_on_thread()); /* only inside the turn */
  /* Its descriptor's event: readable, then a ready step. */
  uint64_t one = 1;
  CHECK_EQ_INT(write(f.efd, &one, sizeof(one)), 8);
  CHECK(readable(tri_loop_fd(loop)));
  tri_loop_turn(loop, 0, NULL);
  CHECK_EQ_INT(atomic_load(&f.ready_steps), 2);
  CHECK(!readable(tri_loop_fd(loop)));
  /* -2 steps without looking: the event waits for the next look. */
  CHECK_EQ_INT(write(f.efd, &one, sizeof(one)), 8);
  tri_loop_turn(loop, -2, NULL);
  CHECK_EQ_INT(atomic_load(&f.steps), 3);
  CHECK_EQ_INT(atomic_load(&f.ready_steps), 2);
  tri_loop_turn(loop, 0, NULL);
  CHECK_EQ_INT(atomic_load(&f.ready_steps), 3);
  /* Held: this thread's wake-ups write nothing; after, they do. */
  tri_loop_hold(loop);
  CHECK_EQ_INT(tri_loop_wake(loop), 0);
  CHECK(!readable(tri_loop_fd(loop)));
  tri_loop_hold(NULL);
  CHECK_EQ_INT(tri_loop_wake(loop), 1);
  CHECK(readable(tri_loop_fd(loop)));
  CHECK_EQ_INT(tri_loop_wake(loop), 0); /* pending: one write is enough */
  tri_loop_turn(loop, 0, NULL);
  /* Leaving with nobody turning: wait_left turns the loop itself, and the
   * member leaves on "the loop's thread", this one. */
  atomic_store(&f.done_after, atomic_load(&f.steps) + 2);
  tri_loop_wait_left(loop, &f.m);
  CHECK_EQ_INT(atomic_load(&f.leaves), 1);
  CHECK_EQ_INT(atomic_load(&f.left_on_thread), 1);
  CHECK_EQ_INT(tri_loop_member_count(loop), 0);
  tri_loop_unref(loop);
  CHECK_EQ_INT(threads_now(), before);
}

/* Timed turns of a driven loop: its fd becomes readable by itself when the
 * earliest time a member asked for comes; a later request keeps the earlier
 * firing, an earlier one brings it forward. */
static void driven_timed_turns(void) {
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  fake f;
  fake_init(&f, 30);
  CHECK_EQ_INT(tri_loop_attach(loop, &f.m), 0);
  CHECK_EQ_INT(tri_loop_turn(loop, 0, NULL), 30);
  CHECK(!readable(tri_loop_fd(loop)));
  struct pollfd p = {.fd = tri_loop_fd(loop), .events = POLLIN};
  CHECK_EQ_INT(poll(&p, 1, 2000), 1); /* about 30 ms later, with no event */
  tri_loop_turn(loop, 0, NULL);
  CHECK_EQ_INT(atomic_load(&f.steps), 2);
  CHECK_EQ_INT(atomic_load(&f.ready_steps), 1); /* the timer is not the member's */
  /* Asked for 2 s, then 20 ms: the 20 ms wins. */
  f.timeout_ms = 2000;
  tri_loop_turn(loop, 0, NULL);
  f.timeout_ms = 20;
  tri_loop_turn(loop, -2, NULL);
  int64_t start = tri__now();
  CHECK_EQ_INT(poll(&p, 1, 1000), 1);
  CHECK(tri__now() - start < 900 * 1000000LL);
  /* Asked for nothing more (-1): once it fired, it stays quiet. */
  f.timeout_ms = -1;
  tri_loop_turn(loop, 0, NULL);
  CHECK_EQ_INT(poll(&p, 1, 100), 0);
  atomic_store(&f.done_after, atomic_load(&f.steps) + 1);
  tri_loop_wait_left(loop, &f.m);
  tri_loop_unref(loop);
}

/* A member that publishes a futex word on its third step: a waiter in
 * tri_loop_block turns the loop itself until it changes. */
typedef struct {
  fake f;
  _Atomic uint32_t word;
} publisher;

static int publish_step(tri_loop_member *m, int ready) {
  publisher *p = (publisher *)m;
  int t = fake_step(m, ready);
  if (atomic_load(&p->f.steps) == 3) atomic_store(&p->word, 1);
  return t == TRI_LOOP_DONE ? t : 0; /* always more to do */
}

static void driven_block_turns_until_the_word_changes(void) {
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  publisher p;
  fake_init(&p.f, 0);
  p.f.m.step = publish_step;
  atomic_init(&p.word, 0);
  CHECK_EQ_INT(tri_loop_attach(loop, &p.f.m), 0);
  int rounds = 0;
  while (atomic_load(&p.word) == 0 && rounds < 1000) {
    tri_loop_block(loop, &p.word, 0, -1);
    rounds++;
  }
  CHECK_EQ_INT(atomic_load(&p.word), 1);
  CHECK_EQ_INT(atomic_load(&p.f.steps), 3);
  /* A timeout shorter than a slice returns (the word unchanged). */
  _Atomic uint32_t never = 0;
  tri_loop_block(loop, &never, 0, 0);
  atomic_store(&p.f.done_after, atomic_load(&p.f.steps) + 1);
  tri_loop_wait_left(loop, &p.f.m);
  tri_loop_unref(loop);
}

/* A channel on a driven loop: no I/O thread; a blocking wait turns the loop
 * (the caller does the I/O); a notified call completed in tri_loop_turn is
 * polled after it without the notify fd being written (the turn tells its
 * caller instead), and one completed in a waiter's turn writes it (its poller
 * is elsewhere). */
static void driven_channel_needs_no_thread(void) {
  tri_server *srv = loopback_server();
  if (!srv) return;
  int before = threads_now();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  tri_channel *ch = loop_channel(loop, tri_server_port(srv));
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(unary(ch), TRI_CODE_OK);
  CHECK_EQ_INT(threads_now(), before);
  CHECK_EQ_INT(tri_loop_member_count(loop), 1);
  /* Quiet: the turn's completion is queued, the notify fd stays quiet. */
  tri_call *c = empty_unary(ch, WAIT_NS);
  tri_call_set_notify(c, c);
  tri_call_start(c);
  int64_t end = tri__now() + WAIT_NS;
  int queued = 0;
  while (!tri_call_done(c) && tri__now() < end) {
    struct pollfd p = {.fd = tri_loop_fd(loop), .events = POLLIN};
    poll(&p, 1, 100);
    tri_loop_turn(loop, 0, &queued);
  }
  CHECK(tri_call_done(c));
  CHECK(queued); /* the turn that completed it says so */
  CHECK(!readable(tri_channel_notify_fd(ch)));
  void *tokens[4];
  CHECK_EQ_INT(tri_channel_poll_completions(ch, tokens, 4, 0), 1);
  CHECK(tokens[0] == c);
  tri_call_release(c);
  /* A turn that completes nothing says so: its caller need not poll. */
  queued = -1;
  tri_loop_turn(loop, 0, &queued);
  CHECK_EQ_INT(queued, 0);
  /* Noisy: a blocking wait's turns write it for the notified call. */
  tri_call *d = empty_unary(ch, WAIT_NS);
  tri_call_set_notify(d, d);
  tri_call_start(d);
  CHECK_EQ_INT(tri_call_wait(d, WAIT_NS), 0);
  CHECK(readable(tri_channel_notify_fd(ch)));
  CHECK_EQ_INT(tri_channel_poll_completions(ch, tokens, 4, 0), 1);
  tri_call_release(d);
  tri_loop_unref(loop); /* the channel's reference keeps it */
  tri_channel_del(ch);  /* its connection leaves on this thread's turns */
  CHECK_EQ_INT(threads_now(), before);
  tri_server_del(srv);
}

static void *nothing(void *arg) { return arg; }

void test_loop(void) {
  /* Sanitizers start a helper thread at the first thread creation: let it
   * exist before the cases count threads. */
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
  readiness_and_steps();
  timeouts();
  references();
  fork_child_does_not_join();
  channels_share_a_loop();
  driven_turns_on_the_caller();
  driven_timed_turns();
  driven_block_turns_until_the_word_changes();
  driven_channel_needs_no_thread();
}
