/*
 * relay_micro: the least a proxy can spend moving a request body over loopback, by way of
 * forwarding it. Not part of the product: an experiment for tuning/README.md ("Request body
 * buffer" and "splice"), kept so its figures can be taken again.
 *
 * One relay thread pinned to core 0 forwards what a client thread sends (5MB bodies, one
 * newline every 110 bytes, like bulk_tiny) to an upstream thread that drains it; client and
 * upstream share core 1, as wrk and the upstream do in loadtest/run.py. Every socket at
 * cubic with TCP_NODELAY. Printed: MB/s, and CPU per 5MB of each thread
 * (CLOCK_THREAD_CPUTIME_ID: the kernel work done in a thread's system calls included).
 *
 *   cc -O3 -march=native -o /tmp/relay_micro tuning/relay_micro.c -lpthread
 *   /tmp/relay_micro MODE BUF SECONDS
 *
 * MODE 0: read() up to BUF bytes, count newlines (AVX2, standing in for the _bulk count),
 *         write() them: what the edge does.
 * MODE 1: splice() the socket into a pipe, tee() it to a second pipe, read() that into BUF
 *         bytes and count, splice() the first pipe to the upstream: one user-space copy.
 * MODE 2: splice() in and out, no count: no user-space copy at all.
 * Environment: NOCOUNT=1 reads without counting; BACKWARD=1 counts from the end of each
 * piece (the end is the part still in cache after the read).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <immintrin.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BODY (5u << 20)
#define PIPE_BYTES (1u << 20)

static char body[BODY];
static atomic_int stop;
static int nocount, backward;
static int client_port, upstream_port, upstream_listener;
static double client_cpu, upstream_cpu;

static double clock_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void pin(int core) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(core, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    tune(fd);
    if (bind(fd, (void *)&a, sizeof a) || listen(fd, 8) || getsockname(fd, (void *)&a, &len)) {
        perror("listen");
        exit(1);
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback(port);
    tune(fd);
    if (connect(fd, (void *)&a, sizeof a)) {
        perror("connect");
        exit(1);
    }
    return fd;
}

static void *client(void *unused) {
    (void)unused;
    pin(1);
    int fd = dial(client_port);
    while (!stop) {
        client_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (size_t o = 0; o < BODY;) {
            ssize_t n = write(fd, body + o, BODY - o);
            if (n <= 0)
                return NULL;
            o += n;
        }
    }
    return NULL;
}

static void *upstream(void *unused) {
    static char sink[256 << 10];
    (void)unused;
    pin(1);
    int fd = accept(upstream_listener, NULL, NULL);
    while (read(fd, sink, sizeof sink) > 0)
        upstream_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static long count_block(const char *p, __m256i nl) {
    __m256i v = _mm256_loadu_si256((const void *)p);
    return __builtin_popcount(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, nl)));
}

static long count_newlines(const char *p, size_t n) {
    __m256i nl = _mm256_set1_epi8('\n');
    long c = 0;
    size_t i;
    if (nocount)
        return 0;
    if (backward) {
        for (i = n; i >= 32; i -= 32)
            c += count_block(p + i - 32, nl);
        for (size_t k = 0; k < i; k++)
            c += p[k] == '\n';
        return c;
    }
    for (i = 0; i + 32 <= n; i += 32)
        c += count_block(p + i, nl);
    for (; i < n; i++)
        c += p[i] == '\n';
    return c;
}

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

/* One piece forwarded; returns its bytes (0 at the end). `ops`: system calls made. */
static ssize_t forward(int mode, int in, int out, char *buf, size_t bufsz, int p1[2],
                       int p2[2], long *newlines, long *ops) {
    ssize_t n;
    if (mode == 0) {
        n = read(in, buf, bufsz);
        ++*ops;
        if (n <= 0)
            return 0;
        *newlines += count_newlines(buf, n);
        for (ssize_t o = 0, w; o < n; o += w, ++*ops)
            must((w = write(out, buf + o, n - o)) > 0, "write");
        return n;
    }
    n = splice(in, NULL, p1[1], NULL, PIPE_BYTES, SPLICE_F_MOVE);
    ++*ops;
    if (n <= 0)
        return 0;
    if (mode == 1) {
        must(tee(p1[0], p2[1], n, 0) == n, "tee");
        ++*ops;
        for (ssize_t r = 0, k; r < n; r += k, ++*ops) {
            size_t want = (size_t)(n - r) < bufsz ? (size_t)(n - r) : bufsz;
            must((k = read(p2[0], buf, want)) > 0, "read pipe");
            *newlines += count_newlines(buf, k);
        }
    }
    for (ssize_t o = 0, w; o < n; o += w, ++*ops)
        must((w = splice(p1[0], NULL, out, NULL, n - o, SPLICE_F_MOVE)) > 0, "splice out");
    return n;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODE(0|1|2) BUF SECONDS\n", argv[0]);
        return 2;
    }
    int mode = atoi(argv[1]), seconds = atoi(argv[3]);
    size_t bufsz = strtoul(argv[2], NULL, 10);
    nocount = getenv("NOCOUNT") != NULL;
    backward = getenv("BACKWARD") != NULL;
    for (size_t i = 0; i < BODY; i++)
        body[i] = i % 110 == 109 ? '\n' : 'a';

    int client_listener = listener(&client_port);
    upstream_listener = listener(&upstream_port);
    pthread_t c, u;
    pthread_create(&u, NULL, upstream, NULL);
    pin(0);
    int out = dial(upstream_port);
    pthread_create(&c, NULL, client, NULL);
    int in = accept(client_listener, NULL, NULL);
    char *buf = aligned_alloc(4096, bufsz);
    memset(buf, 0, bufsz);
    int p1[2], p2[2];
    must(pipe(p1) == 0 && pipe(p2) == 0, "pipe");
    fcntl(p1[0], F_SETPIPE_SZ, PIPE_BYTES);
    fcntl(p2[0], F_SETPIPE_SZ, PIPE_BYTES);

    double wall0 = clock_s(CLOCK_MONOTONIC), cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    double client0 = client_cpu, upstream0 = upstream_cpu;
    long total = 0, newlines = 0, ops = 0;
    while (clock_s(CLOCK_MONOTONIC) - wall0 < seconds) {
        ssize_t n = forward(mode, in, out, buf, bufsz, p1, p2, &newlines, &ops);
        if (n == 0)
            break;
        total += n;
    }
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    double wall = clock_s(CLOCK_MONOTONIC) - wall0, bodies = total / (double)BODY;
    printf("mode %d buf %zu: %.0f MB/s; CPU per 5MB: relay %.0f us, client %.0f us, "
           "upstream %.0f us; %.1f system calls per 5MB (%ld newlines)\n",
           mode, bufsz, total / wall / 1e6, cpu / bodies * 1e6,
           (client_cpu - client0) / bodies * 1e6, (upstream_cpu - upstream0) / bodies * 1e6,
           ops / bodies, newlines);
    fflush(stdout);
    stop = 1;
    _exit(0);
}
