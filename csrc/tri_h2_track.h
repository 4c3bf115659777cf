/*
 * tri_h2_track: where a connection's input stands in HTTP/2 framing.
 *
 * It sees every byte the connection hands to nghttp2, in order, and follows
 * only the frame boundaries (9-byte headers, then `length` payload bytes).
 * Between reads it can tell that the next input bytes are the payload of a
 * DATA frame on a given stream, and how many of them are still to come, so
 * the next read can put those bytes straight where that stream's message is
 * reassembled (tri_conn.c, "in-place reads") instead of copying them there
 * from the read buffer.  It judges nothing: nghttp2 still parses and checks
 * every byte.  The server's input has no connection preface magic: its first
 * byte is a frame header.
 *
 * Ownership: a plain value inside the connection; no pointers.
 */
#ifndef TRI_H2_TRACK_H
#define TRI_H2_TRACK_H

#include <stddef.h>
#include <stdint.h>

#define TRI_H2_FRAME_HEADER 9
#define TRI_H2_DATA 0x0
#define TRI_H2_FLAG_END_STREAM 0x1
#define TRI_H2_FLAG_PADDED 0x8

/* Fields of a 9-byte frame header. */
static inline uint32_t tri_h2_frame_length(const uint8_t *h) {
  return (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2];
}
static inline int32_t tri_h2_frame_stream(const uint8_t *h) {
  return (int32_t)(((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) &
                   0x7fffffffu);
}

typedef struct {
  uint8_t hdr[TRI_H2_FRAME_HEADER];
  size_t hdr_got;    /* header bytes of the next frame seen so far */
  uint32_t left;     /* payload bytes of the current frame still to come */
  uint32_t length;   /* the current frame's whole payload length */
  uint8_t type, flags;
  int32_t stream_id; /* of the current frame */
} tri_h2_track;

void tri_h2_track_init(tri_h2_track *t);

/* Follows n more input bytes. */
void tri_h2_track_feed(tri_h2_track *t, const uint8_t *p, size_t n);

/* The stream whose DATA the next input bytes are, or likely are: inside an
 * unpadded DATA frame's payload (*left: its bytes still to come), or right
 * after one without END_STREAM, at a frame boundary (*left = 0: a server
 * sending a large message sends its frames back to back).  Otherwise 0. */
int32_t tri_h2_track_in_data(const tri_h2_track *t, uint32_t *left);

#endif
