#include "tri_sched.h"

#include <math.h>
#include <stddef.h>

const char *tri_sched_problem(const tri_sched *s) {
  if (s->kind < TRI_SCHED_CONST || s->kind > TRI_SCHED_LINE) return "unknown schedule";
  if (!isfinite(s->start) || !isfinite(s->step) || !isfinite(s->end) ||
      !isfinite(s->step_s) || !isfinite(s->max_s))
    return "schedule numbers must be finite";
  if (!(s->start > 0)) return "schedule start must be > 0";
  if (s->end < 0) return "schedule end must be >= 0";
  if (s->max_s < 0) return "schedule max duration must be >= 0";
  if (s->kind == TRI_SCHED_STEP && !(s->step_s > 0))
    return "step schedule needs a step duration > 0";
  return NULL;
}

static double floor_div(double a, double b) { return floor(a / b); }

double tri_sched_at(const tri_sched *s, double t_s, double min_value) {
  double v = s->start;
  if (t_s > 0 && s->kind != TRI_SCHED_CONST) {
    if (s->max_s > 0 && t_s > s->max_s) t_s = s->max_s;
    v = s->kind == TRI_SCHED_STEP ? s->start + s->step * floor_div(t_s, s->step_s)
                                  : s->start + s->step * t_s;
    if (s->end > 0 && ((s->step > 0 && v > s->end) || (s->step < 0 && v < s->end)))
      v = s->end;
  }
  return v < min_value ? min_value : v;
}
