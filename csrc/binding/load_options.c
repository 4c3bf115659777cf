/*
 * load_options.c: the table of run_load's own keywords.
 *
 * Every keyword of _triple.run_load that is not a channel option has one row
 * here: its name, how its value converts, where it goes (a field of
 * tri_load_config, or an object run_load keeps for later), whether it is
 * required, its unit and a one-line description.  What reads the table:
 *   - run_load parses its keywords by walking it (tri_py_load_options_parse;
 *     the other keywords go to the channel options' walker, options.c);
 *   - it is exported as _triple.LOAD_OPTIONS, from which the Python side
 *     validates a load's settings and builds its flags, axes and docs.
 * A row's range is the load generator's own (tri_load_limits, by the row's
 * name), else its C field's; its default is what tri_load_config_init writes.
 *
 * Adding a load knob: the field in tri_load_config (its default in
 * tri_load_config_init when it is not 0, its range in tri_load_limits when it
 * has one) and one row in load_options[] below.
 */
#include "binding.h"

#include <float.h>
#include <math.h>

#include "../tri_load.h"
#include "../tri_options.h"

typedef enum {
  LOAD_INT,      /* int field */
  LOAD_BOOL,     /* int field, 0 or 1: a bool (or the int 0 or 1) */
  LOAD_FLOAT,    /* double field: an int or a float */
  LOAD_I64,      /* int64_t field */
  LOAD_U64,      /* uint64_t field (checked up to INT64_MAX) */
  LOAD_SIZE,     /* size_t field (checked up to PY_SSIZE_T_MAX) */
  LOAD_PATH,     /* const char * field: a str (borrowed from the keyword
                    dict) or None */
  LOAD_MODE,     /* int field: one of mode_names, or its tri_load_mode */
  LOAD_SCHEDULE, /* tri_sched field: None or (kind, start, ..., max_s) */
  LOAD_LIST,     /* a list or tuple (or None) kept in objs[]; its range
                    counts entries */
  LOAD_CALLABLE, /* a callable (or None) kept in objs[] */
} load_kind;

typedef struct {
  const char *name; /* run_load keyword */
  load_kind kind;
  const char *type; /* LOAD_LIST: what LOAD_OPTIONS calls its type */
  size_t at;        /* offset in tri_load_config; LOAD_LIST, LOAD_CALLABLE:
                       the TRI_PY_LOAD_OBJ_* slot */
  int required;
  const char *unit; /* "" when none */
  const char *doc;  /* one line */
} load_option;

/* clang-format off */
#define FIELD(kind, name, field, required, unit, doc) \
  {name, kind, NULL, offsetof(tri_load_config, field), required, unit, doc}
#define OBJECT(kind, type, name, slot, unit, doc) {name, kind, type, slot, 0, unit, doc}

