/*
 * tri_connectivity: a channel's connectivity state, in grpcio's terms
 * (grpc.ChannelConnectivity), read from the channel's connection and backoff.
 *
 *   SHUTDOWN           the channel is closed
 *   READY              the current connection got the server's SETTINGS
 *   CONNECTING         a connection attempt is under way
 *   TRANSIENT_FAILURE  the last attempt failed and the backoff still runs
 *   IDLE               no connection and nothing stops the next attempt
 *                      (never used, or the last connection worked and ended)
 *
 * The state is a snapshot: nothing is pushed to anyone when it changes; the
 * Python layer polls it for subscribers.  No ownership changes hands.
 * Threads: callable from any thread, concurrently with calls.
 */
#ifndef TRI_CONNECTIVITY_H
#define TRI_CONNECTIVITY_H

#include "tri_channel.h"

/* grpcio's ChannelConnectivity values, in its order. */
enum {
  TRI_STATE_IDLE = 0,
  TRI_STATE_CONNECTING = 1,
  TRI_STATE_READY = 2,
  TRI_STATE_TRANSIENT_FAILURE = 3,
  TRI_STATE_SHUTDOWN = 4
};

/* The channel's state now.  With try_to_connect nonzero, an IDLE channel, or
 * one whose failed attempt's backoff has run out, starts a connection attempt
 * (as the next call would) and the state returned is the one after that:
 * CONNECTING, or TRANSIENT_FAILURE if the backoff still runs or the attempt
 * could not even start. */
int tri_channel_state(tri_channel *ch, int try_to_connect);

#endif
