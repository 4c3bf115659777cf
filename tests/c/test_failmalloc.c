/*
 * test_failmalloc.c: every heap allocation of a call may fail, and each
 * failure ends the call with a clean error and frees everything.
 *
 * As nghttp2's failmalloc tests do: a counting run of a scenario (channel,
 * detached connection, call, scripted server frames, teardown) learns how
 * many allocations it makes (tri_mem_hook_arm with fail_nth 0); then the
 * scenario runs once per N = 1..count with the Nth allocation failing, and
 * once more per N with every allocation from the Nth on failing.  Each run
 * is a child process (alarm: a hang kills it; under ASan, LeakSanitizer
 * checks it at exit).  A run must
 *   - fail setup (channel, connection, call, metadata) with TRI_ERR_NOMEM, or
 *   - end the call before teardown with RESOURCE_EXHAUSTED and a message
 *     (out of memory is RESOURCE_EXHAUSTED wherever it happens: in our code,
 *     inside nghttp2, while writing a request stream),
 * and free as many blocks as it allocated (the hook's counts).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "detached_call.h"
#include "session_script.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_error.h"
#include "tri_int.h"
#include "tri_mem.h"
#include "tri_test.h"
#include "tri_wire.h"

enum { UNARY, SERVER_STREAM, BIDI, SCENARIOS };
static const char *const scenario_name[] = {"unary", "server stream", "bidi stream"};

static const char *ok_headers[] = {":status", "200", "content-type",
                                   "application/grpc", "x-init", "a", NULL};

/* The server's side of a scenario, built before the hook is armed (the
 * script allocates with plain malloc, outside tri_mem, anyway). */
static void build_script(script *s, int kind) {
  script_init(s);
  script_headers(s, 1, 0, ok_headers);
  int messages = kind == UNARY ? 1 : 3;
  for (int i = 0; i < messages; i++) script_message(s, 1, 0, "hello", 5, 0);
  const char *trailers[] = {"grpc-status", "0", "x-trail", "b", NULL};
  script_headers(s, 1, 1, trailers);
}

/* How a run ended. */
typedef struct {
  int setup_rv;  /* nonzero: a setup step failed with this */
  int done;      /* the call had ended before teardown */
  int code;      /* its status */
  char message[96]; /* its message, cut short */
  int messages;  /* response messages received */
} outcome;

/* Reads what arrived on a streaming call (never waits). */
static int drain(tri_call *c) {
  int n = 0;
  tri_buf *m;
  while (tri_call_read(c, 0, &m) == 1) {
    if (m->len == 5 && !memcmp(tri_buf_begin(m), "hello", 5)) n++;
    tri_call_msg_release(c, m);
  }
  return n;
}

/* One whole scenario: everything it allocates through tri_mem is freed
 * before it returns. */
