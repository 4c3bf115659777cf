/*
 * tri_loop.c: one I/O thread shared by several members (see tri_loop.h).
 */
#include "tri_loop.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "tri_clock.h"
#include "tri_error.h"
#include "tri_fork.h"
#include "tri_mem.h"
#include "tri_thread.h"

#define EVENTS_MAX 64

struct tri_loop {
  pthread_t thread;         /* not for a driven loop */
  int driven;               /* no thread: tri_loop_turn runs the turns */
  pthread_mutex_t turn_lock; /* driven: held by whoever runs a turn */
  int tfd;                  /* driven: readable when a timed turn is due */
  int64_t tfd_at;           /* driven, turn_lock: when tfd fires (0: disarmed) */
  int epfd, evfd;
  unsigned fork_gen; /* tri_fork_generation() at creation */
  _Atomic int refs;
  _Atomic int wake_pending; /* the eventfd was written and not yet read */
  _Atomic int stop;         /* the last reference went: the thread returns */
  _Atomic int n_members;    /* attached and not yet left */
  pthread_mutex_t lock;     /* guards `joining` and members' `left` */
  pthread_cond_t left_cond; /* broadcast when a member has left */
  tri_loop_member *joining; /* attached, not yet taken by the thread */
  tri_loop_member *members; /* loop thread only, in attach order */
  tri_loop *next_abandoned; /* fork children: the abandoned list */
};

static __thread int on_loop_thread;
/* The driven loop this thread holds (tri_loop_hold), or NULL. */
static __thread tri_loop *held;

int tri_loop_on_thread(void) { return on_loop_thread; }

int tri_loop_wake(tri_loop *loop) {
  if (held == loop) return 0; /* its holder runs a turn when it lets go */
  if (atomic_exchange(&loop->wake_pending, 1)) return 0;
  uint64_t one = 1;
  ssize_t w = write(loop->evfd, &one, sizeof(one));
  (void)w;
  return 1;
}

/* Moves the newly attached members to the end of `members` and into the
 * outer epoll (data.ptr = member).  A member whose fd cannot be watched
 * still gets its steps: it runs on timeouts and wake-ups alone. */
static void take_joining(tri_loop *loop) {
  pthread_mutex_lock(&loop->lock);
  tri_loop_member *j = loop->joining;
  loop->joining = NULL;
  pthread_mutex_unlock(&loop->lock);
  tri_loop_member *rev = NULL; /* joining is LIFO: restore attach order */
  while (j) {
    tri_loop_member *n = j->next;
    j->next = rev;
    rev = j;
    j = n;
  }
  tri_loop_member **tail = &loop->members;
  while (*tail) tail = &(*tail)->next;
  *tail = rev;
  for (tri_loop_member *m = rev; m; m = m->next) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = m};
    if (m->fd >= 0) epoll_ctl(loop->epfd, EPOLL_CTL_ADD, m->fd, &ev);
    m->ready = 1; /* its first step looks at whatever is there */
  }
}

static void member_left(tri_loop *loop, tri_loop_member *m) {
  if (m->fd >= 0) epoll_ctl(loop->epfd, EPOLL_CTL_DEL, m->fd, NULL);
  if (m->leave) m->leave(m);
  atomic_fetch_sub(&loop->n_members, 1);
  pthread_mutex_lock(&loop->lock);
  atomic_store(&m->left, 1); /* m may be freed from here on */
  pthread_cond_broadcast(&loop->left_cond);
  pthread_mutex_unlock(&loop->lock);
}

/* Steps every member once; returns the loop's next epoll timeout (ms). */
static int step_all(tri_loop *loop) {
  int timeout = -1;
  tri_loop_member **pp = &loop->members;
  while (*pp) {
    tri_loop_member *m = *pp;
    int ready = m->ready;
    m->ready = 0;
    int t = m->step(m, ready);
    if (t == TRI_LOOP_DONE) {
      *pp = m->next;
      member_left(loop, m);
      continue;
    }
    if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
    pp = &m->next;
  }
  return timeout;
}

/* Waits up to `timeout` ms on the outer epoll and marks what it reported:
 * members ready, the eventfd read (its flag cleared). */
