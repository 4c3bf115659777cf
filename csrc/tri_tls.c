#include "tri_tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "tri_dial.h"
#include "tri_error.h"

/* Writes OpenSSL's most useful reason for the failure into err. */
static void reason(SSL *ssl, const char *what, char *err, size_t errlen) {
  long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  unsigned long e = ERR_peek_last_error();
  if (vr != X509_V_OK) {
    snprintf(err, errlen, "%s: certificate verify failed: %s", what,
             X509_verify_cert_error_string(vr));
  } else if (e) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s: %s", what, buf);
  } else {
    snprintf(err, errlen, "%s: %s", what, errno ? strerror(errno) : "connection closed");
  }
  ERR_clear_error();
}

static int load_roots(SSL_CTX *ctx, const char *pem, size_t len) {
  BIO *bio = BIO_new_mem_buf(pem, (int)len);
  STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL) : NULL;
  int count = 0;
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
    X509_INFO *info = sk_X509_INFO_value(infos, i);
    if (info->x509 && X509_STORE_add_cert(store, info->x509)) count++;
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  BIO_free(bio);
  return count > 0 ? 0 : -1;
}

static int load_identity(SSL_CTX *ctx, const char *key, size_t kl,
                         const char *chain, size_t cl) {
  BIO *kb = BIO_new_mem_buf(key, (int)kl), *cb = BIO_new_mem_buf(chain, (int)cl);
  EVP_PKEY *pkey = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
  X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
  int ok = pkey && cert && SSL_CTX_use_certificate(ctx, cert) == 1 &&
           SSL_CTX_use_PrivateKey(ctx, pkey) == 1 &&
           SSL_CTX_check_private_key(ctx) == 1;
  /* The rest of the chain, if any. */
  X509 *extra;
  while (ok && cb && (extra = PEM_read_bio_X509(cb, NULL, NULL, NULL)))
    if (!SSL_CTX_add_extra_chain_cert(ctx, extra)) X509_free(extra);
  ERR_clear_error(); /* the chain loop ends on a "no start line" error */
  EVP_PKEY_free(pkey);
  X509_free(cert);
  BIO_free(kb);
  BIO_free(cb);
  return ok ? 0 : -1;
}

void tri_tls_ctx_skip_verify(SSL_CTX *ctx) { SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); }

int tri_tls_ctx_new(SSL_CTX **out, const char *root_pem, size_t root_len,
                    const char *key_pem, size_t key_len, const char *chain_pem,
                    size_t chain_len, char *err, size_t errlen) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    reason(NULL, "TLS context", err, errlen);
    return TRI_ERR_NOMEM;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  static const unsigned char alpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn));
  int bad = 0;
  if (root_pem) {
    if (load_roots(ctx, root_pem, root_len)) {
      snprintf(err, errlen, "root_certificates contain no usable PEM certificate");
      bad = 1;
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    reason(NULL, "system trust store", err, errlen);
    bad = 1;
  }
  if (!bad && (key_pem || chain_pem)) {
    if (!key_pem || !chain_pem) {
      snprintf(err, errlen, "private_key and certificate_chain go together");
      bad = 1;
    } else if (load_identity(ctx, key_pem, key_len, chain_pem, chain_len)) {
      snprintf(err, errlen, "private_key / certificate_chain could not be used "
                            "(not PEM, or they do not match)");
      bad = 1;
    }
  }
  ERR_clear_error();
  if (bad) {
    SSL_CTX_free(ctx);
    return TRI_ERR_INVALID;
  }
  *out = ctx;
  return 0;
}

void tri_tls_ctx_free(SSL_CTX *ctx) { SSL_CTX_free(ctx); }

void tri_tls_ctx_add_locations(SSL_CTX *ctx, const char *file, const char *dir) {
  if (file && *file) SSL_CTX_load_verify_file(ctx, file);
  if (dir && *dir) SSL_CTX_load_verify_dir(ctx, dir);
  ERR_clear_error(); /* a missing location is not an error: the default store may do */
}

SSL *tri_tls_new(SSL_CTX *ctx, int fd, const char *server_name, char *err,
                 size_t errlen) {
  SSL *ssl = SSL_new(ctx);
  if (!ssl || SSL_set_fd(ssl, fd) != 1) {
    reason(ssl, "TLS session", err, errlen);
    SSL_free(ssl);
    return NULL;
  }
  int is_ip = tri_dial_is_ip(server_name);
  if (!is_ip) SSL_set_tlsext_host_name(ssl, server_name);
  X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
  int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name)
                 : SSL_set1_host(ssl, server_name);
  if (ok != 1) {
    reason(ssl, "TLS server name", err, errlen);
    SSL_free(ssl);
    return NULL;
  }
  SSL_set_connect_state(ssl);
  return ssl;
}

void tri_tls_free(SSL *ssl) { SSL_free(ssl); }

int tri_tls_handshake(SSL *ssl, int *want_write, char *err, size_t errlen) {
  ERR_clear_error();
  errno = 0;
  int rv = SSL_do_handshake(ssl);
  if (rv == 1) {
    const unsigned char *proto;
    unsigned int len;
    SSL_get0_alpn_selected(ssl, &proto, &len);
    if (len != 2 || memcmp(proto, "h2", 2) != 0) {
      snprintf(err, errlen, "TLS handshake: server did not negotiate HTTP/2 (ALPN h2)");
      return TRI_ERR_CONNECT;
    }
    return 0;
  }
  int e = SSL_get_error(ssl, rv);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    *want_write = e == SSL_ERROR_WANT_WRITE;
    return TRI_ERR_AGAIN;
  }
  reason(ssl, "TLS handshake failed", err, errlen);
  return TRI_ERR_CONNECT;
}

ssize_t tri_tls_read(SSL *ssl, void *buf, size_t n, char *err, size_t errlen) {
  ERR_clear_error();
  errno = 0;
  int rv = SSL_read(ssl, buf, (int)(n > 0x7fffffff ? 0x7fffffff : n));
  if (rv > 0) return rv;
  int e = SSL_get_error(ssl, rv);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return TRI_ERR_AGAIN;
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  reason(ssl, "TLS read failed", err, errlen);
  return TRI_ERR_IO;
}

ssize_t tri_tls_write(SSL *ssl, const void *buf, size_t n, char *err,
                      size_t errlen) {
  ERR_clear_error();
  errno = 0;
  int rv = SSL_write(ssl, buf, (int)(n > 0x7fffffff ? 0x7fffffff : n));
  if (rv > 0) return rv;
  int e = SSL_get_error(ssl, rv);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return TRI_ERR_AGAIN;
  reason(ssl, "TLS write failed", err, errlen);
  return TRI_ERR_IO;
}