static const load_option load_options[] = {
    FIELD(LOAD_PATH, "path", path, 1, "",
          "method path; None: BenchmarkService UnaryCall (StreamCall in bidi)"),
    FIELD(LOAD_MODE, "mode", mode, 1, "",
          "unary (the fast path), unary_stream_path (the same call through the "
          "streaming machinery) or bidi (streams of stream_messages each way)"),
    FIELD(LOAD_SIZE, "payload_size", payload_size, 1, "bytes",
          "BenchmarkRequest payload (ignored with requests)"),
    FIELD(LOAD_INT, "concurrency", concurrency, 1, "calls",
          "calls (streams) in flight on each connection"),
    FIELD(LOAD_INT, "connections", connections, 1, "",
          "channels, each one connection driven by one thread"),
    FIELD(LOAD_FLOAT, "duration", duration_s, 1, "s",
          "measured seconds after the warm-up; 0: until count calls"),
    FIELD(LOAD_FLOAT, "warmup", warmup_s, 1, "s",
          "seconds of calls before the measured part, with figures of their own"),
    FIELD(LOAD_U64, "count", count, 0, "calls",
          "measured calls in total; 0: no cap (duration ends the run)"),
    FIELD(LOAD_FLOAT, "rate", rate, 0, "calls/s",
          "open loop: calls per second over all connections; 0: closed loop"),
    FIELD(LOAD_INT, "stream_messages", stream_messages, 0, "messages",
          "bidi: messages each way per stream"),
    FIELD(LOAD_FLOAT, "timeout", timeout_s, 0, "s",
          "deadline of each call; 0: none"),
    FIELD(LOAD_BOOL, "shared_request", shared_request, 0, "",
          "one packed request lent to every call; False packs each anew"),
    FIELD(LOAD_BOOL, "verify", verify, 0, "",
          "every response must be its request's bytes (an echo server): "
          "kept and compared; other bytes count as errors (mismatches)"),
    FIELD(LOAD_INT, "hist_digits", hist_digits, 0, "digits",
          "significant digits of the latency histograms; 0: 3"),
    FIELD(LOAD_INT, "series_digits", series_digits, 0, "digits",
          "significant digits of the one-second p99 series"),
    FIELD(LOAD_BOOL, "driver_threads", driver_threads, 0, "",
          "closed-loop unary runs driven from threads of their own, not from "
          "the connections' I/O threads"),
    FIELD(LOAD_I64, "start_at_ns", start_at_ns, 0, "ns",
          "time.monotonic_ns() at which the warm-up starts once every "
          "connection is open; 0: at once"),
    FIELD(LOAD_I64, "phase_ns", phase_ns, 0, "ns",
          "open loop: every intended send shifted by this (loads split over "
          "processes)"),
    OBJECT(LOAD_LIST, "requests", "requests", TRI_PY_LOAD_OBJ_REQUESTS, "entries",
           "ring of pre-encoded requests [(body, [(key, value), ...]), ...]: "
           "call i sends entry i mod len"),
    FIELD(LOAD_SCHEDULE, "rate_schedule", rate_schedule, 0, "calls/s",
          "(kind, start, step, end, step_s, max_s), kind 0 const, 1 step, "
          "2 line: the open-loop rate over time"),
    FIELD(LOAD_SCHEDULE, "concurrency_schedule", concurrency_schedule, 0, "calls",
          "(kind, start, step, end, step_s, max_s): the calls in flight over "
          "all connections over time"),
    OBJECT(LOAD_LIST, "endpoints", "endpoints", TRI_PY_LOAD_OBJ_ENDPOINTS, "entries",
           "[(host, port, address_kind), ...]: connection i dials endpoint "
           "i mod len"),
    OBJECT(LOAD_CALLABLE, "callable", "stop", TRI_PY_LOAD_OBJ_STOP, "",
           "asked every 50 ms; a true answer ends the run with its figures "
           "so far (interrupted=1)"),
};
/* clang-format on */

#define NLOAD_OPTIONS (sizeof(load_options) / sizeof(load_options[0]))

/* Mode names; the first of each mode is its name in LOAD_OPTIONS and in the
 * result, the others are accepted too. */
static const struct {
  const char *name;
  int mode;
} mode_names[] = {{"unary", TRI_LOAD_UNARY},
                  {"unary_stream_path", TRI_LOAD_UNARY_STREAM_PATH},
                  {"bidi", TRI_LOAD_BIDI},
                  {"fastpath", TRI_LOAD_UNARY},
                  {"stream_path", TRI_LOAD_UNARY_STREAM_PATH}};
#define NMODES 3 /* the canonical names: mode_names[0 .. NMODES) */

const char *tri_py_load_mode_name(int mode) {
  for (int i = 0; i < NMODES; i++)
    if (mode_names[i].mode == mode) return mode_names[i].name;
  return "?";
}

static const char *type_name(const load_option *row) {
  switch (row->kind) {
    case LOAD_BOOL: return "bool";
    case LOAD_FLOAT: return "float";
    case LOAD_PATH: return "str";
    case LOAD_MODE: return "choice";
    case LOAD_SCHEDULE: return "schedule";
    case LOAD_LIST:
    case LOAD_CALLABLE: return row->type;
    default: return "int";
  }
}

