/*
 * curl <-> libuv: the multi handle's socket and timer callbacks, one poll
 * handle per socket curl watches (with an fd → context table to find stale
 * contexts on fd reuse), the curl timer and the idle "kick" that replaces
 * 0 ms timers, and drive(): curl_multi_socket_action followed by draining
 * curl's completions (the multi-uv pattern; docs/engine.md).
 *
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

typedef struct cr_socket_s {
  uv_poll_t poll;
  curl_socket_t fd;
  int events;
  int errored;      /* POLLERR seen and handed to curl as readiness */
  cr_loop_t* loop;
} cr_socket_t;

static cr_socket_t* socket_find(cr_loop_t* loop, curl_socket_t fd) {
  if (fd < 0 || (size_t)fd >= loop->socket_capacity)
    return NULL;
  return loop->sockets[fd];
}

static int socket_remember(cr_loop_t* loop, cr_socket_t* ctx) {
  if ((size_t)ctx->fd >= loop->socket_capacity) {
    size_t capacity = loop->socket_capacity ? loop->socket_capacity : 1024;
    cr_socket_t** sockets;
    while (capacity <= (size_t)ctx->fd)
      capacity *= 2;
    sockets = cr__realloc(loop->sockets, capacity * sizeof(*sockets));
    if (sockets == NULL)
      return -1;
    memset(sockets + loop->socket_capacity, 0,
           (capacity - loop->socket_capacity) * sizeof(*sockets));
    loop->sockets = sockets;
    loop->socket_capacity = capacity;
  }
  loop->sockets[ctx->fd] = ctx;
  return 0;
}

static void on_socket_closed(uv_handle_t* handle) {
  cr_socket_t* ctx = handle->data;
  atomic_fetch_sub(&ctx->loop->stat_handles, 1);
  free(ctx);
}

static void socket_forget(cr_loop_t* loop, cr_socket_t* ctx) {
  loop->sockets[ctx->fd] = NULL;
  uv_poll_stop(&ctx->poll);
  uv_close((uv_handle_t*)&ctx->poll, on_socket_closed);
}

curl_socket_t cr__open_socket(void* context, curlsocktype purpose, struct curl_sockaddr* address) {
  (void)context;
  (void)purpose;
  /* Close-on-exec from the start (not fcntl after socket(): another thread
   * could fork and exec in between): a process the host program spawns, an
   * app courierd relaunches above all, must not inherit a connection to a
   * server and keep it alive after this process is gone. */
  return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

int cr__close_socket(void* context, curl_socket_t fd) {
  cr_loop_t* loop = context;
  cr_socket_t* ctx = socket_find(loop, fd);
  if (ctx)
    socket_forget(loop, ctx);
  return close(fd);
}

static void on_poll(uv_poll_t* handle, int status, int events) {
  cr_socket_t* ctx = handle->data;
  cr_loop_t* loop = ctx->loop;
  curl_socket_t fd = ctx->fd;
  int flags = 0;
  if (status < 0 && !ctx->errored && ctx->events > 0) {
    /* POLLERR (libuv says UV_EBADF): the socket has a pending error, e.g.
     * a reset. curl is told the socket is ready for what it waits for, so
     * that its own recv or send meets the error and reports it with its
     * errno ("Connection reset by peer", CURLINFO_OS_ERRNO); told
     * CURL_CSELECT_ERR it would say only "select/poll returned error".
     * Once: a socket that reports an error again before any ordinary
     * event is passed on as an error. */
    ctx->errored = 1;
    if (ctx->events & UV_READABLE)
      flags |= CURL_CSELECT_IN;
    if (ctx->events & UV_WRITABLE)
      flags |= CURL_CSELECT_OUT;
  } else if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    ctx->errored = 0;
    if (events & UV_READABLE)
      flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
      flags |= CURL_CSELECT_OUT;
  }
  cr__drive(loop, fd, flags);
  /* libuv stops a poll that saw POLLERR; curl will not announce the socket
   * again if it still wants it, so restart the watch ourselves. */
  if (status < 0) {
    cr_socket_t* still = socket_find(loop, fd);
    if (still == ctx && ctx->events)
      uv_poll_start(&ctx->poll, ctx->events, on_poll);
  }
}

/* An upgraded transfer (CR_FLAG_UPGRADE after its 101) waits for its body
 * with its reading neither paused nor done: when curl stops watching its
 * socket then, it read the end of the connection. curl would keep it open
 * for the body; the sweep ends it (lifecycle.c). */
static void note_upgraded_close(CURL* easy) {
  cr_transfer_t* t = NULL;
  if (easy == NULL || curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char**)&t) != CURLE_OK || t == NULL)
    return;
  if (t->upgraded && t->supply_waiting && !t->curl_paused && t->state == CR_TRANSFER_ACTIVE)
    t->peer_closed = 1;
}

