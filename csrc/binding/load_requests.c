/*
 * load_requests.c: run_load's `requests` argument as a tri_ring_entry array.
 *
 * requests: a list or tuple of (body: bytes, metadata) pairs, metadata a
 * list or tuple of (key: bytes, value: bytes) pairs.  The entries point into
 * the bytes objects, which the caller's `requests` keeps alive: the arrays
 * are only used by tri_load_new (which copies them into its ring) and freed
 * right after with tri_py_free_requests.
 */
#include "binding.h"

#include "../tri_ring.h"

static int bytes_of(PyObject *o, const char **p, size_t *n, const char *what) {
  if (!PyBytes_Check(o)) {
    PyErr_Format(PyExc_TypeError, "run_load: requests: %s must be bytes, not %.100s",
                 what, Py_TYPE(o)->tp_name);
    return -1;
  }
  *p = PyBytes_AS_STRING(o);
  *n = (size_t)PyBytes_GET_SIZE(o);
  return 0;
}

static int pair_of(PyObject *o, PyObject **a, PyObject **b, const char *what) {
  if (!(PyTuple_Check(o) || PyList_Check(o)) || PySequence_Fast_GET_SIZE(o) != 2) {
    PyErr_Format(PyExc_TypeError, "run_load: requests: %s must be a pair", what);
    return -1;
  }
  *a = PySequence_Fast_GET_ITEM(o, 0);
  *b = PySequence_Fast_GET_ITEM(o, 1);
  return 0;
}

int tri_py_requests(PyObject *requests, tri_ring_entry **entries, size_t *n) {
  *entries = NULL;
  *n = 0;
  if (!(PyTuple_Check(requests) || PyList_Check(requests))) {
    PyErr_SetString(PyExc_TypeError, "run_load: requests must be a list or tuple");
    return -1;
  }
  Py_ssize_t count = PySequence_Fast_GET_SIZE(requests), mds = 0;
  if (count < 1 || (size_t)count > TRI_RING_MAX_ENTRIES) {
    PyErr_Format(PyExc_ValueError, "run_load: requests must hold 1..%u entries",
                 TRI_RING_MAX_ENTRIES);
    return -1;
  }
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *body, *md;
    if (pair_of(PySequence_Fast_GET_ITEM(requests, i), &body, &md, "an entry") < 0)
      return -1;
    if (!(PyTuple_Check(md) || PyList_Check(md))) {
      PyErr_SetString(PyExc_TypeError, "run_load: requests: metadata must be a list or tuple");
      return -1;
    }
    if (PySequence_Fast_GET_SIZE(md) > TRI_RING_MAX_MD) {
      PyErr_Format(PyExc_ValueError, "run_load: requests: at most %d metadata pairs",
                   TRI_RING_MAX_MD);
      return -1;
    }
    mds += PySequence_Fast_GET_SIZE(md);
  }
  /* One block: the entries, then every metadata array. */
  tri_ring_entry *e = PyMem_Calloc((size_t)count * sizeof(tri_ring_entry) +
                                       (size_t)mds * sizeof(tri_ring_md) + 1, 1);
  if (!e) {
    PyErr_NoMemory();
    return -1;
  }
  tri_ring_md *md_next = (tri_ring_md *)(e + count);
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *body, *md;
    pair_of(PySequence_Fast_GET_ITEM(requests, i), &body, &md, "an entry");
    const char *p;
    if (bytes_of(body, &p, &e[i].len, "a body") < 0) goto fail;
    e[i].body = (const uint8_t *)p;
    e[i].nmd = (size_t)PySequence_Fast_GET_SIZE(md);
    e[i].md = e[i].nmd ? md_next : NULL;
    for (size_t j = 0; j < e[i].nmd; j++, md_next++) {
      PyObject *k, *v;
      if (pair_of(PySequence_Fast_GET_ITEM(md, (Py_ssize_t)j), &k, &v, "a metadata pair") < 0 ||
          bytes_of(k, &md_next->key, &md_next->key_len, "a metadata key") < 0 ||
          bytes_of(v, &md_next->value, &md_next->value_len, "a metadata value") < 0)
        goto fail;
    }
  }
  *entries = e;
  *n = (size_t)count;
  return 0;
fail:
  PyMem_Free(e);
  return -1;
}

void tri_py_free_requests(tri_ring_entry *entries) { PyMem_Free(entries); }
