/*
 * tri_tls: OpenSSL for client connections: a context per channel (roots,
 * optional client certificate, ALPN "h2", TLS 1.2 minimum, peer verification
 * on) and a non-blocking session per connection (SNI, host-name check).
 *
 * Verification is on unless tri_tls_ctx_skip_verify turned it off: the peer's chain must lead to the given roots
 * (or, without roots, the system store) and its name must match the target
 * host or the override.  Errors are returned as TRI_ERR_* codes with a
 * one-line reason in `err` (OpenSSL's reason or the verify result); no key
 * material or certificate contents ever go into it.
 */
#ifndef TRI_TLS_H
#define TRI_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <sys/types.h>

/* Creates the context.  PEM inputs may be NULL: no roots means the system
 * store; key and chain go together (mTLS) or not at all.  The PEM bytes are
 * copied into OpenSSL's objects; the caller keeps its buffers.  Returns 0 and
 * *out (free with tri_tls_ctx_free), or TRI_ERR_INVALID with a reason. */
int tri_tls_ctx_new(SSL_CTX **out, const char *root_pem, size_t root_len,
                    const char *key_pem, size_t key_len, const char *chain_pem,
                    size_t chain_len, char *err, size_t errlen);
void tri_tls_ctx_free(SSL_CTX *ctx);

/* Trusts, besides what `ctx` already trusts, the PEM CA certificates in
 * `file` and the hashed CA directory `dir` (either may be NULL or name
 * nothing: a location that cannot be read is skipped).  For the system store
 * when OpenSSL's compiled-in default locations are not this host's (a
 * statically linked OpenSSL): the caller passes the host's, e.g. Python's
 * ssl.get_default_verify_paths(). */
void tri_tls_ctx_add_locations(SSL_CTX *ctx, const char *file, const char *dir);

/* Turns peer verification off on `ctx`: any certificate chain and name is
 * accepted.  Only for load tests against servers with throw-away
 * certificates (the load generator's --skipTLS, the channel option
 * triple.tls_skip_verify); never a default. */
void tri_tls_ctx_skip_verify(SSL_CTX *ctx);

/* Starts a client session on connected socket fd, verifying `server_name`
 * (also sent as SNI unless it is an IP address).  Returns the SSL (owned by
 * the caller: tri_tls_free) or NULL with a reason. */
SSL *tri_tls_new(SSL_CTX *ctx, int fd, const char *server_name, char *err,
                 size_t errlen);
void tri_tls_free(SSL *ssl);

/* Advances the handshake.  Returns 0 when done (and "h2" was negotiated),
 * TRI_ERR_AGAIN while it needs the socket (*want_write says for writing), or
 * TRI_ERR_CONNECT with the reason (verification, ALPN, protocol). */
int tri_tls_handshake(SSL *ssl, int *want_write, char *err, size_t errlen);

/* Reads decrypted bytes: returns > 0, 0 at a clean close, TRI_ERR_AGAIN
 * when nothing is ready, or TRI_ERR_IO with a reason. */
ssize_t tri_tls_read(SSL *ssl, void *buf, size_t n, char *err, size_t errlen);

/* Writes: returns bytes taken (> 0), TRI_ERR_AGAIN, or TRI_ERR_IO.  After
 * TRI_ERR_AGAIN retry with the same bytes (the buffer may move). */
ssize_t tri_tls_write(SSL *ssl, const void *buf, size_t n, char *err,
                      size_t errlen);

#endif
