/*
 * stats/export.c - the shared-memory export (stats.export=1) that
 * pcmalloc-top and pcmalloc-ctl read: /dev/shm/pcmalloc-<pid>, created 0600
 * by the process's user (os_shm_create), so nobody else can read or write
 * it. Layout version PC_STATS_VERSION, documented in docs/statistics.md:
 *
 *   offset 0      struct pc_export_header (below), PC_EXPORT_HEADER bytes
 *   offset 4096   the latest JSON snapshot (snapshot_len bytes)
 *
 * A thread of the process ("pcmalloc-export") rewrites the snapshot every
 * second and answers commands. The snapshot is a seqlock: snapshot_seq is
 * odd while it is rewritten, so a reader copies it between two equal, even
 * reads. A command: the tool (holding flock on the file, so one tool at a
 * time) writes cmd, increments cmd_seq and wakes the futex on it; the thread
 * writes resp and resp_status, then sets resp_seq = cmd_seq and wakes the
 * futex on that. Tools wait with a timeout, so a process that stopped or
 * vanished never hangs them. Commands:
 *   "get NAME"        a tunable (as text) or a statistic (stats.*)
 *   "set NAME=VALUE"  validated as PCMALLOC_OPTIONS is; resp is the message
 *   "refresh"         rewrite the snapshot now (then resp "ok")
 *
 * Memory order: the exporter writes the snapshot bytes between a relaxed odd
 * store and a release even store of snapshot_seq, with a release fence after
 * the odd store so that no byte is visible before it; readers load seq with
 * acquire. resp_seq is stored with release after resp, and cmd_seq is read
 * with acquire (the tool wrote cmd before incrementing it).
 */
#define _GNU_SOURCE
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define PC_EXPORT_HEADER   4096
#define PC_EXPORT_SIZE     ((size_t)16 << 20) /* sparse: only what is written */
#define PC_EXPORT_PERIOD_NS 1000000000ull

struct pc_export_header {
	char magic[8];                   /* "PCMSTAT" */
	uint32_t version;                /* PC_STATS_VERSION */
	uint32_t header_size;            /* PC_EXPORT_HEADER: the snapshot's offset */
	uint64_t pid;
	uint64_t file_size;
	_Atomic uint64_t snapshot_seq;   /* odd while the snapshot is rewritten */
	_Atomic uint64_t snapshot_len;   /* bytes of JSON at header_size */
	_Atomic uint64_t snapshot_time_ns; /* CLOCK_MONOTONIC of the snapshot */
	_Atomic uint32_t cmd_seq;        /* written by tools */
	_Atomic uint32_t resp_seq;       /* = cmd_seq once resp is written */
	int32_t resp_status;             /* 0, or an errno value */
	uint32_t reserved;
	char cmd[256];
	char resp[1024];
};
_Static_assert(offsetof(struct pc_export_header, snapshot_seq) == 32 &&
	       offsetof(struct pc_export_header, cmd_seq) == 56 &&
	       offsetof(struct pc_export_header, resp_status) == 64 &&
	       offsetof(struct pc_export_header, cmd) == 72 &&
	       offsetof(struct pc_export_header, resp) == 328 &&
	       sizeof(struct pc_export_header) <= PC_EXPORT_HEADER,
	       "the export layout is documented in docs/statistics.md");

static struct pc_export_header *export_map;
static char export_path[64];
static int export_pid;

static void export_snapshot(struct pc_export_header *h)
{
	struct pc_out o = { 0 };
	pc_stats_report(&o, "json");
	if (o.failed || o.len > PC_EXPORT_SIZE - PC_EXPORT_HEADER) {
		pc_out_free(&o);
		return;
	}
	uint64_t seq = pc_load_relaxed(&h->snapshot_seq);
	pc_store_relaxed(&h->snapshot_seq, seq + 1);
	/* Release fence: the odd seq is visible before any snapshot byte. */
	atomic_thread_fence(memory_order_release);
	memcpy((char *)h + PC_EXPORT_HEADER, o.buf, o.len);
	pc_store_relaxed(&h->snapshot_len, o.len);
	pc_store_relaxed(&h->snapshot_time_ns, os_now_ns());
	/* Release: the bytes and length are visible before the even seq. */
	pc_store_release(&h->snapshot_seq, seq + 2);
	pc_out_free(&o);
}

