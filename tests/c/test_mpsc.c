/* test_mpsc.c: the lock-free submission queue under concurrent producers. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "tri_mpsc.h"
#include "tri_test.h"

#define PRODUCERS 4
#define PER 20000

typedef struct {
  tri_node node;
  int producer;
  int seq;
} item;

static tri_mpsc q;
static item items[PRODUCERS][PER];

static void *produce(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < PER; i++) {
    items[id][i].producer = id;
    items[id][i].seq = i;
    tri_mpsc_push(&q, &items[id][i].node);
  }
  return NULL;
}

void test_mpsc(void) {
  tri_mpsc_init(&q);
  pthread_t t[PRODUCERS];
  for (int i = 0; i < PRODUCERS; i++)
    pthread_create(&t[i], NULL, produce, (void *)(intptr_t)i);
  int next[PRODUCERS] = {0};
  int total = 0, in_order = 1;
  while (total < PRODUCERS * PER) {
    for (tri_node *n = tri_mpsc_take_all(&q); n; n = n->next) {
      item *it = (item *)n;
      in_order &= it->seq == next[it->producer];
      next[it->producer] = it->seq + 1;
      total++;
    }
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(t[i], NULL);
  CHECK_EQ_INT(total, PRODUCERS * PER);
  CHECK(in_order); /* FIFO per producer */
  CHECK(tri_mpsc_take_all(&q) == NULL);
}
