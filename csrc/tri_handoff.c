/* tri_handoff.c: one-at-a-time wake-ups of finished callers (tri_handoff.h). */
#include "tri_handoff.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tri_int.h"

#define GEN_MASK 0x3fffffffu

static struct {
  pthread_mutex_t lock;
  tri_call *head, *tail; /* queued calls (hnext), each with a reference */
  int live;              /* a turn is held */
  _Atomic uint32_t gen;  /* the live turn's generation (1..GEN_MASK) */
  int64_t progress_at;   /* last hand-off, or the push into an empty queue */
  _Atomic int queued;    /* calls in the queue (read without the lock) */
  /* When the live turn's holder went back to its own code keeping the turn;
   * 0 while it has not (it is still in the library). */
  _Atomic int64_t kept_at;
  _Atomic uint64_t n_queued, n_handed, n_started, n_lapsed, n_restarted;
} H = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The generation of this thread's turn; 0: none. */
static _Thread_local uint32_t my_turn;
/* When this thread last went back to its own code (0: it is in the library),
 * and whether it came back to block here soon enough the last time (it may
 * then keep its turn while it is away). */
static _Thread_local int64_t my_away_since;
static _Thread_local int my_back_soon;

/* In a fork child (one thread): the parent's queued calls are orphaned there
 * (their I/O thread stayed behind) and the lock may have been held by another
 * thread: start empty. */
