/*
 * tri_hist.c: the HDR log-linear histogram (see tri_hist.h).
 *
 * Index arithmetic follows HdrHistogram_c (hdr_histogram.c): a value's
 * bucket is found from its highest set bit, its sub-bucket by shifting it
 * down to the bucket's resolution, and bucket 0 also covers the values below
 * the first power-of-two boundary so that the lower half of every other
 * bucket is never used (that is why counts_len is (buckets + 1) * half).
 */
#include "tri_hist.h"

#include <string.h>

#include "tri_error.h"
#include "tri_mem.h"

struct tri_hist {
  int sig_digits;
  int unit_magnitude;             /* log2 of the finest resolution, in ns */
  int half_magnitude;             /* log2(sub_bucket_half_count) */
  int64_t sub_bucket_half_count;
  int64_t sub_bucket_count;
  int64_t sub_bucket_mask;        /* (sub_bucket_count - 1) << unit */
  int bucket_count;
  size_t counts_len;
  uint64_t total;
  uint64_t below, above;          /* clamped values */
  int64_t min, max;               /* of the recorded (clamped) values */
  double sum;
  uint64_t counts[];
};

static int bucket_of(const tri_hist *h, int64_t v) {
  int pow2ceiling = 64 - __builtin_clzll((uint64_t)(v | h->sub_bucket_mask));
  return pow2ceiling - h->unit_magnitude - (h->half_magnitude + 1);
}

static int64_t sub_bucket_of(const tri_hist *h, int64_t v, int b) {
  return v >> (b + h->unit_magnitude);
}

static size_t index_of(const tri_hist *h, int64_t v) {
  int b = bucket_of(h, v);
  int64_t sb = sub_bucket_of(h, v, b);
  return (size_t)(((int64_t)(b + 1) << h->half_magnitude) +
                  (sb - h->sub_bucket_half_count));
}

/* The lowest value of counts index i, and the width of its bucket. */
static int64_t value_at_index(const tri_hist *h, size_t i, int64_t *width) {
  int b = (int)(i >> h->half_magnitude) - 1;
  int64_t sb = (int64_t)(i & (size_t)(h->sub_bucket_half_count - 1)) +
               h->sub_bucket_half_count;
  if (b < 0) {
    sb -= h->sub_bucket_half_count;
    b = 0;
  }
  if (width) *width = (int64_t)1 << (h->unit_magnitude + b);
  return sb << (b + h->unit_magnitude);
}

static int64_t clamp(int64_t v, uint64_t n, uint64_t *below, uint64_t *above) {
  if (v < TRI_HIST_LOWEST) {
    *below += n;
    return TRI_HIST_LOWEST;
  }
  if (v > TRI_HIST_HIGHEST) {
    *above += n;
    return TRI_HIST_HIGHEST;
  }
  return v;
}

int tri_hist_new(tri_hist **out, int sig_digits) {
  if (sig_digits == 0) sig_digits = TRI_HIST_DEFAULT_DIGITS;
  if (sig_digits < 1 || sig_digits > TRI_HIST_MAX_DIGITS) return TRI_ERR_INVALID;
  /* Sub-buckets: enough that the upper half resolves 10^d steps. */
  int64_t single_unit = 2;
  for (int i = 0; i < sig_digits; i++) single_unit *= 10;
  int count_magnitude = 0;
  while (((int64_t)1 << count_magnitude) < single_unit) count_magnitude++;
  int half_magnitude = count_magnitude - 1;
  int64_t half = (int64_t)1 << half_magnitude;
  /* The finest resolution: the largest power of two such that the lowest
   * tracked value still falls in the upper half of bucket 0 (where the
   * relative error is below 1/half). */
  int unit = 0;
  while (((half << (unit + 1))) <= TRI_HIST_LOWEST) unit++;
  int64_t sub_count = (int64_t)1 << count_magnitude;
  int64_t untrackable = sub_count << unit;
  int buckets = 1;
  while (untrackable <= TRI_HIST_HIGHEST) {
    untrackable <<= 1;
    buckets++;
  }
  size_t len = (size_t)(buckets + 1) * (size_t)half;
  tri_hist *h = tri_mem_calloc(NULL, 1, sizeof(*h) + len * sizeof(uint64_t));
  if (!h) return TRI_ERR_NOMEM;
  h->sig_digits = sig_digits;
  h->unit_magnitude = unit;
  h->half_magnitude = half_magnitude;
  h->sub_bucket_half_count = half;
  h->sub_bucket_count = sub_count;
  h->sub_bucket_mask = (sub_count - 1) << unit;
  h->bucket_count = buckets;
  h->counts_len = len;
  tri_hist_reset(h);
  *out = h;
  return 0;
}

void tri_hist_del(tri_hist *h) { tri_mem_free(h); }

void tri_hist_reset(tri_hist *h) {
  memset(h->counts, 0, h->counts_len * sizeof(uint64_t));
  h->total = h->below = h->above = 0;
  h->min = INT64_MAX;
  h->max = 0;
  h->sum = 0;
}

int tri_hist_sig_digits(const tri_hist *h) { return h->sig_digits; }

size_t tri_hist_memory(const tri_hist *h) {
  return sizeof(*h) + h->counts_len * sizeof(uint64_t);
}

/* Adds n values spanning [lo, hi] to one counter (all in one bucket). */
static void add_run(tri_hist *h, size_t idx, uint64_t n, int64_t lo, int64_t hi,
                    double sum) {
  h->counts[idx] += n;
  h->total += n;
  h->sum += sum;
  if (lo < h->min) h->min = lo;
  if (hi > h->max) h->max = hi;
}