/* The range of an integer row: the load generator's limit for its name
 * (tri_load_limits) within its C type's range.  0, or -1 for rows without
 * one (bool, path, schedule, callable). */
static int int_range(const load_option *row, long long *lo, long long *hi) {
  switch (row->kind) {
    case LOAD_INT:
    case LOAD_MODE: *lo = INT_MIN, *hi = INT_MAX; break;
    case LOAD_I64: *lo = LLONG_MIN, *hi = LLONG_MAX; break;
    case LOAD_U64: *lo = 0, *hi = LLONG_MAX; break;
    case LOAD_SIZE:
    case LOAD_LIST: *lo = 0, *hi = PY_SSIZE_T_MAX; break;
    default: return -1;
  }
  if (row->kind == LOAD_MODE) {
    *lo = TRI_LOAD_UNARY, *hi = TRI_LOAD_BIDI;
    return 0;
  }
  size_t n;
  const tri_load_limit *l = tri_load_limits(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].name, row->name) == 0) {
      if (l[i].min > (double)*lo) *lo = (long long)l[i].min;
      if (l[i].max < (double)*hi) *hi = (long long)l[i].max;
    }
  return 0;
}

/* A float row's range: its limit, else any finite number. */
static void float_range(const load_option *row, double *lo, double *hi) {
  *lo = -DBL_MAX, *hi = DBL_MAX;
  size_t n;
  const tri_load_limit *l = tri_load_limits(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(l[i].name, row->name) == 0) *lo = l[i].min, *hi = l[i].max;
}

static int out_of_range_int(const load_option *row, PyObject *v, long long lo,
                            long long hi) {
  PyErr_Format(PyExc_ValueError,
               "run_load() argument '%s' must be in [%lld, %lld], not %R",
               row->name, lo, hi, v);
  return -1;
}

static int wrong_type(const load_option *row, const char *what, PyObject *v) {
  PyErr_Format(PyExc_TypeError,
               "run_load() argument '%s' must be %s, not %.100s", row->name,
               what, Py_TYPE(v)->tp_name);
  return -1;
}

static int set_int(void *f, const load_option *row, PyObject *v) {
  if (!PyLong_Check(v)) return wrong_type(row, "an int", v);
  long long lo, hi;
  int_range(row, &lo, &hi);
  int overflow;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (x == -1 && PyErr_Occurred()) return -1;
  if (overflow || x < lo || x > hi) return out_of_range_int(row, v, lo, hi);
  switch (row->kind) {
    case LOAD_I64: *(int64_t *)f = x; break;
    case LOAD_U64: *(uint64_t *)f = (uint64_t)x; break;
    case LOAD_SIZE: *(size_t *)f = (size_t)x; break;
    default: *(int *)f = (int)x;
  }
  return 0;
}

static int set_float(double *f, const load_option *row, PyObject *v) {
  if (!PyFloat_Check(v) && !PyLong_Check(v))
    return wrong_type(row, "a number", v);
  double x = PyFloat_AsDouble(v), lo, hi;
  if (x == -1.0 && PyErr_Occurred()) return -1;
  float_range(row, &lo, &hi);
  if (x >= lo && x <= hi) return *f = x, 0; /* NaN fails both */
  char range[64];
  snprintf(range, sizeof(range), "[%g, %g]", lo, hi);
  PyErr_Format(PyExc_ValueError,
               "run_load() argument '%s' must be in %s, not %R", row->name,
               range, v);
  return -1;
}

static int set_bool(int *f, const load_option *row, PyObject *v) {
  int overflow;
  long x = PyLong_Check(v) ? PyLong_AsLongAndOverflow(v, &overflow) : -1;
  if (x != 0 && x != 1) {
    PyErr_Clear();
    return wrong_type(row, "a bool", v);
  }
  *f = (int)x;
  return 0;
}