static void run(int kind, const script *s, outcome *o) {
  memset(o, 0, sizeof(*o));
  tri_channel_opts opts;
  tri_channel_opts_init(&opts);
  opts.host = "127.0.0.1";
  opts.port = "1";
  tri_channel *ch;
  if ((o->setup_rv = tri_channel_new(&ch, &opts))) return;
  tri_conn *conn;
  if ((o->setup_rv = tri__conn_new_detached(&conn, ch))) {
    tri_channel_del(ch);
    return;
  }
  static const char path[] = "/s/M";
  int flags = kind == UNARY ? 0
              : kind == SERVER_STREAM
                  ? TRI_CALL_SERVER_STREAMING
                  : TRI_CALL_SERVER_STREAMING | TRI_CALL_CLIENT_STREAMING;
  tri_call *c;
  if ((o->setup_rv = tri_call_new(ch, &c, path, sizeof(path) - 1, -1, flags))) {
    detached_teardown(ch, conn, NULL, 0);
    return;
  }
  if ((o->setup_rv = tri_call_add_metadata(c, "x-k", 3, "v", 1))) {
    detached_teardown(ch, conn, &c, 1); /* not started: released at once */
    return;
  }
  if (kind != BIDI) tri_call_set_request_borrowed(c, (const uint8_t *)"req", 3);
  detached_submit(conn, c);
  if (kind == BIDI) {
    /* A failed write leaves its error sticky; done_writing reports it too. */
    for (int i = 0; i < 2; i++) tri_call_write(c, (const uint8_t *)"abc", 3);
    tri_call_done_writing(c);
    tri__conn_run_ops(conn);
  }
  /* The server's SETTINGS arrive after the call started: it was held and
   * goes out now. */
  if (detached_settings(conn) == 0) tri__conn_feed(conn, s->p, s->len);
  if (kind == UNARY) {
    const uint8_t *p;
    size_t n;
    tri_call_response(c, &p, &n);
    o->messages = tri_call_done(c) && n == 5 && !memcmp(p, "hello", 5);
  } else {
    o->messages = drain(c);
  }
  o->done = tri_call_done(c);
  if (o->done) {
    o->code = tri_call_code(c);
    const char *m;
    size_t mn;
    tri_call_message(c, &m, &mn);
    snprintf(o->message, sizeof(o->message), "%.*s", (int)mn, m);
  }
  detached_teardown(ch, conn, &c, 1);
}

/* The child's part of one run: checks the outcome and the hook's counts.
 * Returns the exit status (the number of failed checks, capped). */
static int checked_run(int kind, const script *s, unsigned long nth, int after) {
  int before = tri_test_failures;
  outcome o;
  tri_mem_hook_arm(nth, after);
  run(kind, s, &o);
  tri_mem_hook_counts n = tri_mem_hook_disarm();
  CHECK_EQ_INT(n.failed >= 1, 1);
  CHECK_EQ_INT(n.frees, n.allocs - n.failed); /* nothing kept */
  if (o.setup_rv) {
    CHECK_EQ_INT(o.setup_rv, TRI_ERR_NOMEM);
  } else {
    CHECK(o.done); /* ended by the failure, not by teardown */
    CHECK_EQ_INT(o.code, TRI_CODE_RESOURCE_EXHAUSTED);
    CHECK(o.message[0]);
  }
  int failed = tri_test_failures - before;
  if (failed)
    fprintf(stderr, "failmalloc: %s, allocation %lu%s failing: setup %d, "
            "done %d, code %d (\"%s\"), %d messages\n", scenario_name[kind], nth,
            after ? " and later" : "", o.setup_rv, o.done, o.code, o.message,
            o.messages);
  return failed > 100 ? 100 : failed;
}

/* Runs checked_run in a child with a hard timeout; returns its status. */
static int in_child(int kind, const script *s, unsigned long nth, int after) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    exit(checked_run(kind, s, nth, after)); /* exit: LeakSanitizer runs */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

static void walk(int kind) {
  script s;
  build_script(&s, kind);
  outcome ok;
  tri_mem_hook_arm(0, 0);
  run(kind, &s, &ok);
  tri_mem_hook_counts count = tri_mem_hook_disarm();
  /* The counting run succeeds and frees what it allocated. */
  CHECK_EQ_INT(ok.setup_rv, 0);
  CHECK_EQ_INT(ok.code, 0);
  CHECK_EQ_INT(ok.messages, kind == UNARY ? 1 : 3);
  CHECK_EQ_INT(count.failed, 0);
  CHECK_EQ_INT(count.frees, count.allocs);
  CHECK(count.allocs > 10); /* the walk covers something */
  for (int after = 0; after < 2; after++)
    for (unsigned long n = 1; n <= count.allocs; n++) {
      int status = in_child(kind, &s, n, after);
      if (status)
        fprintf(stderr, "failmalloc: %s, allocation %lu%s failing: child "
                "status %d\n", scenario_name[kind], n, after ? " and later" : "",
                status);
      CHECK_EQ_INT(status, 0);
    }
  script_free(&s);
}

void test_failmalloc(void) {
  for (int kind = 0; kind < SCENARIOS; kind++) walk(kind);
}
