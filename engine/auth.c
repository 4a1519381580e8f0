/*
 * auth.c -- the authentication handshake and sealed sessions (see auth.h).
 * Every primitive is libsodium's.
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "ember.h"
#include "err.h"
#include "frame.h"

enum { ST_HELLO = 0, ST_CHALL, ST_PROOF, ST_DONE, ST_FAILED };

#define CHALL_LEN (AUTH_NONCE + AUTH_MAC)

static int init_key(auth_state *a, int role, const void *secret, size_t len) {
    static const char label[] = "ember auth v1 key";
    crypto_generichash_state st;
    memset(a, 0, sizeof *a);
    if (!secret || !len) return em__seterr(EM_EINVAL, "authentication: empty secret");
    if (sodium_init() < 0) return em__seterr(EM_EAUTH, "authentication: libsodium failed to initialize");
    a->role = role;
    crypto_generichash_init(&st, NULL, 0, sizeof a->key);
    crypto_generichash_update(&st, (const uint8_t *)label, sizeof label);
    crypto_generichash_update(&st, secret, len);
    crypto_generichash_final(&st, a->key, sizeof a->key);
    return 0;
}

/* H(HELLO body | server nonce): what both MACs and the session keys cover. */
static void transcript(const auth_state *a, uint8_t th[32]) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, a->hello, sizeof a->hello);
    crypto_generichash_update(&st, a->server_nonce, sizeof a->server_nonce);
    crypto_generichash_final(&st, th, 32);
}

/* MAC(label, T) under K. */
static void mac(const auth_state *a, const char *label, uint8_t out[AUTH_MAC]) {
    uint8_t th[32], msg[16 + 32];
    size_t n = strlen(label);
    transcript(a, th);
    memcpy(msg, label, n);
    memcpy(msg + n, th, sizeof th);
    crypto_auth(out, msg, n + sizeof th, a->key);
}

static int check_mac(const auth_state *a, const char *label, const uint8_t *got) {
    uint8_t th[32], msg[16 + 32];
    size_t n = strlen(label);
    transcript(a, th);
    memcpy(msg, label, n);
    memcpy(msg + n, th, sizeof th);
    return crypto_auth_verify(got, msg, n + sizeof th, a->key);
}

/* The session keys: one per direction, from K and T. */
static void derive(auth_state *a) {
    uint8_t th[32], msg[3 + 32], c2s[sizeof a->tx_key], s2c[sizeof a->tx_key];
    transcript(a, th);
    memcpy(msg + 3, th, sizeof th);
    memcpy(msg, "c2s", 3);
    crypto_generichash(c2s, sizeof c2s, msg, sizeof msg, a->key, sizeof a->key);
    memcpy(msg, "s2c", 3);
    crypto_generichash(s2c, sizeof s2c, msg, sizeof msg, a->key, sizeof a->key);
    memcpy(a->tx_key, a->role == AUTH_CLIENT ? c2s : s2c, sizeof a->tx_key);
    memcpy(a->rx_key, a->role == AUTH_CLIENT ? s2c : c2s, sizeof a->rx_key);
    sodium_memzero(c2s, sizeof c2s);
    sodium_memzero(s2c, sizeof s2c);
    a->done = 1;
    a->step = ST_DONE;
}

int auth_client_start(auth_state *a, const void *secret, size_t len, ebuf *out) {
    int rc = init_key(a, AUTH_CLIENT, secret, len);
    if (rc) return rc;
    a->hello[0] = AUTH_VERSION;
    randombytes_buf(a->hello + 1, AUTH_NONCE);
    a->step = ST_CHALL;
    return frame_put(out, FT_AUTH, a->hello, sizeof a->hello, sizeof a->hello);
}

int auth_server_start(auth_state *a, const void *secret, size_t len) {
    int rc = init_key(a, AUTH_SERVER, secret, len);
    if (!rc) a->step = ST_HELLO;
    return rc;
}

static int fail(auth_state *a, int kind, const char *why) {
    a->step = ST_FAILED;
    a->failure = kind;
    return em__seterr(EM_EAUTH, "authentication failed: %s", why);
}

