/*
 * hist_type.c: _triple.Histogram, the C latency histogram (tri_hist) for
 * Python, so that histograms exported by run_load in several processes can
 * be rebuilt and added bucket by bucket (tri_hist_add) exactly as the load
 * generator merges its threads' histograms.
 *
 * Ownership: a Histogram owns its tri_hist (tri_hist_del on dealloc).
 * Rebuilding from run_load's (value_ns, count) pairs restores every bucket
 * (the exported value is the bucket's highest equivalent value); the exact
 * min, max and mean of the original are not in the pairs, so callers that
 * need them combine the original figures themselves.
 */
#include "binding.h"

#include "../tri_hist.h"

typedef struct {
  PyObject_HEAD
  tri_hist *h;
} HistogramObject;

static int hist_init(HistogramObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"digits", NULL};
  int digits = TRI_HIST_DEFAULT_DIGITS;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|i:Histogram", kw, &digits))
    return -1;
  if (digits < 1 || digits > TRI_HIST_MAX_DIGITS) {
    PyErr_Format(PyExc_ValueError, "Histogram: digits must be 1..%d, not %d",
                 TRI_HIST_MAX_DIGITS, digits);
    return -1;
  }
  tri_hist *h;
  int rv = tri_hist_new(&h, digits);
  if (rv) {
    PyErr_Format(PyExc_MemoryError, "Histogram: %s", tri_strerror(rv));
    return -1;
  }
  tri_hist_del(self->h); /* __init__ called again */
  self->h = h;
  return 0;
}

static void hist_dealloc(HistogramObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  tri_hist_del(self->h);
  tp->tp_free((PyObject *)self);
  Py_DECREF(tp);
}

static int ready(HistogramObject *self) {
  if (self->h) return 1;
  PyErr_SetString(PyExc_RuntimeError, "Histogram.__init__ was not called");
  return 0;
}

/* record(value_ns, n=1) */
static PyObject *hist_record(HistogramObject *self, PyObject *args) {
  long long value;
  unsigned long long n = 1;
  if (!ready(self) || !PyArg_ParseTuple(args, "L|K:record", &value, &n)) return NULL;
  tri_hist_record_n(self->h, (int64_t)value, (uint64_t)n);
  Py_RETURN_NONE;
}

/* record_pairs([(value_ns, count), ...]): run_load's export format. */
static PyObject *hist_record_pairs(HistogramObject *self, PyObject *pairs) {
  if (!ready(self)) return NULL;
  PyObject *it = PyObject_GetIter(pairs);
  if (!it) return NULL;
  PyObject *item;
  while ((item = PyIter_Next(it))) {
    long long value;
    unsigned long long n;
    int ok = PyArg_ParseTuple(item, "LK:record_pairs", &value, &n);
    Py_DECREF(item);
    if (!ok) {
      Py_DECREF(it);
      return NULL;
    }
    tri_hist_record_n(self->h, (int64_t)value, (uint64_t)n);
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) return NULL;
  Py_RETURN_NONE;
}

/* add(other): every value of other into self, bucket by bucket. */
static PyObject *hist_add(HistogramObject *self, PyObject *other) {
  if (!ready(self)) return NULL;
  if (Py_TYPE(other) != Py_TYPE(self)) {
    PyErr_Format(PyExc_TypeError, "Histogram.add: expected a Histogram, not %.100s",
                 Py_TYPE(other)->tp_name);
    return NULL;
  }
  HistogramObject *o = (HistogramObject *)other;
  if (!ready(o)) return NULL;
  if (tri_hist_add(self->h, o->h)) {
    PyErr_SetString(PyExc_ValueError, "Histogram.add: cannot add a histogram to itself");
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *hist_percentile(HistogramObject *self, PyObject *arg) {
  double p = PyFloat_AsDouble(arg);
  if (!ready(self) || (p == -1.0 && PyErr_Occurred())) return NULL;
  if (!(p >= 0 && p <= 100)) {
    PyErr_SetString(PyExc_ValueError, "Histogram.percentile: p must be 0..100");
    return NULL;
  }
  return PyLong_FromLongLong((long long)tri_hist_percentile(self->h, p));
}

static PyObject *hist_pairs_method(HistogramObject *self, PyObject *unused) {
  (void)unused;
  return ready(self) ? tri_py_hist_pairs(self->h) : NULL;
}

static PyObject *get_count(HistogramObject *self, void *c) {
  (void)c;
  return ready(self) ? PyLong_FromUnsignedLongLong(tri_hist_count(self->h)) : NULL;
}

static PyObject *get_min(HistogramObject *self, void *c) {
  (void)c;
  return ready(self) ? PyLong_FromLongLong(tri_hist_min(self->h)) : NULL;
}

static PyObject *get_max(HistogramObject *self, void *c) {
  (void)c;
  return ready(self) ? PyLong_FromLongLong(tri_hist_max(self->h)) : NULL;
}

static PyObject *get_mean(HistogramObject *self, void *c) {
  (void)c;
  return ready(self) ? PyFloat_FromDouble(tri_hist_mean(self->h)) : NULL;
}

static PyObject *get_digits(HistogramObject *self, void *c) {
  (void)c;
  return ready(self) ? PyLong_FromLong(tri_hist_sig_digits(self->h)) : NULL;
}

static PyMethodDef hist_methods[] = {
    {"record", (PyCFunction)hist_record, METH_VARARGS,
     "record(value_ns, n=1): records a value n times (clamped to 1 us..100 s)."},
    {"record_pairs", (PyCFunction)hist_record_pairs, METH_O,
     "record_pairs(pairs): records [(value_ns, count), ...], run_load's export."},
    {"add", (PyCFunction)hist_add, METH_O,
     "add(other): adds other's values into this histogram, bucket by bucket."},
    {"percentile", (PyCFunction)hist_percentile, METH_O,
     "percentile(p) -> int: the value at percentile p (0..100), in ns."},
    {"pairs", (PyCFunction)hist_pairs_method, METH_NOARGS,
     "pairs() -> [(value_ns, count), ...] over the non-empty buckets."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef hist_getset[] = {
    {"count", (getter)get_count, NULL, "values recorded", NULL},
    {"min", (getter)get_min, NULL, "smallest value recorded (ns)", NULL},
    {"max", (getter)get_max, NULL, "largest value recorded (ns)", NULL},
    {"mean", (getter)get_mean, NULL, "mean of the values recorded (ns)", NULL},
    {"digits", (getter)get_digits, NULL, "significant digits", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot hist_slots[] = {
    {Py_tp_init, hist_init},
    {Py_tp_dealloc, hist_dealloc},
    {Py_tp_methods, hist_methods},
    {Py_tp_getset, hist_getset},
    {Py_tp_doc,
     "Histogram(digits=3): the C core's HDR latency histogram (ns), the one "
     "run_load fills; add() merges two bucket by bucket."},
    {0, NULL}};

static PyType_Spec hist_spec = {
    .name = "triple_py._triple.Histogram",
    .basicsize = sizeof(HistogramObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = hist_slots,
};

int tri_hist_type_init(PyObject *module, tri_module_state *st) {
  return tri_add_type(module, &hist_spec, &st->hist_type, "Histogram");
}
