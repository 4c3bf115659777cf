#include "tri_libs.h"

#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <protobuf-c/protobuf-c.h>
#include <zlib.h>

void tri_lib_versions(tri_lib_version out[TRI_LIB_COUNT]) {
  out[0] = (tri_lib_version){"nghttp2", NGHTTP2_VERSION,
                             nghttp2_version(0)->version_str};
  out[1] = (tri_lib_version){"openssl", OPENSSL_VERSION_TEXT,
                             OpenSSL_version(OPENSSL_VERSION)};
  out[2] = (tri_lib_version){"zlib", ZLIB_VERSION, zlibVersion()};
  out[3] =
      (tri_lib_version){"protobuf-c", PROTOBUF_C_VERSION, protobuf_c_version()};
}