int auth_step(auth_state *a, const uint8_t *body, size_t len, ebuf *out) {
    uint8_t reply[CHALL_LEN];
    if (a->role == AUTH_SERVER && a->step == ST_HELLO) {
        if (len != sizeof a->hello) return fail(a, AUTH_MALFORMED, "the client's first frame has the wrong size");
        if (body[0] != AUTH_VERSION) return fail(a, AUTH_MALFORMED, "the client speaks another handshake version");
        memcpy(a->hello, body, sizeof a->hello);
        randombytes_buf(a->server_nonce, AUTH_NONCE);
        memcpy(reply, a->server_nonce, AUTH_NONCE);
        mac(a, "server", reply + AUTH_NONCE);
        a->step = ST_PROOF;
        return frame_put(out, FT_AUTH, reply, CHALL_LEN, CHALL_LEN);
    }
    if (a->role == AUTH_CLIENT && a->step == ST_CHALL) {
        if (len != CHALL_LEN) return fail(a, AUTH_MALFORMED, "the server's challenge has the wrong size");
        memcpy(a->server_nonce, body, AUTH_NONCE);
        if (check_mac(a, "server", body + AUTH_NONCE))
            return fail(a, AUTH_WRONG_SECRET,
                        "the server did not prove the shared secret (a wrong secret on either side?)");
        mac(a, "client", reply);
        int rc = frame_put(out, FT_AUTH, reply, AUTH_MAC, AUTH_MAC);
        if (!rc) derive(a);
        return rc;
    }
    if (a->role == AUTH_SERVER && a->step == ST_PROOF) {
        if (len != AUTH_MAC) return fail(a, AUTH_MALFORMED, "the client's proof has the wrong size");
        if (check_mac(a, "client", body)) return fail(a, AUTH_WRONG_SECRET, "the client did not prove the shared secret");
        derive(a);
        return 0;
    }
    return fail(a, AUTH_MALFORMED,
                a->step == ST_FAILED ? "the handshake already failed" : "a handshake frame out of turn");
}

void auth_wipe(auth_state *a) { sodium_memzero(a, sizeof *a); }

/* ------------------------------------------------------------- sessions */

#define SS_HEADER crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define SS_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES

int seal_tx_start(seal_state *s, const auth_state *a, ebuf *out, size_t max) {
    uint8_t header[SS_HEADER];
    if (!a->done) return em__seterr(EM_ESTATE, "seal: the handshake is not done");
    crypto_secretstream_xchacha20poly1305_init_push(&s->st, header, a->tx_key);
    s->started = 1;
    return frame_put(out, FT_SEALED, header, sizeof header, max);
}

int seal_frame(seal_state *s, uint8_t type, const void *body, size_t len, ebuf *out, size_t max) {
    if (!s->started) return em__seterr(EM_ESTATE, "seal: the stream is not started");
    if (max < 1 + SS_ABYTES || len > max - 1 - SS_ABYTES || type < FT_MSG || type > FT_LAST || type == FT_SEALED)
        return em__seterr(EM_EINVAL, "seal: a frame of type %u and %zu bytes cannot be sealed", type, len);
    size_t clen = 1 + len + SS_ABYTES;
    uint8_t *plain = malloc(1 + len);
    int rc = plain ? frame_put_header(out, FT_SEALED, clen, max) : em__seterr(EM_ENOMEM, "seal: out of memory");
    if (!rc && ebuf_reserve(out, clen)) rc = em__seterr(EM_ENOMEM, "seal: out of memory");
    if (!rc) {
        plain[0] = type;
        if (len) memcpy(plain + 1, body, len);
        crypto_secretstream_xchacha20poly1305_push(&s->st, out->p + out->len, NULL, plain, 1 + len, NULL, 0,
                                                   crypto_secretstream_xchacha20poly1305_TAG_MESSAGE);
        out->len += clen;
    }
    if (plain) sodium_memzero(plain, 1 + len);
    free(plain);
    return rc;
}

int seal_open(seal_state *s, const auth_state *a, const uint8_t *body, size_t len, uint8_t *type, uint8_t **inner,
              size_t *inner_len) {
    *type = 0;
    *inner = NULL;
    *inner_len = 0;
    if (!a->done) return em__seterr(EM_ESTATE, "seal: the handshake is not done");
    if (!s->started) {
        if (len != SS_HEADER || crypto_secretstream_xchacha20poly1305_init_pull(&s->st, body, a->rx_key))
            return em__seterr(EM_EAUTH, "sealed session: a bad stream header");
        s->started = 1;
        return 0;
    }
    if (len < 1 + SS_ABYTES) return em__seterr(EM_EAUTH, "sealed session: a frame too short to be sealed");
    uint8_t *plain = malloc(len - SS_ABYTES), tag = 0;
    if (!plain) return em__seterr(EM_ENOMEM, "sealed session: out of memory");
    unsigned long long plen = 0;
    if (crypto_secretstream_xchacha20poly1305_pull(&s->st, plain, &plen, &tag, body, len, NULL, 0) ||
        tag != crypto_secretstream_xchacha20poly1305_TAG_MESSAGE || plen < 1 || plain[0] < FT_MSG ||
        plain[0] > FT_LAST || plain[0] == FT_SEALED) {
        free(plain);
        return em__seterr(EM_EAUTH, "sealed session: a frame failed to open (altered, replayed or out of order)");
    }
    *type = plain[0];
    *inner_len = (size_t)plen - 1;
    if (*inner_len) {
        memmove(plain, plain + 1, *inner_len);
        *inner = plain;
    } else {
        free(plain);
    }
    return 0;
}
