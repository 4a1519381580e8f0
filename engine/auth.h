/*
 * auth.h -- mutual authentication of two ember processes that share a
 * secret, and the encrypted session that may follow.  Pure code over frame
 * bodies (frame.h): no sockets, no clock.
 *
 * The handshake (frames of type FT_AUTH, fixed layouts):
 *
 *   client -> server  HELLO   version (1 byte) | client nonce (32)
 *   server -> client  CHALL   server nonce (32) | MAC("server", T)
 *   client -> server  PROOF   MAC("client", T)
 *
 * T is the transcript: HELLO's body and the server's nonce.  K, the MAC key,
 * is derived from the secret (BLAKE2b, libsodium's crypto_generichash);
 * the MAC is HMAC-SHA-512-256 (crypto_auth), checked in constant time.
 * Each side proves the secret over nonces it did not choose, so a recorded
 * handshake replayed to a new server fails (its nonce is new), and a MAC
 * reflected from one direction into the other fails (the label differs).
 * A side that fails a check answers nothing: the connection is closed.
 *
 * After it, both sides hold two session keys derived from K and T, one per
 * direction.  With ember.network.crypto.enabled every later frame is sealed:
 * an FT_SEALED frame whose body is libsodium's secretstream
 * (XChaCha20-Poly1305) encryption of the inner type and body; each
 * direction's stream starts with its 24-byte header as the first sealed
 * frame.  A frame altered, dropped, replayed or reordered fails to open.
 */
#ifndef EM_AUTH_H
#define EM_AUTH_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define AUTH_VERSION 1
#define AUTH_NONCE 32
#define AUTH_MAC 32

enum { AUTH_CLIENT = 1, AUTH_SERVER = 2 };

typedef struct auth_state {
    int role;
    int step;             /* what is expected next (internal) */
    uint8_t key[32];      /* K */
    uint8_t hello[1 + AUTH_NONCE];
    uint8_t server_nonce[AUTH_NONCE];
    uint8_t tx_key[crypto_secretstream_xchacha20poly1305_KEYBYTES];
    uint8_t rx_key[crypto_secretstream_xchacha20poly1305_KEYBYTES];
    int done;
    int failure;          /* after EM_EAUTH: AUTH_WRONG_SECRET or AUTH_MALFORMED */
} auth_state;

/* Why a handshake failed: the peer's proof did not check (it holds another
 * secret), or its frame was not one of the handshake's (a size, a version,
 * out of turn). */
enum { AUTH_WRONG_SECRET = 1, AUTH_MALFORMED = 2 };

/* Begin as the client: appends the HELLO frame to out.  secret: any bytes
 * (at least 1).  0, EM_EINVAL or EM_ENOMEM. */
int auth_client_start(auth_state *a, const void *secret, size_t len, ebuf *out);
/* Begin as the server (it waits for HELLO). */
int auth_server_start(auth_state *a, const void *secret, size_t len);
/* The peer's next FT_AUTH frame body: appends the reply frame, if any, to
 * out.  0 (then a->done says whether both sides are now authenticated:
 * the client after checking CHALL and sending PROOF, the server after
 * checking PROOF), or EM_EAUTH (wrong secret, a frame of the wrong size or
 * out of turn; message set, naming which, and a->failure) -- then close
 * the connection. */
int auth_step(auth_state *a, const uint8_t *body, size_t len, ebuf *out);
/* Forget the keys (zeroed). */
void auth_wipe(auth_state *a);

/* One direction of a sealed session. */
typedef struct seal_state {
    crypto_secretstream_xchacha20poly1305_state st;
    int started;
} seal_state;

/* Start sending: appends the stream's header as the first FT_SEALED frame. */
int seal_tx_start(seal_state *s, const auth_state *a, ebuf *out, size_t max);
/* Seal one frame (type and body) into an FT_SEALED frame appended to out. */
int seal_frame(seal_state *s, uint8_t type, const void *body, size_t len, ebuf *out, size_t max);
/* Open the body of a received FT_SEALED frame.  The first one received
 * starts the stream (*type is 0 then: nothing to deliver).  Otherwise
 * *type, *inner (malloc'd, NULL when empty) and *inner_len are the sealed
 * frame.  0, or EM_EAUTH (altered, replayed, reordered, or a stream that
 * ended) -- then close the connection; EM_ENOMEM. */
int seal_open(seal_state *s, const auth_state *a, const uint8_t *body, size_t len, uint8_t *type, uint8_t **inner,
              size_t *inner_len);

#endif
