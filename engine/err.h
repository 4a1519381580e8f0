/*
 * err.h -- setting the calling thread's error message (em_errmsg).  Internal.
 *
 * Every failing internal function that knows the cause calls em__seterr with
 * the code it is about to return and a message naming the cause, and returns
 * what em__seterr returns.  Callers that only pass a failure up leave the
 * message as it is.
 */
#ifndef EM_ERR_H
#define EM_ERR_H

/* Set the thread's message (printf format) and return code. */
int em__seterr(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message: "<prefix>: <old message>". Returns code. */
int em__preferr(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The code of the thread's last em__seterr (EM_EINVAL if none): for callers
 * that got NULL from a constructor and must return a code. */
int em__lasterr(void);
/* Forget the thread's message (a task starts with none). */
void em__clearerr(void);
/* Copy of the thread's message into buf (for carrying it across threads). */
void em__geterr(char *buf, size_t len);

/* Checked-build assertion with location (always on: they are cheap). */
#define EM_ASSERT(c)                                                                 \
    do {                                                                             \
        if (!(c)) em__assert_fail(#c, __FILE__, __LINE__);                           \
    } while (0)
void em__assert_fail(const char *what, const char *file, int line) __attribute__((noreturn));

#endif
