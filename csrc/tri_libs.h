/*
 * tri_libs: the versions of the libraries the core is built with, as their
 * headers said at compile time and as the linked code reports at run time
 * (the same when they are linked statically; the dynamic loader's pick
 * otherwise).
 */
#ifndef TRI_LIBS_H
#define TRI_LIBS_H

#define TRI_LIB_COUNT 4

/* One library's versions; the strings are static (the libraries' own and
 * string literals), valid for the process, never freed. */
typedef struct {
  const char *name;     /* "nghttp2", "openssl", "zlib", "protobuf-c" */
  const char *compiled; /* the header's version */
  const char *linked;   /* the running library's own report */
} tri_lib_version;

/* Fills the caller's `out` with one row per library. */
void tri_lib_versions(tri_lib_version out[TRI_LIB_COUNT]);

#endif
