/*
 * tri_test.h: a tiny test harness for the C core (no Python, no network).
 * Each test file defines `void test_<area>(void)` functions registered in
 * test_main.c.  CHECK records a failure and continues; the runner exits 1
 * if any check failed.
 */
#ifndef TRI_TEST_H
#define TRI_TEST_H

#include <stdio.h>
#include <string.h>

extern int tri_test_failures;
extern int tri_test_checks;

#define CHECK(cond)                                                        \
  do {                                                                     \
    tri_test_checks++;                                                     \
    if (!(cond)) {                                                         \
      tri_test_failures++;                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
    }                                                                      \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                 \
  do {                                                                     \
    long long _a = (long long)(a), _b = (long long)(b);                    \
    tri_test_checks++;                                                     \
    if (_a != _b) {                                                        \
      tri_test_failures++;                                                 \
      fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,      \
              __LINE__, #a, _a, _b);                                       \
    }                                                                      \
  } while (0)

#define CHECK_MEM(p, n, q, m)                                              \
  do {                                                                     \
    tri_test_checks++;                                                     \
    if ((size_t)(n) != (size_t)(m) || memcmp((p), (q), (n)) != 0) {        \
      tri_test_failures++;                                                 \
      fprintf(stderr, "%s:%d: bytes differ: %s vs %s\n", __FILE__,         \
              __LINE__, #p, #q);                                           \
    }                                                                      \
  } while (0)

#define CHECK_STR(s, n, lit) CHECK_MEM(s, n, lit, strlen(lit))

#endif
