/*
 * internal.h - types, macros and atomics shared by every pcmalloc layer.
 *
 * This header is the root of the include graph: it includes only the C
 * library and compiler headers, never a layer header. Layers include it plus
 * the single header of each layer below them (see src/README.md).
 *
 * Atomics: wrappers carry their memory order in their name, so that a reader
 * sees the ordering at the call site. Every non-relaxed use carries a one-line
 * comment at the call site that says why the order is enough.
 */
#ifndef PC_INTERNAL_H
#define PC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- compiler ---------------------------------------------------------- */
#define pc_likely(x)   __builtin_expect(!!(x), 1)
#define pc_unlikely(x) __builtin_expect(!!(x), 0)
#define PC_NOINLINE    __attribute__((noinline))
#define PC_COLD        __attribute__((cold, noinline))
#define PC_INLINE      static inline __attribute__((always_inline))
#define PC_API         __attribute__((visibility("default")))
/* On the declaration of a variable the fast paths read: the compiler then
 * addresses it directly instead of through the GOT (-fvisibility=hidden
 * covers definitions only). */
#define PC_HIDDEN      __attribute__((visibility("hidden")))
/* Tell the compiler a fact it cannot see (so it drops a test): x must hold. */
#define PC_ASSUME(x)   do { if (!(x)) __builtin_unreachable(); } while (0)
#define PC_UNUSED      __attribute__((unused))
#define PC_CACHELINE   64
#define PC_CACHE_ALIGNED __attribute__((aligned(PC_CACHELINE)))
#define PC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PC_MIN(a, b)   ((a) < (b) ? (a) : (b))
#define PC_MAX(a, b)   ((a) > (b) ? (a) : (b))
#define PC_CONTAINER_OF(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

/* ---- memory geometry ---------------------------------------------------- */
#define PC_PAGE_SHIFT  12
#define PC_PAGE_SIZE   ((size_t)1 << PC_PAGE_SHIFT)
/* Largest buddy order: a block of 2^PC_MAX_ORDER pages = 4 MiB. */
#define PC_MAX_ORDER   10
#define PC_MAX_CPUS    1024 /* array bound only; the real count is read at init */
#define PC_MAX_NODES   64

PC_INLINE uintptr_t pc_align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }
PC_INLINE bool pc_is_pow2(uintptr_t x) { return x && !(x & (x - 1)); }
/* floor(log2(x)) for x > 0 */
PC_INLINE unsigned pc_log2(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

/* ---- assertions: three levels, as mimalloc's --------------------------- */
#ifndef PC_DEBUG
#define PC_DEBUG 0
#endif
__attribute__((noreturn)) void pc_assert_fail(const char *expr, const char *file, int line);
#define PC_ASSERT_AT(level, e) \
	((PC_DEBUG >= (level) && !(e)) ? pc_assert_fail(#e, __FILE__, __LINE__) : (void)0)
#define pc_assert(e)           PC_ASSERT_AT(1, e) /* cheap, API misuse */
#define pc_assert_internal(e)  PC_ASSERT_AT(2, e) /* internal invariants */
#define pc_assert_expensive(e) PC_ASSERT_AT(3, e) /* walkers, O(n) checks */

/* Fatal error: message on stderr and abort. Never allocates. "os/linux.c" */
__attribute__((noreturn, format(printf, 1, 2))) void pc_fatal(const char *fmt, ...);
/* Message on stderr, formatted into a stack buffer. Never allocates. */
__attribute__((format(printf, 1, 2))) void pc_message(const char *fmt, ...);
/* One line on stderr with no prefix (the lines of a multi-line report). */
__attribute__((format(printf, 1, 2))) void pc_report(const char *fmt, ...);

/* ---- atomics: order in the name ----------------------------------------- */
/* An acquire fence: the loads before it happen before the loads after it
 * (a seqlock reader's check). GCC refuses fences under ThreadSanitizer,
 * which does not model them: there a compiler barrier, which x86 (loads are
 * not reordered with loads) makes enough. */
#if defined(__SANITIZE_THREAD__)
#define pc_fence_acquire()      atomic_signal_fence(memory_order_acquire)
#else
#define pc_fence_acquire()      atomic_thread_fence(memory_order_acquire)
#endif
#define pc_load_relaxed(p)      atomic_load_explicit((p), memory_order_relaxed)
#define pc_load_acquire(p)      atomic_load_explicit((p), memory_order_acquire)
#define pc_store_relaxed(p, v)  atomic_store_explicit((p), (v), memory_order_relaxed)
#define pc_store_release(p, v)  atomic_store_explicit((p), (v), memory_order_release)
#define pc_xchg_acq_rel(p, v)   atomic_exchange_explicit((p), (v), memory_order_acq_rel)
#define pc_xchg_acquire(p, v)   atomic_exchange_explicit((p), (v), memory_order_acquire)
#define pc_xchg_release(p, v)   atomic_exchange_explicit((p), (v), memory_order_release)
#define pc_add_relaxed(p, v)    atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define pc_add_release(p, v)    atomic_fetch_add_explicit((p), (v), memory_order_release)
#define pc_sub_relaxed(p, v)    atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)
#define pc_sub_release(p, v)    atomic_fetch_sub_explicit((p), (v), memory_order_release)
#define pc_cas_strong_acquire(p, e, d) atomic_compare_exchange_strong_explicit( \
	(p), (e), (d), memory_order_acquire, memory_order_relaxed)
#define pc_cas_strong_release(p, e, d) atomic_compare_exchange_strong_explicit( \
	(p), (e), (d), memory_order_release, memory_order_relaxed)
#define pc_cas_strong_acq_rel(p, e, d) atomic_compare_exchange_strong_explicit( \
	(p), (e), (d), memory_order_acq_rel, memory_order_acquire)
#define pc_cas_weak_relaxed(p, e, d) atomic_compare_exchange_weak_explicit( \
	(p), (e), (d), memory_order_relaxed, memory_order_relaxed)

/* Raise *p to at least v (relaxed: statistics only). */
PC_INLINE void pc_max_relaxed(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = pc_load_relaxed(p);
	while (cur < v && !pc_cas_weak_relaxed(p, &cur, v))
		;
}

PC_INLINE void pc_cpu_relax(void) { __builtin_ia32_pause(); }

/* ---- intrusive doubly linked list --------------------------------------- */
struct pc_list {
	struct pc_list *next, *prev;
};
PC_INLINE void pc_list_init(struct pc_list *h) { h->next = h->prev = h; }
PC_INLINE bool pc_list_empty(const struct pc_list *h) { return h->next == h; }
PC_INLINE void pc_list_insert(struct pc_list *e, struct pc_list *prev, struct pc_list *next)
{
	next->prev = e;
	e->next = next;
	e->prev = prev;
	prev->next = e;
}
PC_INLINE void pc_list_add(struct pc_list *e, struct pc_list *h) { pc_list_insert(e, h, h->next); }
PC_INLINE void pc_list_add_tail(struct pc_list *e, struct pc_list *h) { pc_list_insert(e, h->prev, h); }
PC_INLINE void pc_list_del(struct pc_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = e;
}
#define pc_list_entry(p, type, member) PC_CONTAINER_OF(p, type, member)
#define pc_list_first(h, type, member) pc_list_entry((h)->next, type, member)
#define pc_list_for_each(it, h) for ((it) = (h)->next; (it) != (h); (it) = (it)->next)

#endif /* PC_INTERNAL_H */
