/* wl-fwd: the loopback forwarder of an external agent's container.
 *
 *     wl-fwd [-d] PORT SOCKET
 *
 * The container has no network (--network none), only its own loopback. A CLI inside it talks
 * HTTP to http://127.0.0.1:PORT; wl-fwd accepts each such connection and relays its bytes, both
 * ways and unchanged, to the Unix socket SOCKET, where wholeloop's model proxy listens (the
 * socket's folder is bind-mounted into the container). It never resolves a name and never
 * connects anywhere else, so the static build needs no libc at run time.
 *
 * -d  bind and listen, then go to the background: `wl-fwd -d ... && cli` cannot race the listener.
 *
 * One forked process per connection; each direction is closed with shutdown(SHUT_WR) when its
 * source ends, so HTTP keep-alive and streamed replies pass untouched. When the proxy cannot be
 * reached the client gets an HTTP 502 saying so, not a bare reset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static const char UNREACHABLE[] =
    "HTTP/1.1 502 Bad Gateway\r\n"
    "Content-Type: text/plain\r\n"
    "Connection: close\r\n"
    "Content-Length: 44\r\n"
    "\r\n"
    "wl-fwd: the wholeloop model proxy is gone.\r\n";

static int send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Copy what is readable on `from` to `to`; returns 0 on data, 1 at end of stream, -1 on error. */
static int pump(int from, int to) {
    char buf[1 << 16];
    ssize_t n = read(from, buf, sizeof buf);
    if (n < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
    if (n == 0) return 1;
    return send_all(to, buf, (size_t)n) ? -1 : 0;
}

static void serve(int client, const struct sockaddr_un *target) {
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int proxy = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (proxy < 0 || connect(proxy, (const struct sockaddr *)target, sizeof *target) < 0) {
        send_all(client, UNREACHABLE, sizeof UNREACHABLE - 1);
        /* Read what the client still sends (for up to 2 s), so closing does not reset the
         * connection before it has read the answer. */
        shutdown(client, SHUT_WR);
        struct timeval wait = {2, 0};
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
        char sink[1 << 14];
        while (read(client, sink, sizeof sink) > 0) {
        }
        return;
    }
    /* open[0]: client -> proxy still flowing; open[1]: proxy -> client still flowing. */
    int open[2] = {1, 1};
    while (open[0] || open[1]) {
        struct pollfd fds[2] = {{client, open[0] ? POLLIN : 0, 0}, {proxy, open[1] ? POLLIN : 0, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (!open[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int from = i == 0 ? client : proxy, to = i == 0 ? proxy : client;
            int r = pump(from, to);
            if (r < 0) return;
            if (r > 0) {
                open[i] = 0;
                shutdown(to, SHUT_WR);
            }
        }
    }
}

static int usage(void) {
    fputs("usage: wl-fwd [-d] PORT SOCKET\n", stderr);
    return 2;
}

int main(int argc, char **argv) {
    int background = 0, arg = 1;
    if (arg < argc && strcmp(argv[arg], "-d") == 0) {
        background = 1;
        arg++;
    }
    if (argc - arg != 2) return usage();
    char *end = NULL;
    long port = strtol(argv[arg], &end, 10);
    if (*end || port < 1 || port > 65535) return usage();
    struct sockaddr_un target = {.sun_family = AF_UNIX};
    if (strlen(argv[arg + 1]) >= sizeof target.sun_path) {
        fputs("wl-fwd: socket path too long\n", stderr);
        return 2;
    }
    strcpy(target.sun_path, argv[arg + 1]);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                               .sin_addr = {htonl(INADDR_LOOPBACK)}};
    int one = 1;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) {
        perror("wl-fwd: socket");
        return 1;
    }
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 256) < 0) {
        perror("wl-fwd: listen on 127.0.0.1");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
    if (background) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("wl-fwd: fork");
            return 1;
        }
        if (pid > 0) _exit(0);
        setsid();
        for (int fd = 0; fd < 3; fd++) close(fd);
    }
    for (;;) {
        int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(listener);
            serve(client, &target);
            _exit(0);
        }
        close(client); /* the parent keeps only the listener (a failed fork drops this client) */
    }
}
