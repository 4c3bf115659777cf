/*
 * options.c: the table of channel options (tri_options.h) for Python.
 *
 * _triple.Channel's keyword arguments, and run_load's channel options, are
 * parsed by walking the table (no format string to keep in step with it), and
 * the table itself is exported as _triple.CHANNEL_OPTIONS for
 * triple_py/_options.py, the bench harness and the docs.
 */
#include "binding.h"

#include "../tri_options.h"

/* Sets one integer-typed row from `v`: TypeError unless an int (or, for a
 * CHOICE, one of its names), ValueError outside the row's range. */
static int set_number(tri_channel_opts *o, const tri_option *opt, PyObject *v) {
  if (opt->type == TRI_OPT_BOOL) {
    int b = PyObject_IsTrue(v);
    return b < 0 ? -1 : (tri_option_set_int(o, opt, b), 0);
  }
  if (opt->type == TRI_OPT_CHOICE && PyUnicode_Check(v)) {
    const char *s = PyUnicode_AsUTF8(v);
    int i = s ? tri_option_choice(opt, s) : -1;
    if (i >= 0) return tri_option_set_int(o, opt, i), 0;
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_ValueError, "channel option %s: unknown value %R",
                   opt->name, v);
    return -1;
  }
  if (!PyLong_Check(v)) {
    PyErr_Format(PyExc_TypeError, "channel option %s must be an int, not %.100s",
                 opt->name, Py_TYPE(v)->tp_name);
    return -1;
  }
  int overflow;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (x == -1 && PyErr_Occurred()) return -1;
  if (overflow) x = overflow > 0 ? LLONG_MAX : LLONG_MIN;
  if (tri_option_set_int(o, opt, x) == 0) return 0;
  PyErr_Format(PyExc_ValueError,
               "channel option %s must be in [%lld, %lld], not %R", opt->name,
               (long long)opt->min, (long long)opt->max, v);
  return -1;
}

/* Sets one STR or PEM row from `v` (str; bytes-like for PEM).  A str's UTF-8
 * belongs to `v`, which the caller's keyword dict keeps alive; a PEM view is
 * kept in `pems` until tri_py_release_pems. */
static int set_text(tri_channel_opts *o, const tri_option *opt, PyObject *v,
                    tri_py_pems *pems) {
  if (opt->type == TRI_OPT_STR) {
    const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError,
                     "channel option %s must be a str, not %.100s", opt->name,
                     Py_TYPE(v)->tp_name);
      return -1;
    }
    return tri_option_set_str(o, opt, s, strlen(s)), 0;
  }
  if (pems->n == TRI_PY_MAX_PEMS) {
    PyErr_SetString(PyExc_RuntimeError, "too many PEM options for tri_py_pems");
    return -1;
  }
  Py_buffer *view = &pems->views[pems->n];
  if (PyObject_GetBuffer(v, view, PyBUF_SIMPLE) < 0) return -1;
  pems->n++;
  return tri_option_set_str(o, opt, view->buf, (size_t)view->len), 0;
}

int tri_py_set_channel_options(const char *fn, tri_channel_opts *o,
                               PyObject *kw, tri_py_pems *pems) {
  if (!kw) return 0;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kw, &pos, &key, &value)) {
    Py_ssize_t len;
    const char *name =
        PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &len) : NULL;
    if (!name)
      return -1; /* keywords are str: only a failed encoding gets here */
    const tri_option *opt = tri_channel_option_find(name, (size_t)len);
    if (!opt) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got an unexpected keyword argument '%s'", fn, name);
      return -1;
    }
    if (value == Py_None) continue; /* None: the default */
    int rv = opt->type == TRI_OPT_STR || opt->type == TRI_OPT_PEM
                 ? set_text(o, opt, value, pems)
                 : set_number(o, opt, value);
    if (rv < 0) return -1;
  }
  return 0;
}

void tri_py_release_pems(tri_py_pems *pems) {
  for (int i = 0; i < pems->n; i++) PyBuffer_Release(&pems->views[i]);
  pems->n = 0;
}

/* A row's range as Python ints, or None for the types without one. */
static PyObject *range_end(const tri_option *opt, int64_t v) {
  switch (opt->type) {
    case TRI_OPT_INT:
    case TRI_OPT_LIMIT:
    case TRI_OPT_MS:
    case TRI_OPT_COUNT: return PyLong_FromLongLong(v);
    default: Py_RETURN_NONE;
  }
}

static PyObject *default_of(const tri_option *opt) {
  switch (opt->type) {
    case TRI_OPT_BOOL: return PyBool_FromLong((long)opt->def);
    case TRI_OPT_CHOICE: return PyUnicode_FromString(opt->choices[opt->def]);
    case TRI_OPT_STR:
      if (opt->def_str) return PyUnicode_FromString(opt->def_str);
      Py_RETURN_NONE;
    case TRI_OPT_PEM: Py_RETURN_NONE;
    default: return PyLong_FromLongLong(opt->def);
  }
}

static PyObject *choices_of(const tri_option *opt) {
  Py_ssize_t n = 0;
  while (opt->type == TRI_OPT_CHOICE && opt->choices[n]) n++;
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject *s = PyUnicode_FromString(opt->choices[i]);
    if (!s) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, s);
  }
  return t;
}

/* (key, name, type, min, max, default, choices, from_credentials). */
static PyObject *row_tuple(const tri_option *opt) {
  PyObject *key = opt->key ? PyUnicode_FromString(opt->key) : Py_NewRef(Py_None);
  PyObject *lo = range_end(opt, opt->min), *hi = range_end(opt, opt->max);
  PyObject *def = default_of(opt), *choices = choices_of(opt);
  PyObject *row = NULL;
  if (key && lo && hi && def && choices)
    row = Py_BuildValue("(OssOOOON)", key, opt->name,
                        tri_option_type_name(opt->type), lo, hi, def, choices,
                        PyBool_FromLong(opt->flags & TRI_OPT_FROM_CREDENTIALS));
  Py_XDECREF(key);
  Py_XDECREF(lo);
  Py_XDECREF(hi);
  Py_XDECREF(def);
  Py_XDECREF(choices);
  return row;
}

PyObject *tri_py_channel_options_table(void) {
  Py_ssize_t n = (Py_ssize_t)tri_channel_option_count();
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject *row = row_tuple(&tri_channel_options[i]);
    if (!row) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, row);
  }
  return t;
}
