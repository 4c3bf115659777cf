/*
 * tri_inplace: one read that puts DATA payload where each stream's message is
 * reassembled, across several HTTP/2 frames and streams.
 *
 * A large response arrives as DATA frames of the server's frame size (16 KiB
 * by default), each behind a 9-byte header; with several responses in flight
 * a server sends their frames in turn (grpc-go: one frame per stream per
 * round).  Given where the input stands (tri_h2_track) and, per stream, where
 * its message continues and which stream's frame followed its last one (the
 * `lookup`), a plan lays out one readv:
 *   - the rest of the current DATA frame, into its stream's message (certain);
 *   - then bets: a 9-byte header slot, then the payload of the frame bet on,
 *     into the message of the stream bet on (the one that followed last
 *     time), and so on while messages want bytes (at most TRI_INPLACE_FRAMES);
 *   - then the connection's read buffer, for whatever follows.
 * After the read, settle checks each bet against the header that came: DATA,
 * not padded, the stream bet on, the length bet on (the last bet: at least
 * that), no END_STREAM before the last.  From the first lost bet on, every
 * byte (header slots, payload placed in messages, the read buffer's part) is
 * gathered back, in input order, at the front of the read buffer: nothing is
 * lost or misordered, it only goes the ordinary way (one copy, as without a
 * plan).  The bets' bytes plus the read buffer's part never exceed the read
 * buffer's size, so they always fit.
 *
 * Settle returns the pieces to hand to nghttp2, in input order: in-place ones
 * (a header slot, or payload at its final address) and at most one last
 * piece at the front of the read buffer.  Fed so, each payload piece reaches
 * its stream's DATA callback at the address its message wants next.
 *
 * Ownership: a plan borrows the message buffers the lookup named (they must
 * stay valid, written by no one else, until the last in-place piece has been
 * fed) and the read buffer; its header slots are its own.  No allocation.
 */
#ifndef TRI_INPLACE_H
#define TRI_INPLACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tri_h2_track.h"

#define TRI_INPLACE_FRAMES 32 /* frames bet on, at most */
/* The read buffer's part of a vector is at least this long (the bets take
 * the rest of its size, so that their bytes fit it when a bet is lost). */
#define TRI_INPLACE_TAIL_MIN (16u << 10)
/* A stream's message must want at least this much to be read into. */
#define TRI_INPLACE_MIN 4096u

/* What a stream can take now: its message's next byte goes to `dst`, `room`
 * bytes are still to come; `next` is the stream whose DATA frame followed
 * this stream's last one (0: unknown). */
typedef struct {
  uint8_t *dst;
  size_t room;
  int32_t next;
} tri_inplace_target;

/* Fills *out for stream `sid`; returns 0 when its bytes cannot be placed. */
typedef int (*tri_inplace_lookup)(void *ctx, int32_t sid, tri_inplace_target *out);

typedef struct {
  struct iovec iov[2 + 2 * TRI_INPLACE_FRAMES];
  int niov;
  size_t total; /* bytes the vector can take */
  int bets;
  int32_t bet_sid[TRI_INPLACE_FRAMES];
  uint8_t hdr[TRI_INPLACE_FRAMES][TRI_H2_FRAME_HEADER];
  size_t placed; /* after settle: payload bytes that stayed in place */
} tri_inplace_plan;

typedef struct {
  const uint8_t *p;
  size_t n;
  int in_place; /* 0: the read buffer's piece (the last one) */
} tri_inplace_piece;

/* Lays out the next read from where `t` stands, or returns 0 (read into
 * `rbuf` alone).  A frame bet on is `frame_bet` bytes long (the server's DATA
 * frame size while a message lasts: the largest it sent), or shorter when
 * its message ends sooner; 0 bets on nothing. */
int tri_inplace_plan_make(tri_inplace_plan *pl, const tri_h2_track *t,
                          uint32_t frame_bet, tri_inplace_lookup lookup, void *ctx,
                          uint8_t *rbuf, size_t rbuf_cap);

/* After the readv took `r` bytes: fills pieces[] (room for
 * 2 + 2 * TRI_INPLACE_FRAMES) and returns how many. */
int tri_inplace_settle(tri_inplace_plan *pl, size_t r, tri_inplace_piece *pieces);

#endif
