/*
 * test_call_recycle.c: a call struct the channel pools keeps its header
 * buffer for the next call made from it (tri_call.hdr_spare), so that a
 * steady stream of calls takes no pool buffer for its headers; a buffer
 * grown past TRI_CALL_HDR_KEEP by much metadata goes back to the pool.
 * Calls are made and released without being started: no network, no thread.
 */
#include <string.h>

#include "detached_call.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_int.h"
#include "tri_test.h"

static tri_channel *new_channel(void) {
  tri_channel *ch = NULL;
  CHECK_EQ_INT(undialed_channel(&ch), 0);
  return ch;
}

/* pool hits + misses so far: every take from the channel's pools. */
static unsigned long takes(tri_channel *ch) {
  tri_stats *st = tri_channel_stats(ch);
  return (unsigned long)(atomic_load(&st->pool_hits) + atomic_load(&st->pool_misses));
}

static tri_call *made(tri_channel *ch, size_t metadata_bytes) {
  tri_call *c = NULL;
  CHECK_EQ_INT(tri_call_new(ch, &c, "/s/M", 4, -1, 0), 0);
  if (metadata_bytes) {
    static char value[8192];
    memset(value, 'v', sizeof(value));
    CHECK(metadata_bytes <= sizeof(value));
    CHECK_EQ_INT(tri_call_add_metadata(c, "x-big", 5, value, metadata_bytes), 0);
  }
  return c;
}

static void kept_across_calls(void) {
  tri_channel *ch = new_channel();
  tri_call *c = made(ch, 0);
  tri_buf *hdr = c->hdr;
  tri_call_release(c);
  /* The next call takes the struct (one take) and its kept buffer (none). */
  unsigned long before = takes(ch);
  c = made(ch, 0);
  CHECK_EQ_INT((long)(takes(ch) - before), 1);
  CHECK(c->hdr == hdr);
  CHECK_EQ_INT((long)c->hdr->len, 4); /* the path alone: the old content is gone */
  CHECK_MEM(tri_buf_begin(c->hdr), c->hdr->len, "/s/M", 4);
  CHECK(c->hdr_spare == NULL);
  tri_call_release(c);
  tri_channel_del(ch); /* gives the kept buffer back: the ASan build sees no leak */
}

static void big_buffer_goes_back(void) {
  tri_channel *ch = new_channel();
  tri_call *c = made(ch, 6000); /* grows the header buffer past TRI_CALL_HDR_KEEP */
  CHECK(c->hdr->cap > TRI_CALL_HDR_KEEP);
  tri_call_release(c);
  c = made(ch, 0);
  CHECK(c->hdr->cap <= TRI_CALL_HDR_KEEP);
  tri_call_release(c);
  /* A small kept buffer too small for a longer path is swapped for one that fits. */
  char path[600] = "/";
  memset(path + 1, 'p', sizeof(path) - 1);
  CHECK_EQ_INT(tri_call_new(ch, &c, path, sizeof(path), -1, 0), 0);
  CHECK(c->hdr->cap >= sizeof(path) + 256);
  CHECK_MEM(tri_buf_begin(c->hdr), c->path_len, path, sizeof(path));
  tri_call_release(c);
  tri_channel_del(ch);
}

void test_call_recycle(void) {
  kept_across_calls();
  big_buffer_goes_back();
}
