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
 * Threads: tri_loop_wake and tri_loop_attach from any thread; `step` and
 * `leave` run on the loop's thread only.
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
