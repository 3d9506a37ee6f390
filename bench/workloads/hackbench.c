/*
 * bench/workloads/hackbench.c - a user-space analogue of hackbench in thread
 * mode over socketpairs (seed 000).
 *
 * --groups groups, each of --fds senders and --fds receivers (threads). Each
 * receiver owns a socketpair; each sender sends --loops messages to every
 * receiver of its group. A message is what the kernel's socket layer would
 * allocate for it: a 256-byte "skb head" and a 512-byte "data" buffer
 * (kmalloc-512 holds hackbench's 100-byte payload plus skb_shared_info); the
 * sender mallocs both, fills the payload and writes the two pointers through
 * the socket; the receiver reads them, checks the payload and frees both, so
 * every free is remote.
 *
 *   bench_hackbench [--groups 2] [--fds 10] [--loops 200]
 *
 * Prints {"bench":"hackbench","threads":..,"messages":..,"elapsed_s":..,
 * "throughput":..} (messages per second).
 */
#include "bench.h"

#include <errno.h>
#include <sys/socket.h>

static long groups, fds, loops;
static int (*sock)[2]; /* sock[group * fds + receiver]: [0] receiver, [1] senders */

struct msg {
	char *head, *data;
};

static void xwrite(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			perror("hackbench: write");
			exit(1);
		}
		p += w, n -= (size_t)w;
	}
}

static void xread(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			perror("hackbench: read");
			exit(1);
		}
		p += r, n -= (size_t)r;
	}
}

static void *worker(long id)
{
	long g = id / (2 * fds), k = id % (2 * fds);
	if (k < fds) { /* sender k of group g */
		for (long l = 0; l < loops; l++)
			for (long r = 0; r < fds; r++) {
				struct msg m = { bench_xmalloc(256), bench_xmalloc(512) };
				memset(m.head, 0, 64);
				memset(m.data, (int)(l & 0x7f), 100);
				xwrite(sock[g * fds + r][1], &m, sizeof(m));
			}
	} else { /* receiver k - fds of group g */
		int fd = sock[g * fds + k - fds][0];
		for (long n = 0; n < fds * loops; n++) {
			struct msg m;
			xread(fd, &m, sizeof(m));
			if (m.data[0] != m.data[99] || m.head[0] != 0) {
				fprintf(stderr, "hackbench: message corrupted\n");
				exit(1);
			}
			free(m.head);
			free(m.data);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	groups = bench_long(&a, "groups", 2, 1);
	fds = bench_long(&a, "fds", 10, 2);
	loops = bench_long(&a, "loops", 200, 10);
	sock = bench_xmalloc((size_t)(groups * fds) * sizeof(*sock));
	for (long i = 0; i < groups * fds; i++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock[i]) != 0) {
			perror("socketpair");
			return 1;
		}
	long threads = groups * fds * 2;
	double ns = bench_run_threads(threads, worker);
	double msgs = (double)groups * (double)(fds * fds * loops);
	char extra[96];
	snprintf(extra, sizeof(extra), "\"groups\":%ld,\"messages\":%.0f,\"throughput\":%.1f", groups, msgs,
		 msgs / ns * 1e9);
	bench_result("hackbench", threads, msgs, ns, extra);
	return 0;
}