static int set_mode(int *f, const load_option *row, PyObject *v) {
  if (PyLong_Check(v)) return set_int(f, row, v);
  const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
  if (!s) return PyErr_Occurred() ? -1 : wrong_type(row, "a str", v);
  for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
    if (strcmp(s, mode_names[i].name) == 0) return *f = mode_names[i].mode, 0;
  PyErr_Format(PyExc_ValueError,
               "run_load() argument '%s' must be 'unary', 'unary_stream_path' "
               "or 'bidi', not %R",
               row->name, v);
  return -1;
}

static int set_path(const char **f, const load_option *row, PyObject *v) {
  if (v == Py_None) return *f = NULL, 0;
  if (!PyUnicode_Check(v)) return wrong_type(row, "a str or None", v);
  *f = PyUnicode_AsUTF8(v);
  return *f ? 0 : -1;
}

static int set_schedule(tri_sched *s, const load_option *row, PyObject *v) {
  if (v == Py_None) return 0;
  if (!PyTuple_Check(v) ||
      !PyArg_ParseTuple(v, "iddddd", &s->kind, &s->start, &s->step, &s->end,
                        &s->step_s, &s->max_s)) {
    PyErr_Clear();
    return wrong_type(row, "(kind, start, step, end, step_s, max_s) or None", v);
  }
  const char *problem = tri_sched_problem(s);
  if (!problem) return 0;
  PyErr_Format(PyExc_ValueError, "run_load() argument '%s': %s", row->name,
               problem);
  return -1;
}

static int keep_list(PyObject **slot, const load_option *row, PyObject *v) {
  if (v == Py_None) return 0;
  if (!PyList_Check(v) && !PyTuple_Check(v))
    return wrong_type(row, "a list, a tuple or None", v);
  long long lo, hi;
  int_range(row, &lo, &hi);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
  if (n < lo || n > hi) {
    PyErr_Format(
        PyExc_ValueError,
        "run_load() argument '%s' must hold %lld..%lld entries, not %zd",
        row->name, lo, hi, n);
    return -1;
  }
  *slot = v;
  return 0;
}

/* Sets `row` from `v`: into its field of `cfg`, or objs[] for the rows kept
 * as objects.  0, or -1 with TypeError or ValueError naming the row. */
static int set_row(tri_load_config *cfg, PyObject **objs,
                   const load_option *row, PyObject *v) {
  void *f = (char *)cfg + row->at;
  switch (row->kind) {
    case LOAD_BOOL: return set_bool(f, row, v);
    case LOAD_FLOAT: return set_float(f, row, v);
    case LOAD_PATH: return set_path(f, row, v);
    case LOAD_MODE: return set_mode(f, row, v);
    case LOAD_SCHEDULE: return set_schedule(f, row, v);
    case LOAD_LIST: return keep_list(&objs[row->at], row, v);
    case LOAD_CALLABLE:
      if (v != Py_None && !PyCallable_Check(v))
        return wrong_type(row, "a callable or None", v);
      objs[row->at] = v == Py_None ? NULL : v;
      return 0;
    default: return set_int(f, row, v);
  }
}

int tri_py_load_options_parse(PyObject *kwargs, tri_load_config *cfg,
                              PyObject **objs, PyObject **channel_kw) {
  int seen[NLOAD_OPTIONS] = {0};
  *channel_kw = NULL;
  for (int i = 0; i < TRI_PY_LOAD_NOBJS; i++) objs[i] = NULL;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
    size_t i = 0;
    while (i < NLOAD_OPTIONS &&
           PyUnicode_CompareWithASCIIString(key, load_options[i].name))
      i++;
    if (i < NLOAD_OPTIONS) {
      seen[i] = 1;
      if (set_row(cfg, objs, &load_options[i], value) < 0) return -1;
      continue;
    }
    if (!*channel_kw && !(*channel_kw = PyDict_New())) return -1;
    if (PyDict_SetItem(*channel_kw, key, value) < 0) return -1;
  }
  for (size_t i = 0; i < NLOAD_OPTIONS; i++)
    if (load_options[i].required && !seen[i]) {
      PyErr_Format(PyExc_TypeError, "run_load() missing required argument '%s'",
                   load_options[i].name);
      return -1;
    }
  return 0;
}

