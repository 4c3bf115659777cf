/*
 * tri_fork: telling objects made before a fork() from objects of this process.
 *
 * fork() copies the calling thread only: a channel made in the parent arrives
 * in the child with its connection's socket, nghttp2 session and queues, but
 * without the I/O thread that owns them, and its mutexes in whatever state the
 * parent's other threads held them.  Such a channel must never wait for that
 * thread (a call would hang past its deadline, a close would pthread_join a
 * thread that does not exist here).
 *
 * The process keeps a fork generation: 0 where the library was loaded, and
 * one more in every child (a pthread_atfork child handler, installed on the
 * first tri_fork_generation call, adds it; the handler only does an atomic
 * add, so it is async-signal-safe).  An object records the generation it was
 * made in; a different current generation means it was inherited.
 *
 * Threads: any thread, any time.  No pointers, nothing to free.
 */
#ifndef TRI_FORK_H
#define TRI_FORK_H

/* The current fork generation (installs the fork handler on first use). */
unsigned tri_fork_generation(void);

/* Nonzero when `generation` (an earlier tri_fork_generation()) was recorded in
 * an ancestor process: the object that keeps it was inherited across fork(). */
int tri_fork_inherited(unsigned generation);

#endif
