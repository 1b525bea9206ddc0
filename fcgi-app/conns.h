/*
 * The FastCGI connections of agentd-api, so that a connection nginx keeps open between requests
 * (upstream keepalive + fastcgi_keep_conn) never holds a request thread while it is idle.
 *
 * libfcgi's FCGX_Accept_r reads the next request of a kept connection in the thread that served
 * the last one, and blocks there until nginx sends one: as many idle kept connections as threads
 * (nginx keeps up to `keepalive` per worker process) would leave no thread to accept the
 * connection a new request comes on. Here one poller thread owns every idle connection: it
 * accepts new ones, waits in poll(2) until one has bytes to read, and queues it for the request
 * threads; a thread that has served a request on a kept connection gives it back. A thread is
 * busy only while a request is on its connection. A connection the peer closed while idle is
 * closed by the poller; no thread sees it.
 */
#ifndef AGENTD_CONNS_H
#define AGENTD_CONNS_H

/* Idle connections the poller keeps; beyond that the one idle longest is closed (nginx keeps
 * `keepalive` per worker process, far fewer). Also the depth of the queue of ready ones. */
#define CONNS_IDLE_MAX 256

struct conns;

/*
 * Starts the poller thread on listen_fd (a listening stream socket; made non-blocking here).
 * Block the signals the caller waits for before: the thread inherits the mask. Returns the pool,
 * or NULL with errno set.
 */
struct conns *conns_start(int listen_fd);

/*
 * Waits until a connection has something to read (a request, or more of one) and hands it over:
 * the caller owns the descriptor until it passes it to conns_keep or closes it. Returns the
 * descriptor, or -ECANCELED once conns_stop was called.
 */
int conns_take(struct conns *c);

/* Gives back a connection whose request is done and that stays open for the next one. After
 * conns_stop it is closed instead. */
void conns_keep(struct conns *c, int fd);

/* Stops the poller and closes every connection it holds; conns_take returns -ECANCELED from
 * now on. The listening socket stays open (the caller's). */
void conns_stop(struct conns *c);

/* Frees c after conns_stop, once no thread uses it any more. NULL-safe. */
void conns_free(struct conns *c);

#endif
