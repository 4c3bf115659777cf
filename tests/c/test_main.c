/* test_main.c: runs every C test suite of the core. */
#include <stdio.h>
#include <string.h>

#include "tri_test.h"

int tri_test_failures = 0;
int tri_test_checks = 0;

void test_buf(void);
void test_mem(void);
void test_frame(void);
void test_wire(void);
void test_pb(void);
void test_mpsc(void);
void test_writer(void);
void test_server(void);
void test_gzip(void);
void test_dial(void);
void test_fork(void);
void test_tjson(void);
void test_session(void);
void test_h2_rules(void);
void test_resp_check(void);
void test_hist(void);
void test_load(void);
void test_backoff(void);
void test_deadlines(void);
void test_outq(void);
void test_conn(void);
void test_notify(void);
void test_wakes_defer(void);
void test_call_recycle(void);
void test_inplace(void);
void test_writable(void);
void test_thread(void);
void test_connectivity(void);
void test_ring(void);
void test_hpack_filter(void);
void test_sched(void);
void test_failmalloc(void);
void test_options(void);
void test_loop(void);
void test_lookup(void);
void test_handoff(void);
void test_handoff_channel_gone(void);

static const struct {
  const char *name;
  void (*fn)(void);
} suites[] = {{"buf", test_buf},
              {"mem", test_mem},
              {"frame", test_frame},
              {"wire", test_wire},
              {"pb", test_pb},
              {"mpsc", test_mpsc},
              {"writer", test_writer},
              {"server", test_server},
              {"gzip", test_gzip},
              {"dial", test_dial},
              {"fork", test_fork},
              {"tjson", test_tjson},
              {"session", test_session},
              {"h2_rules", test_h2_rules},
              {"resp_check", test_resp_check},
              {"hist", test_hist},
              {"load", test_load},
              {"backoff", test_backoff},
              {"deadlines", test_deadlines},
              {"outq", test_outq},
              {"conn", test_conn},
              {"notify", test_notify},
              {"wakes_defer", test_wakes_defer},
              {"call_recycle", test_call_recycle},
              {"inplace", test_inplace},
              {"writable", test_writable},
              {"thread", test_thread},
              {"connectivity", test_connectivity},
              {"ring", test_ring},
              {"hpack_filter", test_hpack_filter},
              {"sched", test_sched},
              {"failmalloc", test_failmalloc},
              {"options", test_options},
              {"loop", test_loop},
              {"lookup", test_lookup},
              {"handoff", test_handoff},
              {"handoff_channel_gone", test_handoff_channel_gone}};

/* Runs every suite, or only those named on the command line. */
int main(int argc, char **argv) {
  for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
    int wanted = argc < 2;
    for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], suites[i].name) == 0;
    if (!wanted) continue;
    int before = tri_test_failures;
    suites[i].fn();
    printf("%-6s %s\n", suites[i].name,
           tri_test_failures == before ? "ok" : "FAILED");
  }
  printf("%d checks, %d failures\n", tri_test_checks, tri_test_failures);
  return tri_test_failures ? 1 : 0;
}
