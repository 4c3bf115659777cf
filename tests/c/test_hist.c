/* test_hist.c: the HDR latency histogram against a sorted-array oracle. */
#include <stdint.h>
#include <stdlib.h>

#include "tri_error.h"
#include "tri_hist.h"
#include "tri_test.h"

#define N_VALUES 100000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static double uniform(void) { return (double)(rng() >> 11) / 9007199254740992.0; }

static double fabs_(double x) { return x < 0 ? -x : x; }

/* Roughly log-uniform in [lo, hi): a random octave, then uniform within it,
 * so values spread over many buckets (no libm: the test binary has none). */
static int64_t log_uniform(double lo, double hi) {
  int octaves = 0;
  while (lo * (double)(1ull << (octaves + 1)) <= hi) octaves++;
  for (;;) {
    double base = lo * (double)(1ull << (rng() % (uint64_t)(octaves + 1)));
    double v = base * (1 + uniform());
    if (v < hi) return (int64_t)v;
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double rel_err_bound(int digits) {
  double b = 1;
  while (digits-- > 0) b /= 10;
  return b;
}

/* Two histograms hold the same buckets, counts and exact figures. */
static int same_hist(const tri_hist *a, const tri_hist *b) {
  size_t ia = 0, ib = 0;
  int64_t va, vb;
  uint64_t ca, cb;
  for (;;) {
    int ra = tri_hist_next(a, &ia, &va, &ca), rb = tri_hist_next(b, &ib, &vb, &cb);
    if (ra != rb) return 0;
    if (!ra) break;
    if (va != vb || ca != cb) return 0;
  }
  uint64_t a1, a2, b1, b2;
  tri_hist_clamped(a, &a1, &a2);
  tri_hist_clamped(b, &b1, &b2);
  double ma = tri_hist_mean(a), mb = tri_hist_mean(b);
  return tri_hist_count(a) == tri_hist_count(b) &&
         tri_hist_min(a) == tri_hist_min(b) && tri_hist_max(a) == tri_hist_max(b) &&
         a1 == b1 && a2 == b2 && fabs_(ma - mb) <= 1e-9 * (ma > 1 ? ma : 1);
}

/* Every value lies in its bucket, and buckets are narrow enough. */
static void test_layout(void) {
  for (int d = 1; d <= TRI_HIST_MAX_DIGITS; d++) {
    tri_hist *h;
    CHECK_EQ_INT(tri_hist_new(&h, d), 0);
    int ok = 1;
    for (int i = 0; i < 20000; i++) {
      int64_t v = log_uniform(TRI_HIST_LOWEST, TRI_HIST_HIGHEST);
      int64_t lo = tri_hist_lowest_equivalent(h, v);
      int64_t hi = tri_hist_highest_equivalent(h, v);
      ok &= lo <= v && v <= hi;
      ok &= (double)(hi - lo) <= (double)lo * rel_err_bound(d);
    }
    /* the ends of the range */
    ok &= tri_hist_lowest_equivalent(h, TRI_HIST_LOWEST) <= TRI_HIST_LOWEST;
    ok &= tri_hist_highest_equivalent(h, TRI_HIST_HIGHEST) >= TRI_HIST_HIGHEST;
    CHECK(ok);
    CHECK_EQ_INT(tri_hist_sig_digits(h), d);
    tri_hist_del(h);
  }
  tri_hist *h;
  CHECK_EQ_INT(tri_hist_new(&h, 0), 0); /* default digits */
  CHECK_EQ_INT(tri_hist_sig_digits(h), TRI_HIST_DEFAULT_DIGITS);
  CHECK(tri_hist_memory(h) < 256 * 1024);
  CHECK_EQ_INT(tri_hist_add(h, h), TRI_ERR_INVALID);
  tri_hist_del(h);
  CHECK_EQ_INT(tri_hist_new(&h, 5), TRI_ERR_INVALID);
  CHECK_EQ_INT(tri_hist_new(&h, -1), TRI_ERR_INVALID);
}

/* Percentiles equal the oracle's order statistic within the stated error. */
static void test_percentiles(int digits) {
  static int64_t v[N_VALUES];
  tri_hist *h;
  CHECK_EQ_INT(tri_hist_new(&h, digits), 0);
  double sum = 0;
  for (int i = 0; i < N_VALUES; i++) {
    /* mostly 20 us .. 2 ms, with a tail to 5 s */
    v[i] = i % 100 == 0 ? log_uniform(2e6, 5e9) : log_uniform(2e4, 2e6);
    tri_hist_record(h, v[i]);
    sum += (double)v[i];
  }
  qsort(v, N_VALUES, sizeof(v[0]), cmp_i64);
  CHECK_EQ_INT(tri_hist_count(h), N_VALUES);
  CHECK_EQ_INT(tri_hist_min(h), v[0]);
  CHECK_EQ_INT(tri_hist_max(h), v[N_VALUES - 1]);
  CHECK(fabs_(tri_hist_mean(h) - sum / N_VALUES) < 1e-6 * sum / N_VALUES);
  /* p in thousandths of a percent, so the oracle's rank is exact */
  static const int64_t pm[] = {1,     1000,  10000, 25000, 50000, 75000,
                               90000, 99000, 99900, 99990, 99999, 100000};
  double bound = rel_err_bound(digits);
  for (size_t k = 0; k < sizeof(pm) / sizeof(pm[0]); k++) {
    int64_t rank = (pm[k] * N_VALUES + 99999) / 100000; /* ceil */
    if (rank < 1) rank = 1;
    int64_t want = v[rank - 1];
    int64_t got = tri_hist_percentile(h, (double)pm[k] / 1000.0);
    int ok = got >= want && (double)(got - want) <= (double)want * bound;
    if (!ok)
      fprintf(stderr, "digits %d p%.3f: got %lld want %lld\n", digits,
              (double)pm[k] / 1000.0, (long long)got, (long long)want);
    CHECK(ok);
  }
  CHECK_EQ_INT(tri_hist_percentile(h, 100), v[N_VALUES - 1]);
  CHECK_EQ_INT(tri_hist_percentile(h, 0), tri_hist_percentile(h, 1e-9));

  /* Export and rebuild: the pairs reproduce the buckets. */
  tri_hist *r;
  CHECK_EQ_INT(tri_hist_new(&r, digits), 0);
  size_t it = 0;
  int64_t val;
  uint64_t cnt, total = 0;
  int64_t last = -1;
  int increasing = 1;
  while (tri_hist_next(h, &it, &val, &cnt)) {
    increasing &= val > last;
    last = val;
    total += cnt;
    tri_hist_record_n(r, val, cnt);
  }
  CHECK(increasing);
  CHECK_EQ_INT(total, N_VALUES);
  for (size_t k = 0; k < sizeof(pm) / sizeof(pm[0]); k++) {
    double p = (double)pm[k] / 1000.0;
    /* Same buckets; only the [min, max] clamp can differ at the ends. */
    int64_t a = tri_hist_percentile(h, p), b = tri_hist_percentile(r, p);
    CHECK(tri_hist_lowest_equivalent(h, a) == tri_hist_lowest_equivalent(h, b));
  }
  tri_hist_del(r);
  tri_hist_del(h);
}

/* Merging per-thread histograms equals recording everything into one. */
static void test_merge(void) {
  tri_hist *all, *part[4], *merged, *coarse;
  CHECK_EQ_INT(tri_hist_new(&all, 3), 0);
  CHECK_EQ_INT(tri_hist_new(&merged, 3), 0);
  CHECK_EQ_INT(tri_hist_new(&coarse, 2), 0);
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(tri_hist_new(&part[i], 3), 0);
  for (int i = 0; i < 40000; i++) {
    int64_t v = log_uniform(500, 2e11); /* includes clamped values */
    tri_hist_record(all, v);
    tri_hist_record(part[i % 4], v);
  }
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(tri_hist_add(merged, part[i]), 0);
  CHECK(same_hist(all, merged));
  /* Adding an empty histogram changes nothing. */
  tri_hist_reset(part[0]);
  CHECK_EQ_INT(tri_hist_add(merged, part[0]), 0);
  CHECK(same_hist(all, merged));

  /* Across digits: exact figures, and percentiles within the coarser error. */
  CHECK_EQ_INT(tri_hist_add(coarse, all), 0);
  CHECK_EQ_INT(tri_hist_count(coarse), tri_hist_count(all));
  CHECK_EQ_INT(tri_hist_min(coarse), tri_hist_min(all));
  CHECK_EQ_INT(tri_hist_max(coarse), tri_hist_max(all));
  for (double p = 10; p < 100; p += 10) {
    double a = (double)tri_hist_percentile(all, p);
    double c = (double)tri_hist_percentile(coarse, p);
    CHECK(fabs_(c - a) <= a * (rel_err_bound(2) + rel_err_bound(3)));
  }
  for (int i = 0; i < 4; i++) tri_hist_del(part[i]);
  tri_hist_del(all);
  tri_hist_del(merged);
  tri_hist_del(coarse);
}

/* The naive HdrHistogram loop that record_corrected must match. */
static void naive_corrected(tri_hist *h, int64_t v, int64_t interval) {
  tri_hist_record(h, v);
  if (interval <= 0 || v <= interval) return;
  for (int64_t missing = v - interval; missing >= interval; missing -= interval)
    tri_hist_record(h, missing);
}

static void test_corrected(void) {
  tri_hist *h, *n;
  CHECK_EQ_INT(tri_hist_new(&h, 3), 0);
  CHECK_EQ_INT(tri_hist_new(&n, 3), 0);
  /* 10 ms stall with a 1 ms schedule: 10, 9, ..., 1 ms. */
  tri_hist_record_corrected(h, 10000000, 1000000);
  CHECK_EQ_INT(tri_hist_count(h), 10);
  CHECK_EQ_INT(tri_hist_min(h), 1000000);
  CHECK_EQ_INT(tri_hist_max(h), 10000000);
  CHECK(fabs_(tri_hist_mean(h) - 5500000.0) < 1e-6);
  /* Below or at the interval: nothing synthetic. */
  tri_hist_reset(h);
  tri_hist_record_corrected(h, 1000000, 1000000);
  tri_hist_record_corrected(h, 1999999, 1000000);
  tri_hist_record_corrected(h, 5000000, 0);
  CHECK_EQ_INT(tri_hist_count(h), 3);

  /* The bucketed fast path equals the naive loop, clamping included. */
  static const int64_t cases[][2] = {
      {10000000, 1000000}, {123456789, 333},     {5000, 300},
      {20000000, 7},       {250000000000LL, 30000000000LL},
      {99999999999LL, 1000000}, {3000, 1000},    {1000000007, 999983}};
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    tri_hist_reset(h);
    tri_hist_reset(n);
    tri_hist_record_corrected(h, cases[k][0], cases[k][1]);
    naive_corrected(n, cases[k][0], cases[k][1]);
    int ok = same_hist(h, n);
    if (!ok)
      fprintf(stderr, "corrected %lld/%lld: count %llu vs %llu\n",
              (long long)cases[k][0], (long long)cases[k][1],
              (unsigned long long)tri_hist_count(h),
              (unsigned long long)tri_hist_count(n));
    CHECK(ok);
  }
  tri_hist_del(h);
  tri_hist_del(n);
}

static void test_clamp(void) {
  tri_hist *h;
  CHECK_EQ_INT(tri_hist_new(&h, 3), 0);
  CHECK_EQ_INT(tri_hist_percentile(h, 50), 0);
  CHECK_EQ_INT(tri_hist_count(h), 0);
  CHECK_EQ_INT(tri_hist_max(h), 0);
  CHECK_EQ_INT(tri_hist_min(h), 0);
  size_t it = 0;
  int64_t v;
  uint64_t c;
  CHECK_EQ_INT(tri_hist_next(h, &it, &v, &c), 0);
  tri_hist_record(h, 10);        /* below 1 us */
  tri_hist_record(h, -5);        /* negative: below too */
  tri_hist_record(h, 200000000000LL); /* 200 s: above */
  tri_hist_record(h, 50000);
  uint64_t below, above;
  tri_hist_clamped(h, &below, &above);
  CHECK_EQ_INT(below, 2);
  CHECK_EQ_INT(above, 1);
  CHECK_EQ_INT(tri_hist_count(h), 4);
  CHECK_EQ_INT(tri_hist_min(h), TRI_HIST_LOWEST);
  CHECK_EQ_INT(tri_hist_max(h), TRI_HIST_HIGHEST);
  CHECK_EQ_INT(tri_hist_percentile(h, 100), TRI_HIST_HIGHEST);
  CHECK_EQ_INT(tri_hist_percentile(h, 50), TRI_HIST_LOWEST);
  CHECK(llabs(tri_hist_percentile(h, 75) - 50000) <= 50);
  tri_hist_reset(h);
  tri_hist_clamped(h, &below, &above);
  CHECK_EQ_INT(below + above + tri_hist_count(h), 0);
  tri_hist_del(h);
}

void test_hist(void) {
  test_layout();
  test_percentiles(3);
  test_percentiles(2);
  test_percentiles(1);
  test_merge();
  test_corrected();
  test_clamp();
}
