/*
 * test_writer.c: the coalescing writer, one test per row of the seed's test
 * table (dubbo-go PR #3746: TestStreamBufferWriter*), on a recording sink.
 */
#include <pthread.h>
#include <stdlib.h>

#include "tri_error.h"
#include "tri_frame.h"
#include "tri_test.h"
#include "tri_writer.h"

#define WM 1024 /* a small watermark keeps the tests fast */

typedef struct {
  pthread_mutex_t lock;
  tri_pool *pool;
  uint8_t *bytes; /* everything accepted, in order */
  size_t len, cap;
  int calls;      /* sink calls */
  int ends;       /* calls with end = 1 */
  size_t max_chunk;
  int fail_at;    /* 1-based sink call that fails (0: never) */
  int fail_err;
  int short_at;   /* 1-based sink call that accepts one byte less */
  int armed;
  tri_writer *w;             /* the writer this sink belongs to */
  int64_t pending_when_armed; /* tri_writer_pending_bytes seen by `armed` */
} rec;

static ssize_t rec_write(void *ctx, tri_buf *b, int end, int may_block) {
  rec *r = ctx;
  pthread_mutex_lock(&r->lock);
  int call = ++r->calls;
  r->ends += end;
  ssize_t rv = b ? (ssize_t)b->len : 0;
  if (call == r->fail_at) {
    rv = r->fail_err;
  } else if (b) {
    if (call == r->short_at) rv--;
    if (b->len > r->max_chunk) r->max_chunk = b->len;
    if (r->len + b->len > r->cap) {
      r->cap = (r->len + b->len) * 2;
      r->bytes = realloc(r->bytes, r->cap);
    }
    memcpy(r->bytes + r->len, tri_buf_begin(b), b->len);
    r->len += b->len;
  }
  pthread_mutex_unlock(&r->lock);
  tri_pool_put(r->pool, b);
  return rv;
}

static void rec_armed(void *ctx) {
  rec *r = ctx;
  r->armed++;
  r->pending_when_armed = tri_writer_pending_bytes(r->w);
}

typedef struct {
  tri_pool pool;
  rec r;
  tri_writer w;
} fixture;

static void setup(fixture *f, size_t watermark) {
  memset(f, 0, sizeof(*f));
  tri_pool_init(&f->pool, NULL);
  pthread_mutex_init(&f->r.lock, NULL);
  f->r.pool = &f->pool;
  tri_writer_sink sink = {rec_write, rec_armed, &f->r};
  tri_writer_init(&f->w, &f->pool, watermark, &sink);
  f->r.w = &f->w;
}

static void teardown(fixture *f) {
  tri_writer_free(&f->w);
  free(f->r.bytes);
  pthread_mutex_destroy(&f->r.lock);
  tri_pool_free(&f->pool);
}

/* Counts envelopes in the recorded bytes and checks their payloads are
 * msg(0), msg(1), ... in order, where msg(i) is `size` bytes of (i & 0xff). */
static int decode_in_order(const rec *r, size_t size, int *count) {
  size_t pos = 0;
  int i = 0, ok = 1;
  while (pos + 5 <= r->len) {
    uint32_t n = ((uint32_t)r->bytes[pos + 1] << 24) | (r->bytes[pos + 2] << 16) |
                 (r->bytes[pos + 3] << 8) | r->bytes[pos + 4];
    if (n != size || pos + 5 + n > r->len) return 0;
    for (uint32_t k = 0; k < n; k++) ok &= r->bytes[pos + 5 + k] == (uint8_t)i;
    pos += 5 + n;
    i++;
  }
  *count = i;
  return ok && pos == r->len;
}

static void write_msg(fixture *f, int i, size_t size, int expect) {
  uint8_t buf[4096];
  memset(buf, (uint8_t)i, size);
  CHECK_EQ_INT(tri_writer_write(&f->w, buf, size, 0), expect);
}

static void coalesces(void) {
  fixture f;
  setup(&f, WM);
  for (int i = 0; i < 3; i++) write_msg(&f, i, 10, 0);
  CHECK_EQ_INT(f.r.calls, 0);
  /* The timer is armed once the first message is counted as pending (a
   * timer that finds nothing pending lets go), and the count is readable
   * without the lock. */
  CHECK(f.r.pending_when_armed == 15);
  CHECK(tri_writer_pending_bytes(&f.w) == 45);
  CHECK_EQ_INT(tri_writer_flush(&f.w), 0);
  CHECK(tri_writer_pending_bytes(&f.w) == 0);
  CHECK_EQ_INT(f.r.calls, 1); /* three messages, one sink call */
  int n;
  CHECK(decode_in_order(&f.r, 10, &n));
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_INT(f.r.armed, 1);
  teardown(&f);
}