static void in_child(void) {
  pthread_mutex_init(&H.lock, NULL);
  H.head = H.tail = NULL;
  H.live = 0;
  atomic_store(&H.queued, 0);
  atomic_store(&H.kept_at, 0);
  my_turn = 0;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void install(void) { pthread_atfork(NULL, NULL, in_child); }

/* A new turn's generation (lock held); its holder is in the library. */
static uint32_t next_gen(void) {
  uint32_t g = (atomic_load(&H.gen) + 1) & GEN_MASK;
  if (!g) g = 1;
  atomic_store(&H.gen, g);
  atomic_store(&H.kept_at, 0);
  return g;
}

/* The live turn's holder kept it while away for longer than
 * TRI_HANDOFF_LAPSE_NS: it may be blocked where this module cannot see. */
static int lapsed(int64_t now) {
  int64_t at = atomic_load(&H.kept_at);
  return at && now - at > TRI_HANDOFF_LAPSE_NS;
}

/* Takes queued calls from the head until one can still be claimed, which it
 * marks woken with turn `gen` and returns; NULL when none is left.  Skipped
 * calls (their waiter left by itself) go to *drop, to be unreferenced after
 * the lock.  Lock held. */
static tri_call *take_claimable(uint32_t gen, tri_call **drop) {
  tri_call *c;
  while ((c = H.head)) {
    H.head = c->hnext;
    if (!H.head) H.tail = NULL;
    atomic_fetch_sub(&H.queued, 1);
    uint32_t expected = TRI_HS_QUEUED;
    if (atomic_compare_exchange_strong(&c->hstate, &expected,
                                       (gen << 2) | TRI_HS_WOKEN))
      return c;
    c->hnext = *drop;
    *drop = c;
  }
  return NULL;
}

/* Drops the queue's reference to `c`, then its channel's count of them. */
static void drop_ref(tri_call *c) {
  tri_channel *ch = c->ch;
  tri__call_unref(c);
  atomic_fetch_sub(&ch->handoff_refs, 1); /* last: ch may be freed after it */
}

/* After the lock: wakes `woken`'s waiter (it holds the queue's reference
 * until after the wake) and drops the references of skipped calls. */
static void wake_and_drop(tri_call *woken, tri_call *drop) {
  if (woken) {
    syscall(SYS_futex, &woken->done, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL,
            0);
    drop_ref(woken);
  }
  while (drop) {
    tri_call *next = drop->hnext;
    drop_ref(drop);
    drop = next;
  }
}

void tri__handoff_push(tri_call *c) {
  tri_call *woken = NULL, *drop = NULL;
  pthread_once(&fork_once, install);
  atomic_fetch_add(&c->ch->handoff_refs, 1);
  atomic_fetch_add(&c->refs, 1);
  c->hnext = NULL;
  pthread_mutex_lock(&H.lock);
  if (H.tail) H.tail->hnext = c;
  else {
    H.head = c;
    H.progress_at = tri__now();
  }
  H.tail = c;
  atomic_fetch_add(&H.queued, 1);
  atomic_fetch_add_explicit(&H.n_queued, 1, memory_order_relaxed);
  int lapse = H.live && lapsed(tri__now());
  if (!H.live ||
      lapse) { /* nobody will hand it on: a new turn, with this wake */
    woken = take_claimable(next_gen(), &drop);
    H.live = woken != NULL;
    if (woken)
      atomic_fetch_add_explicit(lapse ? &H.n_lapsed : &H.n_started, 1,
                                memory_order_relaxed);
  }
  pthread_mutex_unlock(&H.lock);
  wake_and_drop(woken, drop);
}

/* Passes this thread's turn on (it has one). */
static void pass_turn(uint32_t turn) {
  my_turn = 0;
  tri_call *woken = NULL, *drop = NULL;
  pthread_mutex_lock(&H.lock);
  if (H.live && atomic_load(&H.gen) == turn) { /* not taken back meanwhile */
    woken = take_claimable(turn, &drop);
    atomic_store(&H.kept_at, 0); /* the next holder is in the library */
    if (woken) {
      H.progress_at = tri__now();
      atomic_fetch_add_explicit(&H.n_handed, 1, memory_order_relaxed);
    } else {
      H.live = 0; /* nothing claimable queued: the invariant holds */
    }
  }
  pthread_mutex_unlock(&H.lock);
  wake_and_drop(woken, drop);
}

void tri_handoff_yield(void) {
  if (my_away_since) { /* back from its own code: was it soon enough? */
    my_back_soon = tri__now() - my_away_since < TRI_HANDOFF_BACK_SOON_NS;
    my_away_since = 0;
  }
  if (my_turn) pass_turn(my_turn);
}

void tri_handoff_leave(void) {
  int64_t now = tri__now();
  my_away_since = now;
  uint32_t turn = my_turn;
  if (!turn) return;
  if (my_back_soon && atomic_load(&H.gen) == turn) {
    atomic_store(&H.kept_at, now); /* kept: lapses if it stays away */
    return;
  }
  pass_turn(turn);
}

void tri__handoff_resumed(tri_call *c) {
  uint32_t s = atomic_load(&c->hstate);
  for (;;) {
    if (s == TRI_HS_QUEUED) { /* not woken by a hand-off: leave the queue */
      if (atomic_compare_exchange_weak(&c->hstate, &s, TRI_HS_CLAIMED)) return;
    } else if ((s & 3) ==
               TRI_HS_WOKEN) { /* the turn is ours (one waiter takes it) */
      if (atomic_compare_exchange_weak(&c->hstate, &s, TRI_HS_CLAIMED)) {
        my_turn = s >> 2;
        return;
      }
    } else {
      return;
    }
  }
}

void tri__handoff_forget_channel(tri_channel *ch) {
  if (!atomic_load(&ch->handoff_refs)) return;
  tri_call *drop = NULL;
  pthread_mutex_lock(&H.lock);
  tri_call **link = &H.head, *last = NULL;
  while (*link) {
    tri_call *c = *link;
    if (c->ch == ch) {
      *link = c->hnext;
      atomic_fetch_sub(&H.queued, 1);
      c->hnext = drop;
      drop = c;
    } else {
      last = c;
      link = &c->hnext;
    }
  }
  H.tail = last;
  pthread_mutex_unlock(&H.lock);
  wake_and_drop(NULL, drop);
  /* Another thread may be between its wake and its drop of one of ours. */
  while (atomic_load(&ch->handoff_refs)) sched_yield();
}

int tri_handoff_tick(void) {
  if (!atomic_load_explicit(&H.queued, memory_order_relaxed)) return -1;
  if (pthread_mutex_trylock(&H.lock)) return 1; /* busy: it is moving */
  tri_call *woken = NULL, *drop = NULL;
  int64_t now = tri__now();
  if (H.head && (lapsed(now) || now - H.progress_at >= TRI_HANDOFF_STALL_NS)) {
    /* The turn's holder went on with other work: a new turn (the old one is
     * void), started with the head's wake. */
    woken = take_claimable(next_gen(), &drop);
    H.live = woken != NULL;
    H.progress_at = now;
    if (woken)
      atomic_fetch_add_explicit(&H.n_restarted, 1, memory_order_relaxed);
  }
  int more = H.head != NULL;
  pthread_mutex_unlock(&H.lock);
  wake_and_drop(woken, drop);
  return more ? 1 : -1;
}

void tri_handoff_stats_get(tri_handoff_stats *out) {
  out->queued = atomic_load(&H.n_queued);
  out->handed = atomic_load(&H.n_handed);
  out->started = atomic_load(&H.n_started);
  out->lapsed = atomic_load(&H.n_lapsed);
  out->restarted = atomic_load(&H.n_restarted);
}
