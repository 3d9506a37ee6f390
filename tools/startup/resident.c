/*
 * tools/startup/resident.c - what a program has resident at exit, page by
 * page, for docs/footprint.md ("2026-11-25, helper footprint"): a destructor
 * that writes to stderr, for every mapping, its /proc/self/maps line and a
 * line "R <resident pages> <first>-<end> ..." (page indices in the mapping,
 * from /proc/self/pagemap), then /proc/self/status (VmHWM: the peak).
 *
 * It runs no libc code (raw system calls) and keeps its buffers small, so it
 * adds no libc page and the same few pages of its own under every allocator.
 * Link it into the program rather than preloading it: a preloaded library is
 * one more mapping, which moves where libc lands relative to the 64 KiB
 * fault-around windows (tools/startup/hwm.py):
 *
 *   cc -O2 -fPIC -c tools/startup/resident.c -o resident.o
 *   cc -O3 build/bench/CMakeFiles/bench_larson.dir/workloads/larson.c.o resident.o -o larson_r
 *   LD_PRELOAD=build/libpcmalloc.so ./larson_r --threads 2 --steps 1000 2>dump
 */
#include <stdint.h>
static long sc(long n, long a, long b, long c, long d)
{
	long r; register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}
static char maps[1 << 16];
static char out[1 << 13];
static uint64_t ent[512];
static long o;
static void flush(void) { sc(1, 2, (long)out, o, 0); o = 0; }
static void put(char c) { if (o == sizeof(out)) flush(); out[o++] = c; }
static void num(unsigned long v) { char t[24]; int n = 0; do t[n++] = '0' + v % 10; while (v /= 10); while (n) put(t[--n]); }
static unsigned long hex(const char **p)
{
	unsigned long v = 0;
	for (;; (*p)++) {
		char c = **p;
		if (c >= '0' && c <= '9') v = v * 16 + c - '0';
		else if (c >= 'a' && c <= 'f') v = v * 16 + c - 'a' + 10;
		else return v;
	}
}
__attribute__((destructor(200))) static void dump(void)
{
	long fd = sc(2, (long)"/proc/self/maps", 0, 0, 0);
	long n = 0, r;
	while ((r = sc(0, fd, (long)maps + n, sizeof(maps) - 1 - n, 0)) > 0) n += r;
	sc(3, fd, 0, 0, 0);
	maps[n] = 0;
	long pm = sc(2, (long)"/proc/self/pagemap", 0, 0, 0);
	const char *p = maps;
	static char runs[1 << 12];
	while (*p) {
		const char *line = p;
		unsigned long lo = hex(&p); p++;
		unsigned long hi = hex(&p);
		while (*p && *p != '\n') p++;
		for (const char *q = line; q < p; q++) put(*q);
		put('\n');
		if (*p) p++;
		unsigned long np = (hi - lo) / 4096, cnt = 0, start = 0;
		int in = 0;
		long ro = 0;
		for (unsigned long i = 0; i <= np; i++) {
			int pres = 0;
			if (i < np) {
				if (i % 512 == 0) {
					unsigned long k = np - i < 512 ? np - i : 512;
					sc(17, pm, (long)ent, k * 8, (lo / 4096 + i) * 8);
				}
				pres = ent[i % 512] >> 63;
			}
			cnt += pres;
			if (pres && !in) { start = i; in = 1; }
			if (!pres && in) {
				in = 0;
				/* the runs go after the count, from runs[] */
				char t[48]; int tn = 0; unsigned long v;
				t[tn++] = ' ';
				{ char u[24]; int un = 0; v = start; do u[un++] = '0' + v % 10; while (v /= 10); while (un) t[tn++] = u[--un]; }
				t[tn++] = '-';
				{ char u[24]; int un = 0; v = i; do u[un++] = '0' + v % 10; while (v /= 10); while (un) t[tn++] = u[--un]; }
				if (ro + tn < (long)sizeof(runs)) for (int j = 0; j < tn; j++) runs[ro++] = t[j];
			}
		}
		put('R'); put(' '); num(cnt);
		for (long j = 0; j < ro; j++) put(runs[j]);
		put('\n');
	}
	flush();
	long st = sc(2, (long)"/proc/self/status", 0, 0, 0);
	long k = sc(0, st, (long)out, sizeof(out), 0);
	sc(3, st, 0, 0, 0);
	if (k > 0) sc(1, 2, (long)out, k, 0);
}