/* A row's default in `cfg` (tri_load_config_init's), as Python sees it. */
static PyObject *default_of(const load_option *row, const tri_load_config *cfg) {
  const void *f = (const char *)cfg + row->at;
  switch (row->kind) {
    case LOAD_INT: return PyLong_FromLong(*(const int *)f);
    case LOAD_BOOL: return PyBool_FromLong(*(const int *)f);
    case LOAD_FLOAT: return PyFloat_FromDouble(*(const double *)f);
    case LOAD_I64: return PyLong_FromLongLong(*(const int64_t *)f);
    case LOAD_U64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)f);
    case LOAD_SIZE: return PyLong_FromSize_t(*(const size_t *)f);
    case LOAD_MODE:
      return PyUnicode_FromString(tri_py_load_mode_name(*(const int *)f));
    case LOAD_PATH:
      if (*(const char *const *)f)
        return PyUnicode_FromString(*(const char *const *)f);
      Py_RETURN_NONE;
    default: Py_RETURN_NONE; /* schedules off, no objects */
  }
}

/* (min, max) of a row as Python numbers, or (None, None). */
static int range_of(const load_option *row, PyObject **lo, PyObject **hi) {
  long long ilo, ihi;
  if (row->kind == LOAD_FLOAT) {
    double flo, fhi;
    float_range(row, &flo, &fhi);
    *lo = flo > -DBL_MAX ? PyFloat_FromDouble(flo) : Py_NewRef(Py_None);
    *hi = fhi < DBL_MAX ? PyFloat_FromDouble(fhi) : Py_NewRef(Py_None);
  } else if (int_range(row, &ilo, &ihi) == 0) {
    *lo = PyLong_FromLongLong(ilo);
    *hi = PyLong_FromLongLong(ihi);
  } else {
    *lo = Py_NewRef(Py_None);
    *hi = Py_NewRef(Py_None);
  }
  return *lo && *hi ? 0 : -1;
}

static PyObject *choices_of(const load_option *row) {
  if (row->kind != LOAD_MODE) return PyTuple_New(0);
  PyObject *t = PyTuple_New(NMODES);
  for (Py_ssize_t i = 0; t && i < NMODES; i++) {
    PyObject *s = PyUnicode_FromString(mode_names[i].name);
    if (!s) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, s);
  }
  return t;
}

/* (name, type, min, max, default, choices, required, unit, doc). */
static PyObject *row_tuple(const load_option *row, const tri_load_config *cfg) {
  PyObject *lo = NULL, *hi = NULL, *def = default_of(row, cfg);
  PyObject *choices = choices_of(row), *out = NULL;
  if (range_of(row, &lo, &hi) == 0 && def && choices)
    out = Py_BuildValue("(ssOOOONss)", row->name, type_name(row), lo, hi, def,
                        choices, PyBool_FromLong(row->required), row->unit,
                        row->doc);
  Py_XDECREF(lo);
  Py_XDECREF(hi);
  Py_XDECREF(def);
  Py_XDECREF(choices);
  return out;
}

PyObject *tri_py_load_options_table(void) {
  tri_load_config cfg;
  tri_load_config_init(&cfg);
  PyObject *t = PyTuple_New((Py_ssize_t)NLOAD_OPTIONS);
  for (size_t i = 0; t && i < NLOAD_OPTIONS; i++) {
    PyObject *row = row_tuple(&load_options[i], &cfg);
    if (!row) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, row);
  }
  return t;
}

PyObject *tri_py_load_limits(void) {
  size_t n;
  const tri_load_limit *l = tri_load_limits(&n);
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < n; i++) {
    PyObject *v = Py_BuildValue("(dd)", l[i].min, l[i].max);
    if (!v || PyDict_SetItemString(d, l[i].name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}
