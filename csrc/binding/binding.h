/*
 * binding.h: shared declarations of the CPython binding (the only place
 * with Python.h).  Module state holds the heap types; no static PyObject.
 */
#ifndef TRI_BINDING_H
#define TRI_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../include/triple.h"

typedef struct {
  PyTypeObject *channel_type;
  PyTypeObject *call_type;
  PyTypeObject *echo_server_type; /* server_type.c */
  PyTypeObject *hist_type;        /* hist_type.c */
  PyTypeObject *ioloop_type;      /* ioloop_type.c */
  PyTypeObject *wakeup_type;      /* wakeup_type.c */
  PyTypeObject *received_bytes_type; /* received_bytes.c */
  tri_stats retired; /* counters of channels already deallocated */
} tri_module_state;

/* A channel: owns the C channel. */
typedef struct {
  PyObject_HEAD
  tri_channel *ch;
  PyObject *weakrefs;
} ChannelObject;

/* A call: owns the C call and pins the request buffer until it is done. */
typedef struct {
  PyObject_HEAD
  tri_call *call;
  PyObject *channel;  /* strong: the C channel must outlive the call */
  Py_buffer request;  /* view on the request bytes; .obj NULL when none */
  int notified;       /* token given to the core holds a reference */
  PyObject *received; /* the response taken from the core (ReceivedBytes), or NULL */
} CallObject;

tri_module_state *tri_get_state_from_type(PyTypeObject *tp);

int tri_channel_type_init(PyObject *module, tri_module_state *st);
int tri_call_type_init(PyObject *module, tri_module_state *st);
int tri_server_type_init(PyObject *module, tri_module_state *st);
int tri_hist_type_init(PyObject *module, tri_module_state *st);
int tri_ioloop_type_init(PyObject *module, tri_module_state *st);
int tri_wakeup_type_init(PyObject *module, tri_module_state *st);
int tri_received_bytes_type_init(PyObject *module, tri_module_state *st);
/* A ReceivedBytes built in place around the message of `b` (received_bytes.c),
 * which then owns b.  NULL, with no exception set and b still the caller's,
 * when b was not made for it (pooled, or without TRI_CALL_OWNABLE_HEADROOM):
 * the caller copies the message instead.  Cannot fail otherwise. */
PyObject *tri_py_received_bytes(tri_module_state *st, tri_buf *b);
/* _triple.wakeup_step_now(flag) -> the previous flag: whether a Wakeup's
 * set_result steps its task at once (wakeup_type.c). */
PyObject *tri_py_wakeup_step_now(PyObject *m, PyObject *arg);
/* The tri_loop of an IoLoop (borrowed from it), or NULL with an exception. */
struct tri_loop;
struct tri_loop *tri_py_ioloop(tri_module_state *st, PyObject *obj);

/* Creates the heap type of `spec` into *slot (a strong reference held by the
 * module state) and adds it to `module` as `name`.  Returns 0 or -1. */
int tri_add_type(PyObject *module, PyType_Spec *spec, PyTypeObject **slot,
                 const char *name);
/* The same for a subclass of `base` (NULL: object). */
int tri_add_subtype(PyObject *module, PyType_Spec *spec, PyTypeObject *base,
                    PyTypeObject **slot, const char *name);

/* [(value_ns, count), ...] over the non-empty buckets of `h` (load.c). */
struct tri_hist;
PyObject *tri_py_hist_pairs(const struct tri_hist *h);

/* Creates the Python call for `call` (takes ownership of it). */
CallObject *tri_call_object_new(tri_module_state *st, PyObject *channel,
                                tri_call *call);
/* Releases the pinned request view if the call is done. */
void tri_call_object_release_request(CallObject *self);

/* Converts counters to a dict {name: int}. */
PyObject *tri_stats_to_dict(const tri_stats *st);

/* Waits for `call` with the GIL released, in slices, checking signals.
 * timeout < 0: forever.  Returns 1 done, 0 timed out, -1 with an exception
 * set (a signal handler raised: the call has been cancelled; or the call is
 * orphaned by a fork, tri_refuse_orphaned). */
int tri_wait_interruptible(tri_call *call, double timeout);

/* RuntimeError (returns -1) for a call started before fork() in a child of
 * that fork (tri_call_orphaned): it can never complete here.  0 otherwise. */
int tri_refuse_orphaned(tri_call *call);

/* A wait of the core that can be sliced: returns 0 once what it waits for
 * happened, TRI_ERR_TIMEOUT when `slice_ns` ran out first. */
typedef int (*tri_slice_wait)(tri_call *call, size_t arg, int64_t slice_ns);

/* How long a wait with the GIL released goes without checking signals. */
#define TRI_PY_WAIT_SLICE_NS (50 * 1000000LL)

/* Runs wait(call, arg, slice) with the GIL released, in 50 ms slices, checking
 * signals between them, for up to timeout_ns (< 0: forever).  Returns 1 once
 * it succeeded, 0 on timeout, -1 with an exception set when a signal handler
 * raised (the call is then cancelled: Ctrl-C ends the RPC, as in grpcio) or
 * the call is orphaned (tri_refuse_orphaned). */
