/*
 * tri_sched: ghz's load schedules, as a function of the time since the
 * measured part of a run began.  One shape serves both the open-loop rate
 * (--load-schedule, calls/s) and the number of calls in flight
 * (--concurrency-schedule):
 *
 *  - CONST: `start` all along.
 *  - STEP:  start + step * floor(t / step_s): a staircase.
 *  - LINE:  start + step * t (step per second): a ramp.
 *
 * `step` may be negative (a ramp down).  With `end` > 0 the value stops at
 * `end` (it never goes past it, up or down); with max_s > 0 the schedule
 * stops changing after max_s seconds and holds its value.  Before t = 0 (the
 * warm-up) the value is `start`.  A value is never below the caller's
 * min_value, the smallest meaningful value of its use (a rate > 0, one call
 * in flight).
 *
 * No allocation, no state: a plain value type, copied freely.
 */
#ifndef TRI_SCHED_H
#define TRI_SCHED_H

typedef enum { TRI_SCHED_CONST = 0, TRI_SCHED_STEP = 1, TRI_SCHED_LINE = 2 } tri_sched_kind;

typedef struct tri_sched {
  int kind;      /* tri_sched_kind */
  double start;  /* value at t <= 0 */
  double step;   /* STEP: change per step; LINE: change per second */
  double end;    /* > 0: the value never passes it; 0: no end */
  double step_s; /* STEP: seconds per step (> 0) */
  double max_s;  /* > 0: the value holds from then on; 0: no limit */
} tri_sched;

/* NULL when `s` is usable, else a static description of its first bad
 * field: an unknown kind, start <= 0, a STEP without step_s > 0, a
 * non-finite number, end or max_s < 0. */
const char *tri_sched_problem(const tri_sched *s);

/* The value at t_s seconds (t_s <= 0: start), never below `min_value`. */
double tri_sched_at(const tri_sched *s, double t_s, double min_value);

#endif
