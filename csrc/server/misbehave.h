/*
 * misbehave: the x-misbehave fault modes of the embedded server, which let
 * tests see the client meet a broken server (see tri_server.h for each
 * mode): a reset mid-response, a GOAWAY, an undecodable header block, a bad
 * grpc-status, a wrong content-type, a tiny flow-control window, or no
 * answer at all.  Worker thread only.
 */
#ifndef TRI_SERVER_MISBEHAVE_H
#define TRI_SERVER_MISBEHAVE_H

#include "server/server_int.h"

/* The MB_* mode an x-misbehave value names (ASCII case ignored), MB_NONE
 * when it names none. */
uint8_t srv_misbehave_mode(const uint8_t *v, size_t vl);

/* Applies x-misbehave at the end of the request headers.  Returns 1 when
 * the mode took the stream over (nothing else is to be done with it). */
int srv_misbehave(srv_stream *st);

#endif