/* Answer "get NAME". */
static int export_get(const char *name, char *resp, size_t size)
{
	int o = pc_option_find(name);
	if (o >= 0) {
		pc_option_format((enum pc_option)o, resp, size);
		return 0;
	}
	long v;
	if (pc_stats_read(name, &v) == 0) {
		snprintf(resp, size, "%ld", v);
		return 0;
	}
	snprintf(resp, size, "%s: no such tunable or statistic (PCMALLOC_OPTIONS=help lists the "
		 "tunables, docs/statistics.md the statistics)", name);
	return ENOENT;
}

/* Answer "set NAME=VALUE" with the messages of PCMALLOC_OPTIONS. */
static int export_set(const char *setting, char *resp, size_t size)
{
	char name[128];
	const char *eq = strchr(setting, '=');
	if (!eq || (size_t)(eq - setting) >= sizeof(name)) {
		snprintf(resp, size, "expected name=value, got '%s'", setting);
		return EINVAL;
	}
	memcpy(name, setting, (size_t)(eq - setting));
	name[eq - setting] = '\0';
	char source[32];
	snprintf(source, sizeof(source), "PID %d", export_pid);
	int err = pc_option_apply_text(source, name, eq + 1, false, resp, size);
	if (err == 0)
		snprintf(resp, size, "%s=%s", name, eq + 1);
	return err;
}

static void export_command(struct pc_export_header *h)
{
	char cmd[sizeof(h->cmd)];
	memcpy(cmd, h->cmd, sizeof(cmd));
	cmd[sizeof(cmd) - 1] = '\0';
	int status = 0;
	if (strncmp(cmd, "get ", 4) == 0) {
		status = export_get(cmd + 4, h->resp, sizeof(h->resp));
	} else if (strncmp(cmd, "set ", 4) == 0) {
		status = export_set(cmd + 4, h->resp, sizeof(h->resp));
	} else if (strcmp(cmd, "refresh") == 0) {
		export_snapshot(h);
		snprintf(h->resp, sizeof(h->resp), "ok");
	} else {
		snprintf(h->resp, sizeof(h->resp), "unknown command '%.200s'", cmd);
		status = EINVAL;
	}
	h->resp_status = status;
}

static void *export_thread(void *arg)
{
	struct pc_export_header *h = arg;
	uint64_t last = 0;
	for (;;) {
		/* Acquire: pairs with the tool's increment after it wrote cmd. */
		uint32_t cmd = pc_load_acquire(&h->cmd_seq);
		if (cmd != pc_load_relaxed(&h->resp_seq)) {
			export_command(h);
			/* Release: resp and resp_status are written before. */
			pc_store_release(&h->resp_seq, cmd);
			os_futex_wake_shared(&h->resp_seq);
		}
		uint64_t now = os_now_ns();
		if (now - last >= PC_EXPORT_PERIOD_NS) {
			export_snapshot(h);
			last = now;
		}
		uint64_t wait = PC_EXPORT_PERIOD_NS - PC_MIN(os_now_ns() - last, PC_EXPORT_PERIOD_NS);
		if (pc_load_relaxed(&h->cmd_seq) == cmd)
			os_futex_wait_shared(&h->cmd_seq, cmd, wait + 1);
	}
	return NULL;
}

void pc_stats_export_start(void)
{
	export_pid = os_getpid();
	snprintf(export_path, sizeof(export_path), "/dev/shm/pcmalloc-%d", export_pid);
	struct pc_export_header *h = os_shm_create(export_path, PC_EXPORT_SIZE);
	if (!h) {
		pc_message("stats.export: cannot create %s (errno %d); not exporting",
			   export_path, errno);
		return;
	}
	memcpy(h->magic, "PCMSTAT", 8);
	h->version = PC_STATS_VERSION;
	h->header_size = PC_EXPORT_HEADER;
	h->pid = (uint64_t)export_pid;
	h->file_size = PC_EXPORT_SIZE;
	export_snapshot(h);
	/* The thread takes no signal meant for the program. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_t tid;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&tid, &attr, export_thread, h);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		pc_message("stats.export: cannot start the export thread (errno %d)", rc);
		os_shm_remove(export_path, h, PC_EXPORT_SIZE);
		return;
	}
	pthread_setname_np(tid, "pcmalloc-export");
	export_map = h;
}

/* At exit: remove the file (the thread may still be running, so the mapping
 * stays). A forked child did not create it and leaves it alone. */
void pc_stats_export_stop(void)
{
	if (export_map && os_getpid() == export_pid)
		os_shm_remove(export_path, NULL, 0);
}
