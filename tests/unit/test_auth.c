/*
 * test_auth.c -- the authentication handshake and sealed sessions
 * (engine/auth.c), driven frame by frame without sockets: two sides with
 * the same secret authenticate and agree on keys; a wrong secret is
 * refused by either side; a recorded handshake replayed to a new server
 * fails; a MAC reflected from the server as the client's proof fails;
 * frames of the wrong size or out of turn fail; sealed frames open only
 * once, in order, unaltered.
 */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "auth.h"
#include "ember.h"
#include "frame.h"

#define MAX (1u << 20)

/* The body of the one frame in b (checked to be FT_AUTH). */
static const uint8_t *body_of(const ebuf *b, size_t *len) {
    if (b->len < FRAME_HEADER) return NULL;
    *len = (size_t)b->p[0] << 24 | (size_t)b->p[1] << 16 | (size_t)b->p[2] << 8 | b->p[3];
    return b->p[4] == FT_AUTH && *len + FRAME_HEADER == b->len ? b->p + FRAME_HEADER : NULL;
}

/* Run a handshake; returns the server's last auth_step code (or the
 * client's, if it failed first).  Keeps the frames in hello/chall/proof. */
static int handshake(auth_state *c, auth_state *s, const char *csecret, const char *ssecret, ebuf *hello,
                     ebuf *chall, ebuf *proof) {
    size_t len;
    const uint8_t *b;
    if (auth_client_start(c, csecret, strlen(csecret), hello) || auth_server_start(s, ssecret, strlen(ssecret)))
        return -100;
    if (!(b = body_of(hello, &len))) return -101;
    int rc = auth_step(s, b, len, chall);
    if (rc) return rc;
    if (!(b = body_of(chall, &len))) return -102;
    rc = auth_step(c, b, len, proof);
    if (rc) return rc;
    if (!(b = body_of(proof, &len))) return -103;
    return auth_step(s, b, len, NULL);
}

TEST(auth_same_secret_agrees_on_keys) {
    auth_state c, s;
    ebuf h = EBUF_INIT, ch = EBUF_INIT, pr = EBUF_INIT;
    CHECK_OK(handshake(&c, &s, "correct horse", "correct horse", &h, &ch, &pr));
    CHECK(c.done && s.done);
    CHECK(!memcmp(c.tx_key, s.rx_key, sizeof c.tx_key));
    CHECK(!memcmp(c.rx_key, s.tx_key, sizeof c.rx_key));
    CHECK(memcmp(c.tx_key, c.rx_key, sizeof c.tx_key) != 0); /* one key per direction */
    auth_wipe(&c);
    auth_wipe(&s);
    ebuf_free(&h);
    ebuf_free(&ch);
    ebuf_free(&pr);
}

TEST(auth_wrong_secret_refused_by_both_sides) {
    auth_state c, s;
    ebuf h = EBUF_INIT, ch = EBUF_INIT, pr = EBUF_INIT;
    /* The client checks the server first: it refuses and sends no proof. */
    CHECK_EQ_I64(handshake(&c, &s, "secret-a", "secret-b", &h, &ch, &pr), EM_EAUTH);
    CHECK_STR_CONTAINS(em_errmsg(), "the server did not prove the shared secret");
    CHECK(!c.done && !s.done);
    CHECK_EQ_I64((int64_t)pr.len, 0);
    /* A client that forges a proof without the secret: the server refuses. */
    size_t len;
    uint8_t fake[AUTH_MAC];
    memset(fake, 0x5a, sizeof fake);
    CHECK_EQ_I64(auth_step(&s, fake, sizeof fake, NULL), EM_EAUTH);
    CHECK_STR_CONTAINS(em_errmsg(), "the client did not prove the shared secret");
    CHECK(!s.done);
    /* Once failed, it stays failed. */
    const uint8_t *hb = body_of(&h, &len);
    CHECK(hb);
    CHECK_EQ_I64(auth_step(&s, hb, len, NULL), EM_EAUTH);
    ebuf_free(&h);
    ebuf_free(&ch);
    ebuf_free(&pr);
}

TEST(auth_replayed_handshake_fails) {
    /* A recorded good handshake (HELLO, PROOF) replayed to a new server:
     * its challenge has a fresh nonce, so the old proof does not match. */
    auth_state c, s, s2;
    ebuf h = EBUF_INIT, ch = EBUF_INIT, pr = EBUF_INIT, ch2 = EBUF_INIT;
    CHECK_OK(handshake(&c, &s, "k", "k", &h, &ch, &pr));
    size_t len;
    CHECK_OK(auth_server_start(&s2, "k", 1));
    const uint8_t *b = body_of(&h, &len);
    CHECK(b);
    CHECK_OK(auth_step(&s2, b, len, &ch2));
    CHECK(memcmp(ch.p, ch2.p, ch.len) != 0);
    b = body_of(&pr, &len);
    CHECK(b);
    CHECK_EQ_I64(auth_step(&s2, b, len, NULL), EM_EAUTH);
    CHECK(!s2.done);
    ebuf_free(&h);
    ebuf_free(&ch);
    ebuf_free(&pr);
    ebuf_free(&ch2);
}