void tri_hist_record_n(tri_hist *h, int64_t value_ns, uint64_t n) {
  if (n == 0) return;
  int64_t v = clamp(value_ns, n, &h->below, &h->above);
  add_run(h, index_of(h, v), n, v, v, (double)v * (double)n);
}

void tri_hist_record(tri_hist *h, int64_t value_ns) {
  tri_hist_record_n(h, value_ns, 1);
}

void tri_hist_record_corrected(tri_hist *h, int64_t value_ns,
                               int64_t interval) {
  tri_hist_record(h, value_ns);
  if (interval <= 0 || value_ns <= interval) return;
  /* The synthetic values value - k*interval, k = 1..K, all >= interval. */
  int64_t cur = value_ns - interval;
  uint64_t left = (uint64_t)(value_ns / interval - 1);
  while (left > 0) {
    uint64_t n;
    if (cur > TRI_HIST_HIGHEST) {
      n = (uint64_t)((cur - TRI_HIST_HIGHEST - 1) / interval) + 1;
      if (n > left) n = left;
      h->above += n;
      add_run(h, index_of(h, TRI_HIST_HIGHEST), n, TRI_HIST_HIGHEST,
              TRI_HIST_HIGHEST, (double)TRI_HIST_HIGHEST * (double)n);
    } else if (cur < TRI_HIST_LOWEST) {
      n = left;
      h->below += n;
      add_run(h, index_of(h, TRI_HIST_LOWEST), n, TRI_HIST_LOWEST,
              TRI_HIST_LOWEST, (double)TRI_HIST_LOWEST * (double)n);
    } else {
      int64_t lo = tri_hist_lowest_equivalent(h, cur);
      if (lo < TRI_HIST_LOWEST) lo = TRI_HIST_LOWEST;
      n = (uint64_t)((cur - lo) / interval) + 1;
      if (n > left) n = left;
      /* cur + (cur - interval) + ... n terms */
      double dn = (double)n;
      double sum = dn * (double)cur - (double)interval * dn * (dn - 1) / 2;
      add_run(h, index_of(h, cur), n, cur - (int64_t)(n - 1) * interval, cur,
              sum);
    }
    left -= n;
    cur -= (int64_t)n * interval;
  }
}

int tri_hist_add(tri_hist *dst, const tri_hist *src) {
  if (dst == src) return TRI_ERR_INVALID;
  if (src->total == 0) return 0;
  if (dst->sig_digits == src->sig_digits) {
    for (size_t i = 0; i < src->counts_len; i++) dst->counts[i] += src->counts[i];
  } else {
    size_t it = 0;
    int64_t v;
    uint64_t n;
    while (tri_hist_next(src, &it, &v, &n)) {
      if (v > TRI_HIST_HIGHEST) v = TRI_HIST_HIGHEST;
      if (v < TRI_HIST_LOWEST) v = TRI_HIST_LOWEST;
      dst->counts[index_of(dst, v)] += n;
    }
  }
  dst->total += src->total;
  dst->below += src->below;
  dst->above += src->above;
  dst->sum += src->sum;
  if (src->min < dst->min) dst->min = src->min;
  if (src->max > dst->max) dst->max = src->max;
  return 0;
}

uint64_t tri_hist_count(const tri_hist *h) { return h->total; }
int64_t tri_hist_min(const tri_hist *h) { return h->total ? h->min : 0; }
int64_t tri_hist_max(const tri_hist *h) { return h->total ? h->max : 0; }
double tri_hist_mean(const tri_hist *h) {
  return h->total ? h->sum / (double)h->total : 0.0;
}

void tri_hist_clamped(const tri_hist *h, uint64_t *below, uint64_t *above) {
  if (below) *below = h->below;
  if (above) *above = h->above;
}

int64_t tri_hist_lowest_equivalent(const tri_hist *h, int64_t v) {
  if (v < 0) v = 0;
  return value_at_index(h, index_of(h, v), NULL);
}

int64_t tri_hist_highest_equivalent(const tri_hist *h, int64_t v) {
  if (v < 0) v = 0;
  int64_t width;
  int64_t lo = value_at_index(h, index_of(h, v), &width);
  return lo + width - 1;
}

int64_t tri_hist_percentile(const tri_hist *h, double p) {
  if (h->total == 0) return 0;
  if (!(p > 0)) p = 0; /* also NaN */
  if (p > 100) p = 100;
  /* The rank, ceil(p/100 * total), without letting rounding noise such as
   * 99.9/100*1000 = 999.0000000000001 push it one too far. */
  double x = p / 100.0 * (double)h->total;
  uint64_t rank = (uint64_t)x;
  if (x - (double)rank > 1e-9 * (x > 1 ? x : 1)) rank++;
  if (rank < 1) rank = 1;
  if (rank > h->total) rank = h->total;
  uint64_t seen = 0;
  for (size_t i = 0; i < h->counts_len; i++) {
    seen += h->counts[i];
    if (seen >= rank) {
      int64_t width;
      int64_t v = value_at_index(h, i, &width) + width - 1;
      if (v > h->max) v = h->max;
      if (v < h->min) v = h->min;
      return v;
    }
  }
  return h->max;
}

int tri_hist_next(const tri_hist *h, size_t *iter, int64_t *value_ns,
                  uint64_t *count) {
  for (size_t i = *iter; i < h->counts_len; i++) {
    if (!h->counts[i]) continue;
    int64_t width;
    *value_ns = value_at_index(h, i, &width) + width - 1;
    *count = h->counts[i];
    *iter = i + 1;
    return 1;
  }
  *iter = h->counts_len;
  return 0;
}