static void flushes_at_limit(void) {
  fixture f;
  setup(&f, WM);
  /* 64 B messages are 69 B on the wire: the 15th crosses 1024. */
  for (int i = 0; i < 14; i++) write_msg(&f, i, 64, 0);
  CHECK_EQ_INT(f.r.calls, 0);
  write_msg(&f, 14, 64, 0);
  CHECK_EQ_INT(f.r.calls, 1);
  CHECK_EQ_INT(f.r.len, 15 * 69); /* the whole batch in one flush */
  teardown(&f);
}

static void large_message_direct_and_after_pending(void) {
  fixture f;
  setup(&f, WM);
  write_msg(&f, 0, 100, 0);
  write_msg(&f, 1, 100, 0);
  uint8_t big[2000];
  memset(big, 2, sizeof(big));
  CHECK_EQ_INT(tri_writer_write(&f.w, big, WM - 5, 0), 0); /* reaches it */
  CHECK_EQ_INT(f.r.calls, 2); /* pending first, then the big one alone */
  CHECK_EQ_INT(f.r.len, 2 * 105 + WM);
  CHECK_EQ_INT(f.r.bytes[210 + 5], 2); /* big message comes after, in order */
  CHECK_EQ_INT(f.r.bytes[5], 0);
  CHECK_EQ_INT(f.r.bytes[110], 1);
  teardown(&f);
}

static void flush_empty_is_noop(void) {
  fixture f;
  setup(&f, WM);
  CHECK_EQ_INT(tri_writer_flush(&f.w), 0);
  CHECK_EQ_INT(f.r.calls, 0);
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(tri_writer_flush(&f.w), 0);
  CHECK_EQ_INT(tri_writer_flush(&f.w), 0);
  CHECK_EQ_INT(f.r.calls, 1);
  teardown(&f);
}

static void sticky_error_everywhere(void) {
  fixture f;
  setup(&f, WM);
  f.r.fail_at = 1;
  f.r.fail_err = TRI_ERR_IO;
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(tri_writer_flush(&f.w), TRI_ERR_IO);
  write_msg(&f, 1, 10, TRI_ERR_IO); /* write after error */
  CHECK_EQ_INT(tri_writer_flush(&f.w), TRI_ERR_IO);
  CHECK_EQ_INT(tri_writer_close(&f.w), TRI_ERR_IO);
  CHECK_EQ_INT(tri_writer_close(&f.w), TRI_ERR_IO); /* close after failed close */
  CHECK_EQ_INT(f.r.calls, 1);
  teardown(&f);
}

static void write_reports_flush_failure(void) {
  fixture f;
  setup(&f, WM);
  f.r.fail_at = 1;
  f.r.fail_err = TRI_ERR_CLOSED;
  for (int i = 0; i < 14; i++) write_msg(&f, i, 64, 0);
  write_msg(&f, 14, 64, TRI_ERR_CLOSED); /* the write that trips the watermark */
  teardown(&f);
}

static void large_message_error_propagates(void) {
  fixture f;
  setup(&f, WM);
  f.r.fail_at = 1; /* the pending batch's flush fails */
  f.r.fail_err = TRI_ERR_IO;
  write_msg(&f, 0, 10, 0);
  uint8_t big[2000] = {0};
  CHECK_EQ_INT(tri_writer_write(&f.w, big, 1500, 0), TRI_ERR_IO);
  CHECK_EQ_INT(f.r.calls, 1); /* the big message was not written after it */
  teardown(&f);
}

static void short_write_is_failure(void) {
  fixture f;
  setup(&f, WM);
  f.r.short_at = 1;
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(tri_writer_flush(&f.w), TRI_ERR_IO);
  write_msg(&f, 1, 10, TRI_ERR_IO);
  teardown(&f);
}

static void close_semantics(void) {
  fixture f;
  setup(&f, WM);
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(tri_writer_close(&f.w), 0);
  CHECK_EQ_INT(f.r.calls, 1); /* the tail message, with the end mark */
  CHECK_EQ_INT(f.r.ends, 1);
  CHECK_EQ_INT(f.r.len, 15);
  write_msg(&f, 1, 10, TRI_ERR_CLOSED); /* write after close */
  CHECK_EQ_INT(tri_writer_flush(&f.w), 0); /* flush after close: nothing */
  CHECK_EQ_INT(tri_writer_close(&f.w), 0); /* idempotent */
  CHECK_EQ_INT(f.r.calls, 1);
  teardown(&f);

  setup(&f, WM); /* close failure is reported, not swallowed */
  f.r.fail_at = 1;
  f.r.fail_err = TRI_ERR_IO;
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(tri_writer_close(&f.w), TRI_ERR_IO);
  teardown(&f);

  setup(&f, WM); /* an empty stream still ends */
  CHECK_EQ_INT(tri_writer_close(&f.w), 0);
  CHECK_EQ_INT(f.r.calls, 1);
  CHECK_EQ_INT(f.r.ends, 1);
  CHECK_EQ_INT(f.r.len, 0);
  teardown(&f);
}