static int on_curl_socket(CURL* easy, curl_socket_t fd, int what, void* user,
                          void* socket_context) {
  cr_loop_t* loop = user;
  cr_socket_t* ctx = socket_find(loop, fd);
  int events = 0;

  if (what == CURL_POLL_REMOVE) {
    note_upgraded_close(easy);
    /* Stop watching but keep the handle: curl announces the socket again
     * when a paused transfer resumes (downloads waiting for the disk do so
     * many times a second) or a cached connection is reused, and a new
     * handle would cost an ioctl and epoll_ctl calls each time. The handle
     * is closed with the socket (cr__close_socket). */
    if (ctx && ctx->events != 0) {
      ctx->events = 0;
      uv_poll_stop(&ctx->poll);
    }
    return 0;
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  if (ctx == NULL) {
    int r;
    /* Out of memory: -1 makes curl fail every transfer of this multi
     * handle (CURLE_ABORTED_BY_CALLBACK, reported as CR_ERR_INTERNAL;
     * socket_action fails and cr__drive fails the running ones). curl
     * accepts new transfers again once none is left. Returning 0 instead
     * would leave the socket unwatched and its transfers stalled. */
    ctx = cr__calloc(1, sizeof(*ctx));
    if (ctx == NULL)
      return -1;
    ctx->fd = fd;
    ctx->loop = loop;
    ctx->events = -1;
    r = uv_poll_init_socket(&loop->uv, &ctx->poll, fd);
    if (r != 0 || socket_remember(loop, ctx) != 0) {
      if (r == 0) {
        ctx->poll.data = ctx;
        atomic_fetch_add(&loop->stat_handles, 1);
        uv_close((uv_handle_t*)&ctx->poll, on_socket_closed);
      } else {
        free(ctx);
      }
      return -1;
    }
    ctx->poll.data = ctx;
    atomic_fetch_add(&loop->stat_handles, 1);
  }
  if (events != ctx->events) {
    ctx->events = events;
    if (events)
      uv_poll_start(&ctx->poll, events, on_poll);
    else
      uv_poll_stop(&ctx->poll);
  }
  return 0;
}

static void on_curl_timer_fired(uv_timer_t* timer) {
  cr__drive(timer->data, CURL_SOCKET_TIMEOUT, 0);
}

static void on_kick(uv_idle_t* idle) {
  uv_idle_stop(idle);
  cr__drive(idle->data, CURL_SOCKET_TIMEOUT, 0);
}

void cr__kick(cr_loop_t* loop) { uv_idle_start(&loop->kick, on_kick); }

static int on_curl_timer(CURLM* multi, long timeout_ms, void* user) {
  cr_loop_t* loop = user;
  if (timeout_ms < 0) {
    uv_timer_stop(&loop->curl_timer);
  } else if (timeout_ms == 0) {
    /* Not a 0 ms timer: libuv 1.44 would run it again in the same pass
     * when re-armed from a timer callback, starving I/O. */
    uv_timer_stop(&loop->curl_timer);
    cr__kick(loop);
  } else {
    uv_timer_start(&loop->curl_timer, on_curl_timer_fired, (uint64_t)timeout_ms, 0);
  }
  return 0;
}

void cr__drive(cr_loop_t* loop, curl_socket_t fd, int flags) {
  int running;
  CURLMcode rc;
  if (loop->stopping)
    return;
  rc = curl_multi_socket_action(loop->multi, fd, flags, &running);
  if (rc != CURLM_OK) {
    /* Every transfer's state is undefined now: fail them all. */
    char why[128];
    snprintf(why, sizeof(why), "curl_multi_socket_action: %s (CURLM %d)",
             curl_multi_strerror(rc), (int)rc);
    cr__fail_running(loop, why);
  }
  cr__drain(loop);
}

void cr__sockets_init(cr_loop_t* loop) {
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
  curl_multi_setopt(loop->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(loop->multi, CURLMOPT_TIMERDATA, loop);
  uv_timer_init(&loop->uv, &loop->curl_timer);
  uv_idle_init(&loop->uv, &loop->kick);
  loop->curl_timer.data = loop->kick.data = loop;
}

static void close_any(uv_handle_t* handle, void* arg) {
  if (!uv_is_closing(handle)) {
    if (handle->type == UV_POLL) {
      cr_socket_t* ctx = handle->data;
      ctx->loop->sockets[ctx->fd] = NULL;
      uv_close(handle, on_socket_closed);
    } else {
      uv_close(handle, NULL);
    }
  }
}

void cr__close_handles(cr_loop_t* loop) { uv_walk(&loop->uv, close_any, NULL); }
