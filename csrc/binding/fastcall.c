/*
 * fastcall.c: keyword arguments of METH_FASTCALL | METH_KEYWORDS methods.
 *
 * The hot methods (Channel.call) take their arguments as a vector plus a
 * tuple of keyword names, with no argument tuple or keyword dict built per
 * call; this matches those names against the method's parameter names.
 */
#include "binding.h"

/* 1 when the str `key` spells `kw`: compact ASCII keywords (every literal
 * keyword in Python source) are compared by length, then bytes. */
static int key_is(PyObject *key, const tri_py_kw *kw) {
  if (PyUnicode_IS_COMPACT_ASCII(key))
    return PyUnicode_GET_LENGTH(key) == kw->len &&
           memcmp(PyUnicode_DATA(key), kw->name, (size_t)kw->len) == 0;
  return PyUnicode_CompareWithASCIIString(key, kw->name) == 0;
}

int tri_py_fastcall_args(const char *fn, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, const tri_py_kw *names, int n,
                         int positional, int required, PyObject **out) {
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (nargs > positional) {
    PyErr_Format(
        PyExc_TypeError,
        "%s() takes at most %d positional arguments (%zd given); pass the "
        "others by keyword",
        fn, positional, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    int i = 0;
    while (i < n && !key_is(key, &names[i])) i++;
    if (i == n) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got an unexpected keyword argument '%S'", fn, key);
      return -1;
    }
    if (out[i]) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                   fn, names[i].name);
      return -1;
    }
    out[i] = args[nargs + k];
  }
  for (int i = 0; i < required; i++)
    if (!out[i]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn,
                   names[i].name);
      return -1;
    }
  return 0;
}

int tri_py_int_arg(PyObject *o, int dflt, int *out) {
  if (!o) {
    *out = dflt;
    return 0;
  }
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError,
                    "signed integer is greater than maximum");
    return -1;
  }
  *out = (int)v;
  return 0;
}
