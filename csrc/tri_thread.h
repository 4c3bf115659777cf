/*
 * tri_thread: starting the core's own threads (I/O threads, load drivers,
 * server workers) so that they never receive asynchronous signals.
 *
 * A process-directed signal (SIGINT from Ctrl-C, SIGTERM) goes to any thread
 * that does not block it.  Python runs its handlers on the main thread only
 * and relies on the signal interrupting the main thread's wait; delivered to
 * one of our threads instead, a Ctrl-C would go unnoticed until the main
 * thread woke for another reason.  So every thread the core starts blocks all
 * signals except the synchronous ones (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGTRAP, SIGABRT, SIGSYS), from its first instruction: the mask is set
 * around pthread_create and inherited, with no window.
 *
 * Each thread also gets a short name (what `top -H`, `ps -L`, gdb and
 * /proc/<pid>/task/<tid>/comm show), so a user can tell the core's threads
 * from the application's: "tri-io" for connection I/O, "tri-load" for load
 * workers, "tri-srv" and "tri-srv-accept" for the embedded server.
 */
#ifndef TRI_THREAD_H
#define TRI_THREAD_H

#include <pthread.h>

/* pthread_create with asynchronous signals blocked in the new thread, named
 * `name` (at most 15 bytes; borrowed only during the call) by the time this
 * returns; the caller's mask is unchanged on return.  The thread's first
 * instructions may run before it is named (naming it from inside, through a
 * heap-allocated trampoline, would leak that block into a child forked
 * before the thread ran).  Returns pthread_create's result.  A name the
 * system refuses leaves the thread unnamed, not failed. */
int tri_thread_create(pthread_t *thread, const char *name,
                      void *(*fn)(void *), void *arg);

#endif