static void wait_events(tri_loop *loop, int timeout) {
  struct epoll_event evs[EVENTS_MAX];
  int n = epoll_wait(loop->epfd, evs, EVENTS_MAX, timeout);
  if (n < 0 && errno != EINTR) n = 0; /* EBADF etc. cannot happen while we own it */
  for (int i = 0; i < n; i++) {
    if (evs[i].data.ptr == loop) {
      uint64_t v;
      ssize_t r = read(loop->evfd, &v, sizeof(v));
      (void)r;
      atomic_store(&loop->wake_pending, 0);
    } else if (evs[i].data.ptr == &loop->tfd) {
      uint64_t v;
      ssize_t r = read(loop->tfd, &v, sizeof(v));
      (void)r;
      loop->tfd_at = 0; /* fired: the turn that follows arms it again */
    } else {
      ((tri_loop_member *)evs[i].data.ptr)->ready = 1;
    }
  }
}

static void *loop_main(void *arg) {
  tri_loop *loop = arg;
  on_loop_thread = 1;
  /* As on a connection's own thread: a peer that closes while we write must
   * give EPIPE, not kill the process. */
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  for (;;) {
    take_joining(loop);
    int timeout = step_all(loop);
    if (atomic_load(&loop->stop) && !loop->members) break;
    wait_events(loop, timeout);
  }
  return NULL;
}

static int loop_new(tri_loop **out, int driven) {
  tri_loop *loop = tri_mem_calloc(NULL, 1, sizeof(*loop));
  if (!loop) return TRI_ERR_NOMEM;
  loop->driven = driven;
  loop->tfd = -1;
  atomic_init(&loop->refs, 1);
  loop->fork_gen = tri_fork_generation();
  loop->epfd = epoll_create1(EPOLL_CLOEXEC);
  loop->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = loop};
  if (loop->epfd < 0 || loop->evfd < 0 ||
      epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->evfd, &ev))
    goto fail;
  if (driven) { /* timed turns: the owner only watches the fd */
    loop->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &loop->tfd};
    if (loop->tfd < 0 || epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->tfd, &tev)) goto fail;
  }
  pthread_mutex_init(&loop->lock, NULL);
  pthread_mutex_init(&loop->turn_lock, NULL);
  pthread_cond_init(&loop->left_cond, NULL);
  if (!driven && tri_thread_create(&loop->thread, "tri-io", loop_main, loop)) {
    pthread_mutex_destroy(&loop->lock);
    pthread_mutex_destroy(&loop->turn_lock);
    pthread_cond_destroy(&loop->left_cond);
    goto fail;
  }
  *out = loop;
  return 0;
fail:
  if (loop->epfd >= 0) close(loop->epfd);
  if (loop->evfd >= 0) close(loop->evfd);
  if (loop->tfd >= 0) close(loop->tfd);
  tri_mem_free(loop);
  return TRI_ERR_SYSTEM;
}

int tri_loop_new(tri_loop **out) { return loop_new(out, 0); }

int tri_loop_new_driven(tri_loop **out) { return loop_new(out, 1); }

int tri_loop_fd(const tri_loop *loop) { return loop->epfd; }

/* The loop whose tri_loop_turn runs on this thread (not a waiter's turns,
 * tri_loop_block): its caller polls the completions right after; and
 * whether that turn deferred any notification. */
static __thread const tri_loop *quiet_loop;
static __thread int quiet_queued;

int tri_loop_is_driven(const tri_loop *loop) { return loop->driven; }

int tri_loop_defer_notify(const tri_loop *loop) {
  if (!loop->driven || quiet_loop != loop) return 0;
  quiet_queued = 1;
  return 1;
}

/* Makes tfd fire `ms` from now unless it fires sooner already (turn_lock
 * held).  A due time that moved later (the call with the nearest deadline
 * ended) keeps the earlier firing: that turn arms the later one.  So the
 * timer is set about once per change for the earlier, not once per turn. */
static void arm_timer(tri_loop *loop, int ms) {
  int64_t at = tri__now() + (int64_t)ms * 1000000LL;
  if (loop->tfd_at && loop->tfd_at <= at) return;
  struct itimerspec its = {{0, 0}, {at / 1000000000LL, at % 1000000000LL}};
  if (at <= 0) its.it_value.tv_nsec = 1; /* 0 would disarm it */
  timerfd_settime(loop->tfd, TFD_TIMER_ABSTIME, &its, NULL);
  loop->tfd_at = at;
}

/* One turn on the calling thread (turn_lock held). */
static int turn_locked(tri_loop *loop, int timeout) {
  int was = on_loop_thread;
  on_loop_thread = 1;
  /* Cleared before the members take their queues (as the thread does when it
   * reads the eventfd): a wake-up after this writes it again. */
  atomic_store(&loop->wake_pending, 0);
  if (timeout != -2) wait_events(loop, timeout);
  take_joining(loop);
  int next = step_all(loop);
  on_loop_thread = was;
  if (next >= 0) arm_timer(loop, next);
  return next;
}

