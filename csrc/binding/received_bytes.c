/*
 * received_bytes.c: _triple.ReceivedBytes, a bytes object whose storage is
 * the core's receive buffer of one large response message.
 *
 * The I/O thread copies a message out of the socket's read buffer once, into
 * a buffer of its own (TRI_CALL_OWNABLE_RESPONSES, tri_call.h).  Turning that
 * into a plain `bytes` would copy it a second time (a megabyte costs tens of
 * microseconds, cache-cold), so the binding writes a bytes object header into
 * the buffer's headroom instead, right in front of the message, and the
 * message becomes the object's content where it lies:
 *
 *   tri_buf header | ... | owner (tri_buf *) | PyBytesObject header | message | NUL
 *                                            ^ the object             ^ ob_sval
 *
 * The object is an instance of a subclass of bytes (isinstance(x, bytes),
 * every bytes method and the buffer protocol work; `type(x) is bytes` does
 * not hold) because its memory is not the allocator's that `bytes` frees
 * with: its own dealloc gives the whole buffer back with tri_buf_free.  It
 * cannot be created from Python; pickling and copying give a plain bytes.
 * tracemalloc sees the buffer in its own domain (TRI_TRACE_DOMAIN).
 *
 * Ownership: the object owns the tri_buf (taken over from the call, which no
 * longer frees it) and a reference to its type; both go at dealloc.
 */
#include <stdalign.h>
#include <stddef.h>

#include "binding.h"

#define TRI_TRACE_DOMAIN 0x747269u /* "tri": tracemalloc's domain of core buffers */

/* The room in front of the message: the owner pointer, then the header. */
#define HEADER_SIZE offsetof(PyBytesObject, ob_sval)
_Static_assert(HEADER_SIZE + sizeof(tri_buf *) <= TRI_CALL_OWNABLE_HEADROOM,
               "TRI_CALL_OWNABLE_HEADROOM has no room for a bytes object header");

static tri_buf **owner_slot(PyObject *self) {
  return (tri_buf **)((char *)self - sizeof(tri_buf *));
}

static void received_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  tri_buf *b = *owner_slot(self);
  PyTraceMalloc_Untrack(TRI_TRACE_DOMAIN, (uintptr_t)b);
  tri_buf_free(b);
  Py_DECREF(tp);
}

/* No instance is ever allocated: one made any other way (bytes.__new__ from C)
 * would have no buffer for the dealloc to give back. */
static PyObject *received_alloc(PyTypeObject *tp, Py_ssize_t n) {
  (void)n;
  PyErr_Format(PyExc_TypeError, "cannot create '%.100s' instances", tp->tp_name);
  return NULL;
}

/* A plain bytes copy to pickle or copy.copy: the subclass has no constructor. */
static PyObject *received_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  return Py_BuildValue("(O(y#))", (PyObject *)&PyBytes_Type, PyBytes_AS_STRING(self),
                       PyBytes_GET_SIZE(self));
}

static PyMethodDef received_methods[] = {
    {"__reduce__", received_reduce, METH_NOARGS,
     "Pickles (and copies) as a plain bytes of the same content."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot received_slots[] = {
    {Py_tp_dealloc, received_dealloc},
    {Py_tp_alloc, received_alloc},
    {Py_tp_methods, received_methods},
    {Py_tp_doc,
     "bytes received from the network and kept where they were received (a large "
     "response message); behaves as bytes."},
    {0, NULL}};

static PyType_Spec received_spec = {
    .name = "triple_py._triple.ReceivedBytes",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = received_slots,
};

int tri_received_bytes_type_init(PyObject *module, tri_module_state *st) {
  return tri_add_subtype(module, &received_spec, &PyBytes_Type, &st->received_bytes_type,
                         "ReceivedBytes");
}

PyObject *tri_py_received_bytes(tri_module_state *st, tri_buf *b) {
  uint8_t *message = tri_buf_begin(b);
  PyObject *self = (PyObject *)(message - HEADER_SIZE);
  if (!tri_buf_detached(b) || b->off < HEADER_SIZE + sizeof(tri_buf *) ||
      tri_buf_tailroom(b) < 1 || b->len > PY_SSIZE_T_MAX ||
      (uintptr_t)self % alignof(PyBytesObject) != 0)
    return NULL; /* not a buffer made for this: the caller copies */
  message[b->len] = '\0'; /* bytes objects end with a NUL past their content */
  *owner_slot(self) = b;
  PyObject_InitVar((PyVarObject *)self, st->received_bytes_type, (Py_ssize_t)b->len);
  _Py_COMP_DIAG_PUSH
  _Py_COMP_DIAG_IGNORE_DEPR_DECLS
  ((PyBytesObject *)self)->ob_shash = -1; /* hash not computed yet */
  _Py_COMP_DIAG_POP
  (void)PyTraceMalloc_Track(TRI_TRACE_DOMAIN, (uintptr_t)b,
                            sizeof(tri_buf) + b->cap);
  return self;
}