TEST(auth_reflected_mac_fails) {
    /* An attacker without the secret connects, gets the server's challenge
     * and hands the server's own MAC back as the client's proof. */
    auth_state s;
    ebuf ch = EBUF_INIT;
    uint8_t hello[1 + AUTH_NONCE];
    hello[0] = AUTH_VERSION;
    memset(hello + 1, 7, AUTH_NONCE);
    CHECK_OK(auth_server_start(&s, "k", 1));
    CHECK_OK(auth_step(&s, hello, sizeof hello, &ch));
    size_t len;
    const uint8_t *b = body_of(&ch, &len);
    CHECK(b && len == AUTH_NONCE + AUTH_MAC);
    CHECK_EQ_I64(auth_step(&s, b + AUTH_NONCE, AUTH_MAC, NULL), EM_EAUTH);
    CHECK(!s.done);
    ebuf_free(&ch);
}

TEST(auth_bad_frames_fail) {
    auth_state s, c;
    ebuf out = EBUF_INIT;
    uint8_t junk[100];
    memset(junk, 1, sizeof junk);
    CHECK_OK(auth_server_start(&s, "k", 1));
    CHECK_EQ_I64(auth_step(&s, junk, 10, &out), EM_EAUTH); /* wrong size */
    CHECK_STR_CONTAINS(em_errmsg(), "wrong size");
    CHECK_OK(auth_server_start(&s, "k", 1));
    junk[0] = 9;
    CHECK_EQ_I64(auth_step(&s, junk, 1 + AUTH_NONCE, &out), EM_EAUTH); /* another version */
    CHECK_STR_CONTAINS(em_errmsg(), "another handshake version");
    CHECK_OK(auth_client_start(&c, "k", 1, &out));
    CHECK_EQ_I64(auth_step(&c, junk, 5, &out), EM_EAUTH);
    CHECK_EQ_I64(auth_server_start(&s, "", 0), EM_EINVAL); /* no secret */
    ebuf_free(&out);
}

/* ------------------------------------------------------------ sessions */

/* Feed b's frames into a reader; returns the bodies of FT_SEALED frames. */
static int next_frame(const ebuf *b, size_t *pos, uint8_t **body, size_t *len) {
    frame_reader r;
    size_t used;
    uint8_t type;
    fr_init(&r, MAX);
    int rc = fr_feed(&r, b->p + *pos, b->len - *pos, &used);
    *pos += used;
    *body = rc == 1 ? fr_take(&r, &type, len) : NULL;
    fr_free(&r);
    return rc == 1 && type == FT_SEALED ? 0 : -1;
}

TEST(auth_sealed_frames_open_once_in_order) {
    auth_state c, s;
    ebuf h = EBUF_INIT, ch = EBUF_INIT, pr = EBUF_INIT, wire = EBUF_INIT;
    CHECK_OK(handshake(&c, &s, "k2", "k2", &h, &ch, &pr));
    seal_state tx, rx;
    memset(&tx, 0, sizeof tx);
    memset(&rx, 0, sizeof rx);
    CHECK_OK(seal_tx_start(&tx, &c, &wire, MAX));
    CHECK_OK(seal_frame(&tx, FT_MSG, "first", 5, &wire, MAX));
    CHECK_OK(seal_frame(&tx, FT_CHUNK, NULL, 0, &wire, MAX));
    CHECK_OK(seal_frame(&tx, FT_MSG, "third", 5, &wire, MAX));
    CHECK(memmem(wire.p, wire.len, "first", 5) == NULL); /* encrypted */
    size_t pos = 0, len, ilen;
    uint8_t *b[4], type, *inner;
    for (int i = 0; i < 4; i++) CHECK_OK(next_frame(&wire, &pos, &b[i], &len));
    /* The header, then a frame out of order (the third): refused. */
    size_t l0 = 24;
    CHECK_OK(seal_open(&rx, &s, b[0], l0, &type, &inner, &ilen));
    CHECK_EQ_I64(type, 0);
    seal_state rx2 = rx; /* the stream's state before the first message */
    CHECK_EQ_I64(seal_open(&rx, &s, b[3], 5 + 1 + 17, &type, &inner, &ilen), EM_EAUTH);
    /* In order, from the saved state: each opens once. */
    rx = rx2;
    CHECK_OK(seal_open(&rx, &s, b[1], 5 + 1 + 17, &type, &inner, &ilen));
    CHECK(type == FT_MSG && ilen == 5 && !memcmp(inner, "first", 5));
    free(inner);
    CHECK_EQ_I64(seal_open(&rx, &s, b[1], 5 + 1 + 17, &type, &inner, &ilen), EM_EAUTH); /* replayed */
    rx2 = rx;
    rx = rx2;
    CHECK_OK(seal_open(&rx, &s, b[2], 1 + 17, &type, &inner, &ilen));
    CHECK(type == FT_CHUNK && ilen == 0 && inner == NULL);
    /* One flipped bit: refused. */
    b[3][3] ^= 0x10;
    CHECK_EQ_I64(seal_open(&rx, &s, b[3], 5 + 1 + 17, &type, &inner, &ilen), EM_EAUTH);
    CHECK_STR_CONTAINS(em_errmsg(), "failed to open");
    /* The server's own direction uses the other key: the client's frames do
     * not open as if they were the server's. */
    seal_state wrong;
    memset(&wrong, 0, sizeof wrong);
    CHECK_EQ_I64(seal_open(&wrong, &c, b[0], l0, &type, &inner, &ilen), 0); /* a header opens any stream */
    CHECK_EQ_I64(seal_open(&wrong, &c, b[1], 5 + 1 + 17, &type, &inner, &ilen), EM_EAUTH);
    for (int i = 0; i < 4; i++) free(b[i]);
    ebuf_free(&h);
    ebuf_free(&ch);
    ebuf_free(&pr);
    ebuf_free(&wire);
}