int tri_loop_inherited(const tri_loop *loop) {
  return tri_fork_inherited(loop->fork_gen);
}

int tri_loop_turn(tri_loop *loop, int timeout, int *queued) {
  if (queued) *queued = 0;
  /* A fork child must not step the parent's connections: their sockets are
   * shared with the parent. */
  if (tri_loop_inherited(loop)) return -1;
  pthread_mutex_lock(&loop->turn_lock);
  quiet_loop = loop;
  quiet_queued = 0;
  int next = turn_locked(loop, timeout);
  quiet_loop = NULL;
  if (queued) *queued = quiet_queued;
  pthread_mutex_unlock(&loop->turn_lock);
  return next;
}

/* Slices of a waiter's wait (ms): a turn that another thread runs completes
 * the waited-for call and wakes the futex, but not a waiter in poll(). */
#define BLOCK_SLICE_MS 1

void tri_loop_block(tri_loop *loop, _Atomic uint32_t *word, uint32_t seen,
                    int64_t timeout_ns) {
  int ms = BLOCK_SLICE_MS;
  if (timeout_ns >= 0 && timeout_ns < ms * 1000000LL)
    ms = (int)((timeout_ns + 999999) / 1000000);
  if (!tri_loop_inherited(loop) && pthread_mutex_trylock(&loop->turn_lock) == 0) {
    turn_locked(loop, 0);
    int changed = atomic_load(word) != seen;
    pthread_mutex_unlock(&loop->turn_lock);
    if (!changed) {
      struct pollfd p = {.fd = loop->epfd, .events = POLLIN};
      poll(&p, 1, ms); /* events for the next turn, the caller's */
    }
    return;
  }
  struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

void tri_loop_hold(tri_loop *loop) { held = loop; }

void tri_loop_ref(tri_loop *loop) { atomic_fetch_add(&loop->refs, 1); }

/* Loops inherited across fork() whose last reference went in the child:
 * reachable, so leak checkers do not count them. */
static _Atomic(tri_loop *) abandoned;

void tri_loop_unref(tri_loop *loop) {
  if (atomic_fetch_sub(&loop->refs, 1) != 1) return;
  if (tri_fork_inherited(
          loop->fork_gen)) { /* no thread here: this process's fds only */
    close(loop->evfd);
    close(loop->epfd);
    if (loop->tfd >= 0) close(loop->tfd);
    loop->next_abandoned = atomic_load(&abandoned);
    while (!atomic_compare_exchange_weak(&abandoned, &loop->next_abandoned,
                                         loop)) {
    }
    return;
  }
  if (!loop->driven) {
    atomic_store(&loop->stop, 1);
    uint64_t one = 1; /* unconditionally: a pending flag may be stale */
    ssize_t w = write(loop->evfd, &one, sizeof(one));
    (void)w;
    pthread_join(loop->thread, NULL);
  }
  close(loop->evfd);
  close(loop->epfd);
  if (loop->tfd >= 0) close(loop->tfd);
  pthread_mutex_destroy(&loop->lock);
  pthread_mutex_destroy(&loop->turn_lock);
  pthread_cond_destroy(&loop->left_cond);
  tri_mem_free(loop);
}

int tri_loop_attach(tri_loop *loop, tri_loop_member *m) {
  if (tri_fork_inherited(loop->fork_gen)) return TRI_ERR_FORKED;
  atomic_store(&m->left, 0);
  m->ready = 0;
  atomic_fetch_add(&loop->n_members, 1);
  pthread_mutex_lock(&loop->lock);
  m->next = loop->joining;
  loop->joining = m;
  pthread_mutex_unlock(&loop->lock);
  tri_loop_wake(loop);
  return 0;
}

void tri_loop_wait_left(tri_loop *loop, tri_loop_member *m) {
  if (atomic_load(&m->left)) return;
  if (loop->driven) { /* nobody else may turn it: a waiter's turns, as for a call */
    while (!atomic_load(&m->left))
      tri_loop_block(loop, (_Atomic uint32_t *)(void *)&m->left, 0, -1);
    return;
  }
  pthread_mutex_lock(&loop->lock);
  while (!atomic_load(&m->left))
    pthread_cond_wait(&loop->left_cond, &loop->lock);
  pthread_mutex_unlock(&loop->lock);
}

int tri_loop_member_count(tri_loop *loop) {
  return atomic_load(&loop->n_members);
}
