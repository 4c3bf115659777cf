/*
 * tri_frame: the 5-byte length-prefixed message envelope of gRPC (and of
 * Triple streaming): byte 0 flags, bytes 1-4 big-endian payload length.
 *
 * The decoder is incremental: it accepts the DATA bytes of a stream in any
 * split and reports, one event per call, a message header, a slice of
 * payload, or the end of a message.  It never copies or allocates; slices
 * point into the caller's input and are valid as long as that input is.
 */
#ifndef TRI_FRAME_H
#define TRI_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define TRI_FRAME_PREFIX 5
#define TRI_FRAME_FLAG_COMPRESSED 0x01

/* Writes the 5-byte prefix for a payload of `len` bytes into out. */
void tri_frame_put_prefix(uint8_t out[TRI_FRAME_PREFIX], uint8_t flags,
                          uint32_t len);

typedef enum {
  TRI_FRAME_NEED_MORE = 0, /* all input consumed; no event */
  TRI_FRAME_HEADER,        /* ev.flags and ev.length of the next message */
  TRI_FRAME_CHUNK,         /* ev.data/ev.len: the next slice of its payload */
  TRI_FRAME_END            /* the message is complete */
} tri_frame_event_type;

typedef struct {
  uint8_t flags;
  uint32_t length;    /* with HEADER */
  const uint8_t *data; /* with CHUNK: borrowed from the input */
  size_t len;
} tri_frame_event;

typedef struct {
  uint8_t hdr[TRI_FRAME_PREFIX];
  size_t hdr_got;  /* prefix bytes collected so far */
  uint32_t length; /* payload length of the current message */
  uint32_t got;    /* payload bytes delivered so far */
  int in_body;     /* prefix complete, END not yet reported */
} tri_frame_decoder;

void tri_frame_decoder_init(tri_frame_decoder *d);

/* Decodes from in[0..n).  Sets *used to the bytes consumed and fills *ev;
 * returns the event type.  Call again with the rest of the input (possibly
 * n == 0, to collect a pending END) until it returns TRI_FRAME_NEED_MORE. */
tri_frame_event_type tri_frame_decode(tri_frame_decoder *d, const uint8_t *in,
                                      size_t n, size_t *used,
                                      tri_frame_event *ev);

/* Nonzero when the decoder stopped in the middle of a message (a prefix or
 * payload is incomplete): at end of stream this means a truncated message. */
int tri_frame_decoder_partial(const tri_frame_decoder *d);

#endif