static void watermark_off_sends_each_message(void) {
  fixture f;
  setup(&f, 0);
  for (int i = 0; i < 5; i++) write_msg(&f, i, 10, 0);
  CHECK_EQ_INT(f.r.calls, 5);
  int n;
  CHECK(decode_in_order(&f.r, 10, &n));
  CHECK_EQ_INT(n, 5);
  teardown(&f);
}

/* ---- concurrency ------------------------------------------------------- */

typedef struct {
  fixture *f;
  int id;
  int accepted;
  int refused;
} worker;

static void *send_many(void *arg) {
  worker *w = arg;
  uint8_t msg[20];
  for (int i = 0; i < 100; i++) {
    memset(msg, (uint8_t)w->id, sizeof(msg));
    int rv = tri_writer_write(&w->f->w, msg, sizeof(msg), 0);
    if (rv == 0) w->accepted++;
    else w->refused++;
    if (i % 10 == 0) tri_writer_flush(&w->f->w);
  }
  return NULL;
}

static void concurrent_writes_flush(void) {
  fixture f;
  setup(&f, WM);
  pthread_t t[8];
  worker ws[8];
  for (int i = 0; i < 8; i++) {
    ws[i] = (worker){&f, i, 0, 0};
    pthread_create(&t[i], NULL, send_many, &ws[i]);
  }
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  CHECK_EQ_INT(tri_writer_close(&f.w), 0);
  CHECK_EQ_INT(f.r.len, 8 * 100 * 25); /* nothing lost */
  CHECK(f.r.max_chunk <= WM + 25);     /* batches stay bounded */
  teardown(&f);
}

static void *close_soon(void *arg) {
  fixture *f = arg;
  tri_writer_flush(&f->w);
  tri_writer_close(&f->w);
  return NULL;
}

/* A write racing with close either lands in the final flush or fails. */
static void close_never_drops_racing_write(void) {
  int bad = 0;
  for (int round = 0; round < 200; round++) {
    fixture f;
    setup(&f, WM);
    pthread_t closer, writer;
    worker wk = {&f, 1, 0, 0};
    pthread_create(&writer, NULL, send_many, &wk);
    pthread_create(&closer, NULL, close_soon, &f);
    pthread_join(writer, NULL);
    pthread_join(closer, NULL);
    tri_writer_close(&f.w);
    if (f.r.len != (size_t)wk.accepted * 25 || f.r.ends != 1) bad++;
    teardown(&f);
  }
  CHECK_EQ_INT(bad, 0);
}

/* bare (the Triple unary body through the writer): no envelope, flags
 * ignored, both when coalesced and when a message goes alone. */
static void bare_writes_no_envelope(void) {
  fixture f;
  setup(&f, WM);
  f.w.bare = 1;
  write_msg(&f, 7, 10, 0);
  CHECK_EQ_INT(tri_writer_close(&f.w), 0);
  CHECK_EQ_INT(f.r.len, 10);
  CHECK_EQ_INT(f.r.bytes[0], 7);
  CHECK_EQ_INT(f.r.bytes[9], 7);
  teardown(&f);
  setup(&f, WM);
  f.w.bare = 1;
  uint8_t big[2 * WM];
  memset(big, 3, sizeof(big));
  CHECK_EQ_INT(tri_writer_write(&f.w, big, sizeof(big), TRI_FRAME_FLAG_COMPRESSED), 0);
  CHECK_EQ_INT(f.r.calls, 1);
  CHECK_EQ_INT(f.r.len, sizeof(big));
  CHECK_MEM(f.r.bytes, f.r.len, big, sizeof(big));
  teardown(&f);
}

/* write_now: what was pending and the new message go out together, at once,
 * and no flush timer is armed for them. */
static void write_now_sends_at_once(void) {
  fixture f;
  setup(&f, WM);
  write_msg(&f, 0, 10, 0);
  CHECK_EQ_INT(f.r.armed, 1);
  uint8_t msg[10];
  memset(msg, 1, sizeof(msg));
  CHECK_EQ_INT(tri_writer_write_now(&f.w, msg, sizeof(msg), 0), 0);
  CHECK_EQ_INT(f.r.calls, 1); /* both messages, one sink call */
  CHECK(tri_writer_pending_bytes(&f.w) == 0);
  int n;
  CHECK(decode_in_order(&f.r, 10, &n));
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_INT(tri_writer_write_now(&f.w, msg, sizeof(msg), 0), 0);
  CHECK_EQ_INT(f.r.calls, 2);
  CHECK_EQ_INT(f.r.armed, 1); /* the chunk write_now started armed nothing */
  teardown(&f);
}

void test_writer(void) {
  bare_writes_no_envelope();
  coalesces();
  flushes_at_limit();
  large_message_direct_and_after_pending();
  flush_empty_is_noop();
  sticky_error_everywhere();
  write_reports_flush_failure();
  large_message_error_propagates();
  short_write_is_failure();
  close_semantics();
  watermark_off_sends_each_message();
  concurrent_writes_flush();
  close_never_drops_racing_write();
  write_now_sends_at_once();
}
