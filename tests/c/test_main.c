/* test_main.c: runs every C test suite of the core. */
#include <stdio.h>

#include "tri_test.h"

int tri_test_failures = 0;
int tri_test_checks = 0;

void test_buf(void);
void test_mem(void);
void test_frame(void);
void test_wire(void);
void test_pb(void);
void test_mpsc(void);

static const struct {
  const char *name;
  void (*fn)(void);
} suites[] = {{"buf", test_buf},   {"mem", test_mem}, {"frame", test_frame},
              {"wire", test_wire}, {"pb", test_pb},   {"mpsc", test_mpsc}};

int main(void) {
  for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
    int before = tri_test_failures;
    suites[i].fn();
    printf("%-6s %s\n", suites[i].name,
           tri_test_failures == before ? "ok" : "FAILED");
  }
  printf("%d checks, %d failures\n", tri_test_checks, tri_test_failures);
  return tri_test_failures ? 1 : 0;
}