int tri_wait_sliced(tri_call *call, tri_slice_wait wait, size_t arg, int64_t timeout_ns);

/* run_load's `requests` (load_requests.c): a tri_ring_entry array pointing
 * into the bytes of `requests`, which must outlive its use; 0, or -1 with an
 * exception set.  Free with tri_py_free_requests (NULL is fine). */
struct tri_ring_entry;
int tri_py_requests(PyObject *requests, struct tri_ring_entry **entries, size_t *n);
void tri_py_free_requests(struct tri_ring_entry *entries);

/* A parameter name of a METH_FASTCALL | METH_KEYWORDS method, with its
 * length: TRI_PY_KW("path"). */
typedef struct {
  const char *name;
  Py_ssize_t len;
} tri_py_kw;
#define TRI_PY_KW(s) \
  { s, (Py_ssize_t)sizeof(s) - 1 }

/* Matches the arguments of a METH_FASTCALL | METH_KEYWORDS method `fn` with
 * parameters `names` (n of them; at most `positional` given by position, the
 * first `required` mandatory): out[i] is the borrowed argument for names[i],
 * or NULL when not given.  Returns 0, or -1 with TypeError (fastcall.c). */
int tri_py_fastcall_args(const char *fn, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, const tri_py_kw *names, int n,
                         int positional, int required, PyObject **out);

/* An optional int argument (NULL: `dflt`), as the "i" format converts it:
 * 0, or -1 with TypeError/OverflowError. */
int tri_py_int_arg(PyObject *o, int dflt, int *out);

/* The channel options' table (csrc/tri_options.h) for Python (options.c). */
#define TRI_PY_MAX_PEMS 4
typedef struct {
  Py_buffer views[TRI_PY_MAX_PEMS]; /* PEM options, pinned during tri_channel_new */
  int n;
} tri_py_pems;

/* Sets the options in `kw` (a dict of keyword arguments, or NULL; None values
 * keep the default) on `o` by walking the table, for Channel() and run_load()
 * alike (`fn` names the caller in errors): 0, or -1 with TypeError for an
 * unknown keyword or a wrong type and ValueError outside a row's range.  STR
 * options point into `kw`'s values (which must outlive the use of `o`); PEM
 * views go to `pems`, which the caller releases with tri_py_release_pems, on
 * failure too. */
struct tri_channel_opts;
int tri_py_set_channel_options(const char *fn, struct tri_channel_opts *o,
                               PyObject *kw, tri_py_pems *pems);
void tri_py_release_pems(tri_py_pems *pems);

/* _triple.CHANNEL_OPTIONS: a tuple of (key, name, type, min, max, default,
 * choices, from_credentials) per row, in table order (a new reference). */
PyObject *tri_py_channel_options_table(void);

/* _triple.run_load(...) (load.c): the C load generator, GIL released. */
PyObject *tri_py_run_load(PyObject *m, PyObject *args, PyObject *kwargs);
extern const char tri_run_load_doc[];

/* run_load's own keywords (load_options.c): the rows whose value run_load
 * keeps as an object, by slot of the array tri_py_load_options_parse fills. */
enum {
  TRI_PY_LOAD_OBJ_REQUESTS,
  TRI_PY_LOAD_OBJ_ENDPOINTS,
  TRI_PY_LOAD_OBJ_STOP,
  TRI_PY_LOAD_NOBJS
};
/* Splits `kwargs` (run_load's keyword dict, or NULL) by walking the table:
 * the load's keywords are checked (type and range) and written into `cfg`,
 * or for the object rows into objs[TRI_PY_LOAD_NOBJS] (borrowed from
 * kwargs, NULL when not given or None); the others go into *channel_kw (a new
 * dict the caller releases, or NULL when there are none) for the channel
 * options' walker.  A path points into kwargs, which must outlive `cfg`'s use.
 * 0, or -1 with TypeError (a missing required keyword, a wrong type) or
 * ValueError (out of range) naming the keyword. */
struct tri_load_config;
int tri_py_load_options_parse(PyObject *kwargs, struct tri_load_config *cfg,
                              PyObject **objs, PyObject **channel_kw);
/* A tri_load_mode's name ("unary", "unary_stream_path", "bidi"); static. */
const char *tri_py_load_mode_name(int mode);
/* _triple.LOAD_OPTIONS: a tuple of (name, type, min, max, default, choices,
 * required, unit, doc) per row, in table order (a new reference). */
PyObject *tri_py_load_options_table(void);
/* run_load's result (load_results.c): a new dict with one key per row of
 * the table, from the load's configuration and figures (`stopped`: ended
 * early), or NULL with an exception set. */
struct tri_load_result;
PyObject *tri_py_load_result_dict(const struct tri_load_config *cfg,
                                  const struct tri_load_result *r, int stopped);
/* _triple.LOAD_RESULTS: a tuple of (name, type, unit, doc) per result key,
 * in the dict's order (a new reference). */
PyObject *tri_py_load_results_table(void);
/* LOAD_LIMITS: {run_load keyword: (min, max)}, the ranges the load generator
 * enforces (tri_load_limits); a new dict, or NULL with an exception set. */
PyObject *tri_py_load_limits(void);

#endif
