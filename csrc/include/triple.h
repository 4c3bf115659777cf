/*
 * triple.h: the public C API of triple_py's core, in one include.
 * Each header documents its own contracts; start with tri_channel.h and
 * tri_call.h.
 */
#ifndef TRIPLE_H
#define TRIPLE_H

#include "../tri_buf.h"
#include "../tri_call.h"
#include "../tri_channel.h"
#include "../tri_error.h"
#include "../tri_frame.h"
#include "../tri_pb.h"
#include "../tri_stats.h"
#include "../tri_wire.h"

#define TRIPLE_VERSION "0.1.0"

#endif
