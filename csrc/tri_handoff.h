/*
 * tri_handoff: wakes the callers of finished calls one at a time, as the
 * lock they all need next (an embedding interpreter's lock: Python's GIL)
 * passes from one to the next, instead of all at once from the I/O thread.
 *
 * Without it, with many threads blocked in tri_call_wait, the I/O thread
 * wakes every finished caller; a woken caller finds the lock held by another
 * running thread and sleeps again on that lock: two sleeps, two wake-ups and
 * their context switches per call.  With it, the caller woken last holds the
 * "turn": meanwhile the I/O thread queues finished calls (those in hand-off
 * mode, tri_call_set_handoff) instead of waking their waiters.  The holder
 * hands the turn to the head of the queue (waking it) when it next blocks in
 * the library, having let go of the lock (tri_handoff_yield, also called by
 * tri_call_wait before it sleeps); with nothing queued the turn ends.  Only
 * when no turn is live does the I/O thread wake a caller itself, which
 * starts a turn.
 *
 * Between its wait and its next call the holder runs its own code, which may
 * block where this module cannot see (another lock, a sleep, a read) with
 * callers queued behind it.  So when it goes back to its own code
 * (tri_handoff_leave) it keeps the turn only if, the last time, it came back
 * to block in the library within TRI_HANDOFF_BACK_SOON_NS (a thread making
 * calls in a loop); otherwise it hands the turn on right there.  A kept turn
 * lapses after TRI_HANDOFF_LAPSE_NS away: a call finishing then starts a new
 * turn with a wake from the I/O thread (the old turn is void), and the tick
 * below starts one for callers already queued.
 *
 * Invariant (under the module's lock, which guards the queue, `live` and the
 * generation): when no turn is live, no queued call can still be claimed
 * (every one was woken, or its waiter left by itself).  It holds because a
 * call is queued and, when no turn is live (or it lapsed), a new turn starts
 * by waking the head in the same critical section; and a turn ends only when
 * its holder, in the lock, finds no claimable call to hand it to.  So every
 * queued caller is woken by the I/O thread, by a hand-off, or leaves by
 * itself.  A holder that stops handing on is covered twice:
 *  - tri_handoff_tick, which every I/O loop runs each turn, starts a new turn
 *    at the head once the live one lapsed or the queue made no progress for
 *    TRI_HANDOFF_STALL_NS (the old turn is void), and asks its loop to come
 *    back within 1 ms while anything is queued;
 *  - a waiter wakes by itself at the end of its timed wait (tri_call_wait's
 *    timeout; the Python binding waits in 50 ms slices) and then claims its
 *    own queue entry, which the hand-off skips.
 * Each queued call holds a reference of its own, dropped when it leaves the
 * queue; the futex wake happens before that drop, outside the lock.  The
 * channel counts those references (tri_channel.handoff_refs, decremented
 * after the drop), so that tri_channel_del can wait for the last one.
 *
 * Turns belong to threads: a thread's turn is a thread-local generation,
 * valid while it equals the live one.  The state is process-wide (one lock
 * for all the callers: the GIL is per process).  A fork child starts with an
 * empty queue (the parent's calls are orphaned there).
 */
#ifndef TRI_HANDOFF_H
#define TRI_HANDOFF_H

#include <stdint.h>

typedef struct tri_call tri_call;
typedef struct tri_channel tri_channel;

/* How long a queue may go without a hand-off before the I/O thread wakes its
 * head itself (a turn holder that went on with other work). */
#define TRI_HANDOFF_STALL_NS (500 * 1000LL)

/* A thread that came back to block in the library within this long after it
 * last went back to its own code keeps its turn when it next goes back. */
#define TRI_HANDOFF_BACK_SOON_NS (100 * 1000LL)

/* How long a kept turn stays live while its holder is away. */
#define TRI_HANDOFF_LAPSE_NS (200 * 1000LL)

/* A response at least this long is not queued: its caller is woken at once
 * (it spends long enough copying and parsing it that another caller may as
 * well wait for the lock meanwhile). */
#define TRI_HANDOFF_DIRECT_BYTES (64 << 10)

/* I/O thread, from tri__call_complete: `c` (in hand-off mode, done, with its
 * hand-off state already TRI_HS_QUEUED) has a waiter.  Queues it with a
 * reference of its own; wakes it at once when no turn is live. */
void tri__handoff_push(tri_call *c);

/* tri_channel_del, before it frees `ch` (its connections joined): takes the
 * channel's calls out of the queue (calls whose waiters left by themselves;
 * a queued call pins its channel) and waits until no other thread is still
 * letting go of one of them.  Without it the last reference to such a call,
 * dropped later by any thread, would return it to a freed channel. */
void tri__handoff_forget_channel(tri_channel *ch);

/* Any I/O loop, once per turn: restarts a stalled queue.  Returns how many
 * milliseconds the loop may sleep before calling it again (-1: no limit). */
int tri_handoff_tick(void);

/* A caller thread is about to block in the library (the shared lock let
 * go): hands its turn, if it has the live one, to the next queued caller (or
 * ends the turn).  Cheap (no lock) when the thread has no turn. */
void tri_handoff_yield(void);

/* A caller thread that waited goes back to its own code (the shared lock
 * held): keeps its turn if it came back soon last time, else hands it on as
 * tri_handoff_yield.  Reads the clock; no lock unless it hands on. */
void tri_handoff_leave(void);

/* A caller thread whose wait on hand-off call `c` saw it done: takes the turn
 * the hand-off gave it, or claims its own queue entry (it runs without a
 * turn).  No effect on a call that was not queued. */
void tri__handoff_resumed(tri_call *c);

/* Hand-off states of a call (tri_call.hstate).  A woken call holds
 * (generation << 2) | TRI_HS_WOKEN. */
enum {
  TRI_HS_IDLE = 0,    /* not queued */
  TRI_HS_QUEUED = 1,  /* done with a waiter: to be woken by a hand-off */
  TRI_HS_CLAIMED = 2, /* its waiter left by itself: skipped when dequeued */
  TRI_HS_WOKEN = 3    /* low bits of a woken state (the turn not yet taken) */
};

/* Counters for tests and benchmarks: calls queued; of those woken, by a
 * hand-off from a caller, by the I/O thread with no turn live, by the I/O
 * thread with the live turn lapsed, by the tick. */
typedef struct {
  uint64_t queued, handed, started, lapsed, restarted;
} tri_handoff_stats;
void tri_handoff_stats_get(tri_handoff_stats *out);

#endif
