/*
 * tri_loop: one I/O thread shared by several members (connections).
 *
 * A member is anything with a pollable descriptor and a step function; a
 * connection (tri_conn) is one: its descriptor is its own epoll fd, which
 * becomes readable when its socket or timer has events.  The loop's thread
 * waits on one outer epoll that watches every member's descriptor plus the
 * loop's eventfd, and after each wait steps every member once, in the order
 * they were attached.  A member's step does its own work (reading its inner
 * epoll with no wait when `ready`, its queued ops, its timers) and says when
 * it must run again; the loop sleeps for the shortest of those.
 *
 * Wake-ups: a producer marks its member's own pending flag, then the loop's
 * (tri_loop_wake): the eventfd is written only when the loop's flag was
 * clear, so producers of several members share one wake-up, and nothing on
 * that path takes a lock.  The loop clears its flag before it steps the
 * members; a member clears its own before it takes its queue.  A flag set
 * after those clears is seen by the next wake-up, which it causes.
 *
 * Stepping every member after every wake-up costs a few loads per member:
 * cheap for the handful of backends a channel has, not meant for thousands.
 * One thread runs every member's I/O: a channel on one loop uses one core for
 * its I/O however many backends it has.
 *
 * Lifetime and ownership:
 *  - tri_loop_new returns reference 1 (the caller's).  Whoever attaches
 *    members holds a reference for as long as they may be attached (a
 *    channel holds one from tri_channel_new to tri_channel_del).  The last
 *    tri_loop_unref stops and joins the thread and frees the loop; no member
 *    may be attached then, and it must not run on the loop's thread.
 *  - A member is owned by its attacher; the loop borrows it from
 *    tri_loop_attach until it has left: its step returned TRI_LOOP_DONE, the
 *    loop removed its descriptor, called its `leave` (loop thread) and then
 *    set `left`.  The loop does not touch it afterwards; tri_loop_wait_left
 *    returns once that happened, and only then may the owner free it.
 *  - fork(): the child has no loop thread.  tri_loop_attach refuses
 *    (TRI_ERR_FORKED); the last unref in the child closes the child's copies
 *    of the loop's descriptors and keeps the struct (reachable, never freed:
 *    its members may have been mid-change when the parent forked).
 *
 * A driven loop (tri_loop_new_driven) has no thread of its own: its owner
 * watches tri_loop_fd (readable when a member has events, a wake-up came or
 * a timed turn is due: a timerfd of the loop's, armed by each turn for the
 * earliest time a member asked for) and runs the turns with tri_loop_turn,
 * on whichever thread it likes, one turn at a time.  An asyncio event loop
 * drives one this way, so its calls need no thread hop
 * (triple_py/aio/_reactor.py).  While a thread holds the loop
 * (tri_loop_hold), its own wake-ups of the loop write nothing: it runs a
 * turn when it lets go.  tri_loop_wait_left and tri_loop_block (a thread
 * waiting on a call) run turns themselves when nobody else is, so closing
 * and blocking waits need no one else.  The loop owns its descriptors (the
 * outer epoll, the eventfd, the timerfd) and closes them at the last unref.
 * In a fork child the turns of an inherited driven loop do nothing: its
 * members are the parent's connections, whose sockets the parent still uses.
 *
 * Threads: tri_loop_wake and tri_loop_attach from any thread; `step` and
 * `leave` run on the loop's thread only (a driven loop's: the thread inside
 * tri_loop_turn, tri_loop_block or tri_loop_wait_left).
 */
#ifndef TRI_LOOP_H
#define TRI_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct tri_loop tri_loop;
typedef struct tri_loop_member tri_loop_member;

/* A step's answer: the member is finished and leaves the loop. */
#define TRI_LOOP_DONE (-2)

struct tri_loop_member {
  int fd; /* pollable, the member's; watched for EPOLLIN while attached */
  /* Loop thread.  `ready`: fd was reported readable since the last step.
   * Returns the ms until it must run again without events (-1: never,
   * 0: at once) or TRI_LOOP_DONE. */
  int (*step)(tri_loop_member *m, int ready);
  /* Loop thread, after fd left the outer epoll: releases what the member
   * holds for the loop (may close fd).  May be NULL. */
  void (*leave)(tri_loop_member *m);
  /* The loop's own. */
  tri_loop_member *next; /* joining list (under the lock), then members */
  int ready;             /* loop thread */
  _Atomic int left;      /* set once, under the loop's lock */
};

/* Creates a loop and starts its thread.  Returns 0, TRI_ERR_NOMEM or
 * TRI_ERR_SYSTEM; *out holds the caller's reference. */
int tri_loop_new(tri_loop **out);
/* The same without a thread: the caller drives it (see above). */
int tri_loop_new_driven(tri_loop **out);
/* The descriptor to watch for readability (the loop's; do not close). */
int tri_loop_fd(const tri_loop *loop);
/* One turn of a driven loop: waits up to `timeout` ms for events (0: only
 * looks; -2: does not look, only steps), then steps every member once.
 * Returns the ms until a member must be stepped again with no event (-1:
 * not before an event); the loop's fd becomes readable then by itself.
 * *queued (queued may be NULL) is set nonzero when the turn queued
 * completions without notifying (tri_loop_defer_notify): the caller polls
 * them; zero when it queued none, so a caller need not poll.  Not from
 * inside a step. */
int tri_loop_turn(tri_loop *loop, int timeout, int *queued);
/* Nonzero in a child of fork() for a loop made before it.  Turns of such a
 * driven loop do nothing (its members are the parent's connections). */
int tri_loop_inherited(const tri_loop *loop);
/* Nonzero for a loop made by tri_loop_new_driven. */
int tri_loop_is_driven(const tri_loop *loop);
/* When this thread is inside a tri_loop_turn of `loop` (driven), records
 * that the turn leaves a completion for its caller to poll (the turn's
 * *queued) and returns nonzero: nobody needs notifying.  Else returns 0. */
int tri_loop_defer_notify(const tri_loop *loop);
/* A wait on a driven loop (any thread but one inside a step): returns once
 * *word (a futex word) != seen, or after at most about a millisecond, or
 * timeout_ns (< 0: no limit of its own); the caller checks and calls again.
 * Meanwhile it turns the loop itself when nobody else is, or sleeps on the
 * futex for the thread that is. */
void tri_loop_block(tri_loop *loop, _Atomic uint32_t *word, uint32_t seen,
                    int64_t timeout_ns);
/* This thread holds `loop` (a driven one) until tri_loop_hold(NULL): its
 * wake-ups of it are left to the turn it runs afterwards. */
void tri_loop_hold(tri_loop *loop);
void tri_loop_ref(tri_loop *loop);
/* Drops a reference; the last one stops the thread and frees the loop. */
void tri_loop_unref(tri_loop *loop);
/* Hands `m` to the loop (its first step comes on the loop's next turn).
 * Returns 0, or TRI_ERR_FORKED for a loop made before fork(). */
int tri_loop_attach(tri_loop *loop, tri_loop_member *m);
/* Wakes the loop's thread unless a wake-up is pending.  Returns 1 when it
 * wrote the eventfd, 0 when an earlier wake-up covers this one. */
int tri_loop_wake(tri_loop *loop);
/* Waits until `m` has left the loop (returns at once if it has). */
void tri_loop_wait_left(tri_loop *loop, tri_loop_member *m);
/* Members attached and not yet left (for tests; takes the lock). */
int tri_loop_member_count(tri_loop *loop);
/* Nonzero on a loop's thread. */
int tri_loop_on_thread(void);

#endif
