/*
 * tri_hist: a latency histogram in nanoseconds, HDR-style (log-linear).
 *
 * Layout (the HdrHistogram scheme): values are split into buckets that each
 * double the range of the one before, and every bucket is split into
 * sub_bucket_half_count linear sub-buckets.  A value v >= TRI_HIST_LOWEST is
 * therefore kept with a relative error below 10^-sig_digits (exactly: below
 * 1/sub_bucket_half_count, which is 1/1024 for 3 digits).  The tracked range
 * is TRI_HIST_LOWEST (1 us) .. TRI_HIST_HIGHEST (100 s); values outside it
 * are clamped to the nearest end and counted (tri_hist_clamped).
 *
 * Memory: one block from tri_mem_alloc at tri_hist_new, sized by the number
 * of significant digits (about 230 KB for 3 digits, 30 KB for 2, 3.7 MB for
 * 4).  Nothing allocates afterwards: record, add, reset and the queries
 * only touch that block.
 *
 * Threads: a histogram is not thread-safe.  The intended use is one per
 * thread, merged with tri_hist_add once the threads are done.
 *
 * Exact figures: count, min, max, mean (sum of recorded values) and the
 * clamp counters are kept exactly (of the clamped values); percentiles are
 * read from the buckets.
 */
#ifndef TRI_HIST_H
#define TRI_HIST_H

#include <stddef.h>
#include <stdint.h>

#define TRI_HIST_LOWEST 1000LL              /* 1 us, in ns */
#define TRI_HIST_HIGHEST 100000000000LL     /* 100 s, in ns */
#define TRI_HIST_DEFAULT_DIGITS 3
#define TRI_HIST_MAX_DIGITS 4

typedef struct tri_hist tri_hist;

/* Creates an empty histogram with `sig_digits` significant digits (1..4; 0
 * means TRI_HIST_DEFAULT_DIGITS).  Returns 0, TRI_ERR_INVALID or
 * TRI_ERR_NOMEM.  *out is owned by the caller (tri_hist_del). */
int tri_hist_new(tri_hist **out, int sig_digits);

/* Frees `h` (NULL is ignored). */
void tri_hist_del(tri_hist *h);

/* Forgets every recorded value. */
void tri_hist_reset(tri_hist *h);

/* The configuration and the size of the block tri_hist_new allocated. */
int tri_hist_sig_digits(const tri_hist *h);
size_t tri_hist_memory(const tri_hist *h);

/* Records one value, or `n` times the same value.  Values below
 * TRI_HIST_LOWEST or above TRI_HIST_HIGHEST are clamped and counted. */
void tri_hist_record(tri_hist *h, int64_t value_ns);
void tri_hist_record_n(tri_hist *h, int64_t value_ns, uint64_t n);

/* Records `value_ns` and, when it is longer than `expected_interval_ns` (the
 * time between two intended sends), the values a client that had not been
 * held up would have seen: value - interval, value - 2*interval, ... down to
 * the last one >= interval (HdrHistogram's recordCorrectedValue, the
 * coordinated-omission correction).  Costs at most one step per bucket, not
 * one per synthetic value.  interval <= 0 records `value_ns` alone. */
void tri_hist_record_corrected(tri_hist *h, int64_t value_ns,
                               int64_t expected_interval_ns);

/* Adds every value of `src` into `dst` (src unchanged).  Histograms with the
 * same digits add bucket by bucket; otherwise each of src's buckets is
 * recorded into dst at its highest equivalent value.  Count, min, max, sum
 * and clamp counters are combined exactly either way.  Returns 0, or
 * TRI_ERR_INVALID when dst == src. */
int tri_hist_add(tri_hist *dst, const tri_hist *src);

/* Queries; all return 0 on an empty histogram. */
uint64_t tri_hist_count(const tri_hist *h);
int64_t tri_hist_min(const tri_hist *h);
int64_t tri_hist_max(const tri_hist *h);
double tri_hist_mean(const tri_hist *h);
/* Values that were below TRI_HIST_LOWEST / above TRI_HIST_HIGHEST. */
void tri_hist_clamped(const tri_hist *h, uint64_t *below, uint64_t *above);

/* The value at percentile p (0..100): the smallest recorded value v such
 * that at least ceil(p/100 * count) values (at least one) are <= v, given
 * as the highest value equivalent to v's bucket and kept within [min, max].
 * So p100 == max, and the result is within 10^-sig_digits of the exact
 * order statistic (relative). */
int64_t tri_hist_percentile(const tri_hist *h, double p);

/* The bucket of `value_ns`: its lowest and highest equivalent values. */
int64_t tri_hist_lowest_equivalent(const tri_hist *h, int64_t value_ns);
int64_t tri_hist_highest_equivalent(const tri_hist *h, int64_t value_ns);

/* Iterates the non-empty buckets in increasing order, for export.  Start
 * with *iter = 0; returns 1 and fills *value_ns (the bucket's highest
 * equivalent value, the same value percentiles report, so recording the
 * pairs into a histogram with the same digits rebuilds the buckets) and
 * *count for each bucket, 0 at the end. */
int tri_hist_next(const tri_hist *h, size_t *iter, int64_t *value_ns,
                  uint64_t *count);

#endif
