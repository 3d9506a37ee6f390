/*
 * os/rseq_x86_64.h - the restartable sequences behind the per-CPU sheaves
 * (declared in os.h, "per-CPU stacks on rseq"; the design is in slab.h), as
 * inline assembly, so that malloc and free run them without a call.
 *
 * Each function is one rseq critical section on glibc's registration of the
 * calling thread (struct rseq at %fs:os_rseq_offset; we never register and
 * never write a field the kernel owns; we write only rseq_cs, which is ours
 * to arm). The kernel moves the thread to the section's abort handler if it
 * is preempted, migrated or gets a signal between the start label and the
 * end of the commit instruction; the abort handler jumps back to the arming
 * store and starts over, because the kernel clears rseq_cs when it aborts.
 *
 * The per-CPU slots: slot i is 64 bytes at base + (i << 6); its first word
 * points to a stack { u32 capacity; u32 count; u64 link; void *objects[] }.
 * A section reads the CPU number (rseq cpu_id: negative when this thread is
 * not registered, which fails the call), the slot's stack, and commits with
 * exactly one store, its last instruction. Every jump inside a section goes
 * to a label of the same section (forward, or back within a copy loop) or
 * out of it for good (a failure exit that commits nothing): code outside
 * [start, end) is never run between a section's reads and its commit, where
 * a preemption would go unseen.
 *
 * Each inlined copy of a sequence has labels of its own (%= numbers the asm
 * statement), its own struct rseq_cs descriptor (section __rseq_cs, which
 * glibc and the kernel do not read: only the pointer we arm matters) and its
 * own abort handler, placed out of line in section __rseq_failure after the
 * RSEQ_SIG word the kernel checks, so the fast path jumps over nothing.
 * Failure exits are asm goto labels: the compiler branches straight to the
 * caller's slow path, with no status value to test.
 *
 * tests/unit/os/rseq.c forces each abort path deterministically (a fault
 * inside the section: the kernel aborts it before delivering SIGSEGV).
 */
#ifndef PC_OS_RSEQ_X86_64_H
#define PC_OS_RSEQ_X86_64_H

#include "../internal.h"

#include <stddef.h>

/* The offset of struct rseq from the thread pointer (rseq.c; set once by
 * os_rseq_setup before any sequence runs). */
extern ptrdiff_t os_rseq_offset PC_HIDDEN;

#define OS_RSEQ_SLOT_SHIFT 6
#define OS_RSEQ_STR_(x) #x
#define OS_RSEQ_STR(x) OS_RSEQ_STR_(x)
#define OS_RSEQ_SIG 0x53053053 /* glibc's signature on x86 */

/* struct rseq_cs { u32 version, flags; u64 start_ip, post_commit_offset,
 * abort_ip } for the section [.Lstart%=, .Lend%=), and its abort handler:
 * the signature word, then a jump back to .Larm%= (re-arm and retry). */
#define OS_RSEQ_SECTION_TAIL                                                    \
	".pushsection __rseq_cs, \"aw\"\n\t"                                    \
	".balign 32\n"                                                          \
	".Lcs%=:\n\t"                                                           \
	".long 0, 0\n\t"                                                        \
	".quad .Lstart%=, .Lend%= - .Lstart%=, .Labort%=\n\t"                   \
	".popsection\n\t"                                                       \
	".pushsection __rseq_failure, \"ax\"\n\t"                               \
	".long " OS_RSEQ_STR(OS_RSEQ_SIG) "\n" /* the kernel checks it */       \
	".Labort%=:\n\t"                                                        \
	"jmp .Larm%=\n\t" /* aborted: arm again and retry */                    \
	".popsection\n\t"

/* The start of a pop or a push, up to the stack's address: arm the section,
 * read the CPU number, leave for the asm goto label `fail` (a string) when
 * this thread is not registered, and load the current CPU's stack. Operands
 * %[cpu] and %[stack] (scratch), %[base] and %[off] (inputs). The sign test
 * is the shift's: cpu_id is a 32-bit number sign-extended to 64 bits, so
 * bits 63..31 are all its sign, and shifted left by 6 bit 63 still is (shl
 * sets SF from its result); one instruction less than a test before it. */
#define OS_RSEQ_STACK_ENTER(fail)                                               \
	".Larm%=:\n\t"                                                          \
	"leaq .Lcs%=(%%rip), %[cpu]\n\t"        /* our descriptor */            \
	"movq %[cpu], %%fs:8(%[off])\n"         /* arm: rseq->rseq_cs = &it */  \
	".Lstart%=:\n\t"                                                        \
	"movslq %%fs:4(%[off]), %[cpu]\n\t"     /* cpu = rseq->cpu_id (sign-extended) */\
	"shlq $6, %[cpu]\n\t"                   /* byte offset of this CPU's slot; */\
	"js %l[" fail "]\n\t"                   /* its sign: not registered */  \
	"movq (%[base],%[cpu]), %[stack]\n\t"   /* stack = the slot's stack */

/* The start of a section that must run on one given CPU and find one given
 * pointer in that CPU's slot: arm the section, leave for the asm goto label
 * `fail` when the CPU we run on is not %[cpu] (or the thread is not
 * registered: negative), or when *%[slot] is not the operand named
 * `expect`. Operands %[tmp] (scratch), %[cpu], %[slot], %[off] (inputs). */
#define OS_RSEQ_ON_CPU_SLOT_HOLDS(expect, fail)                                 \
	".Larm%=:\n\t"                                                          \
	"leaq .Lcs%=(%%rip), %[tmp]\n\t"        /* our descriptor */            \
	"movq %[tmp], %%fs:8(%[off])\n"         /* arm: rseq->rseq_cs = &it */  \
	".Lstart%=:\n\t"                                                        \
	"movl %%fs:4(%[off]), %k[tmp]\n\t"      /* the CPU we run on */         \
	"cmpl %[cpu], %k[tmp]\n\t"              /* not cpu: fail */             \
	"jne %l[" fail "]\n\t"                                                   \
	"cmpq %[" expect "], (%[slot])\n\t"     /* the slot holds another: fail */\
	"jne %l[" fail "]\n\t"

/* The copy of os_rseq_pop_many and os_rseq_push_many: %[cpu] is set to
 * &objects[n] of the stack (its register is free by then), then %[k] words
 * are copied from the operand named `from` to the one named `to` (strings:
 * "cpu" is one of them), one index %[i] for both. Inside the section: the
 * jump back stays in it, and an abort restarts the copy from the arming. */
#define OS_RSEQ_COPY_AT_TOP(from, to)                                           \
	"leaq 16(%[stack],%[n],8), %[cpu]\n\t"  /* &objects[n] (cpu's register reused) */\
	"xorl %k[i], %k[i]\n"                                                   \
	"1:\n\t"                                                                \
	"movq (%[" from "],%[i],8), %[tmp]\n\t"                                 \
	"movq %[tmp], (%[" to "],%[i],8)\n\t"                                   \
	"addq $1, %[i]\n\t"                                                     \
	"cmpq %[k], %[i]\n\t"                                                   \
	"jb 1b\n\t"                             /* back: still inside the section */

/* Pop from the current CPU's stack: the object, or NULL when the stack is
 * empty or the thread has no rseq registration. */
static inline __attribute__((always_inline)) void *os_rseq_pop(void *base)
{
	void *obj;
	uintptr_t cpu, stack, n;
	__asm__ volatile goto(
		OS_RSEQ_STACK_ENTER("fail")
		"movl 4(%[stack]), %k[n]\n\t"           /* n = count (zero-extended) */
		"testl %k[n], %k[n]\n\t"                /* empty: leave, slow path */
		"jz %l[fail]\n\t"
		"movq 8(%[stack],%[n],8), %[obj]\n\t"   /* obj = objects[n - 1] (objects at 16) */
		"subl $1, %k[n]\n\t"                    /* n - 1 */
		"movl %k[n], 4(%[stack])\n"             /* commit: count = n - 1 */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [obj] "=&r"(obj), [cpu] "=&r"(cpu), [stack] "=&r"(stack), [n] "=&r"(n)
		: [base] "r"(base), [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: fail);
	PC_ASSUME(obj != NULL); /* stacks never hold NULL (push's contract) */
	return obj;
fail:
	return NULL;
}

/* Push obj onto the current CPU's stack: 1 if pushed; 0 if full or not
 * registered; -1 if obj already is one of the stack's two topmost objects
 * (then nothing is pushed). The comparison runs before the capacity test, so
 * a full stack is checked too, and an empty one needs no test: with
 * count < 2 the comparisons read the words before objects[], the link (NULL
 * or another stack, never an object: the caller's contract, os.h) and the
 * capacity word (capacity, count 0: a small number, never an object). */
static inline __attribute__((always_inline)) int os_rseq_push(void *base, void *obj)
{
	uintptr_t cpu, stack, n;
	__asm__ volatile goto(
		OS_RSEQ_STACK_ENTER("full")
		"movl 4(%[stack]), %k[n]\n\t"           /* n = count */
		"cmpq %[obj], 8(%[stack],%[n],8)\n\t"   /* obj == objects[n - 1] (link if n == 0)? */
		"je %l[twice]\n\t"
		"cmpq %[obj], (%[stack],%[n],8)\n\t"    /* obj == objects[n - 2] (link if n == 1,
							   capacity word if n == 0)? */
		"je %l[twice]\n\t"
		"cmpl (%[stack]), %k[n]\n\t"            /* n >= capacity: full, slow path */
		"jae %l[full]\n\t"
		"movq %[obj], 16(%[stack],%[n],8)\n\t"  /* objects[n] = obj (above the top:
							   harmless if we abort now) */
		"addl $1, %k[n]\n\t"                    /* n + 1 */
		"movl %k[n], 4(%[stack])\n"             /* commit: count = n + 1 */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [cpu] "=&r"(cpu), [stack] "=&r"(stack), [n] "=&r"(n)
		: [base] "r"(base), [obj] "r"(obj), [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: full, twice);
	return 1;
full:
	return 0;
twice:
	/* Left without a commit, so what we read was one consistent state of
	 * this CPU's stack: obj was in it, free, at that instant. */
	return -1;
}

/* Move up to `want` objects from the top of the current CPU's stack to
 * out[0..k), in their order (out[k - 1] was the top), and return k: 0 when
 * the stack is empty or the thread is not registered. For slow paths (a
 * sheaf slow path moves half of a full main sheaf into its spare). The copy
 * loop runs inside the section: an abort anywhere in it starts the copy over
 * (out is the caller's private memory: a partial copy is harmless), and
 * only the count store commits. */
static inline __attribute__((always_inline)) unsigned os_rseq_pop_many(void *base, void **out,
								       unsigned want)
{
	uintptr_t cpu, stack, n, k, i, tmp;
	__asm__ volatile goto(
		OS_RSEQ_STACK_ENTER("none")
		"movl 4(%[stack]), %k[n]\n\t"           /* n = count */
		"movl %k[want], %k[k]\n\t"
		"cmpl %k[n], %k[k]\n\t"
		"cmoval %k[n], %k[k]\n\t"               /* k = min(want, n) */
		"testl %k[k], %k[k]\n\t"                /* empty: nothing to move */
		"jz %l[none]\n\t"
		"subl %k[k], %k[n]\n\t"                 /* n = the new count */
		OS_RSEQ_COPY_AT_TOP("cpu", "out")       /* out[i] = objects[n + i] */
		"movl %k[n], 4(%[stack])\n"             /* commit: count = n */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [cpu] "=&r"(cpu), [stack] "=&r"(stack), [n] "=&r"(n), [k] "=&r"(k),
		  [i] "=&r"(i), [tmp] "=&r"(tmp)
		: [base] "r"(base), [out] "r"(out), [want] "r"((uintptr_t)want),
		  [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: none);
	return (unsigned)k;
none:
	return 0;
}

/* Push in[0..k) onto the current CPU's stack (in[k - 1] ends on top), k the
 * most of `want` that fits, and return k: 0 when the stack is full or the
 * thread is not registered. No double-free test: for slow paths that move
 * objects that were on a sheaf already (a spare's into an empty main). The
 * copy writes above the stack's top, harmless if aborted (as the push's
 * store); only the count store commits. */
static inline __attribute__((always_inline)) unsigned os_rseq_push_many(void *base,
									void *const *in,
									unsigned want)
{
	uintptr_t cpu, stack, n, k, i, tmp;
	__asm__ volatile goto(
		OS_RSEQ_STACK_ENTER("none")
		"movl 4(%[stack]), %k[n]\n\t"           /* n = count */
		"movl (%[stack]), %k[k]\n\t"            /* capacity */
		"subl %k[n], %k[k]\n\t"                 /* k = capacity - n: the room */
		"jbe %l[none]\n\t"                      /* no room */
		"cmpl %k[want], %k[k]\n\t"
		"cmoval %k[want], %k[k]\n\t"            /* k = min(room, want) */
		"testl %k[k], %k[k]\n\t"                /* want == 0 */
		"jz %l[none]\n\t"
		OS_RSEQ_COPY_AT_TOP("in", "cpu")        /* objects[n + i] = in[i] */
		"addl %k[k], %k[n]\n\t"                 /* n + k */
		"movl %k[n], 4(%[stack])\n"             /* commit: count = n + k */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [cpu] "=&r"(cpu), [stack] "=&r"(stack), [n] "=&r"(n), [k] "=&r"(k),
		  [i] "=&r"(i), [tmp] "=&r"(tmp)
		: [base] "r"(base), [in] "r"(in), [want] "r"((uintptr_t)want),
		  [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: none);
	return (unsigned)k;
none:
	return 0;
}

/* On CPU cpu only: if slot cpu holds old_stack, store new_stack; true if
 * stored, false if the caller runs elsewhere or the slot changed. Run on
 * that CPU, the store aborts every section of that CPU that read old_stack
 * and has not committed yet. */
static inline __attribute__((always_inline)) bool os_rseq_slot_cas(void *base, unsigned cpu,
								   void *old_stack, void *new_stack)
{
	uintptr_t tmp;
	void **slot = (void **)((char *)base + ((uintptr_t)cpu << OS_RSEQ_SLOT_SHIFT));
	__asm__ volatile goto(
		OS_RSEQ_ON_CPU_SLOT_HOLDS("old", "fail")
		"movq %[new], (%[slot])\n"              /* commit: slot = new */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [tmp] "=&r"(tmp)
		: [slot] "r"(slot), [cpu] "r"(cpu), [old] "r"(old_stack), [new] "r"(new_stack),
		  [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: fail);
	return true;
fail:
	return false;
}

/* On CPU cpu only: if slot cpu holds stack, stack->capacity is old_cap and
 * stack->count <= new_cap, store new_cap into stack->capacity; true if
 * stored, false if the caller runs elsewhere or any test failed. Run on that
 * CPU, the store aborts every section of that CPU that read the old
 * capacity and has not committed yet, so once it returns no push on that
 * CPU can leave more than new_cap objects on the stack. */
static inline __attribute__((always_inline)) bool os_rseq_stack_resize(void *base, unsigned cpu,
								       struct os_rseq_stack *stack,
								       uint32_t old_cap, uint32_t new_cap)
{
	uintptr_t tmp;
	void **slot = (void **)((char *)base + ((uintptr_t)cpu << OS_RSEQ_SLOT_SHIFT));
	__asm__ volatile goto(
		OS_RSEQ_ON_CPU_SLOT_HOLDS("stack", "fail")
		"cmpl %[old], (%[stack])\n\t"           /* capacity changed meanwhile: fail */
		"jne %l[fail]\n\t"
		"cmpl %[new], 4(%[stack])\n\t"          /* count > new_cap: fail */
		"ja %l[fail]\n\t"
		"movl %[new], (%[stack])\n"              /* commit: capacity = new_cap */
		".Lend%=:\n\t"
		OS_RSEQ_SECTION_TAIL
		: [tmp] "=&r"(tmp)
		: [slot] "r"(slot), [cpu] "r"(cpu), [stack] "r"(stack), [old] "r"(old_cap),
		  [new] "r"(new_cap), [off] "r"(os_rseq_offset)
		: "memory", "cc"
		: fail);
	return true;
fail:
	return false;
}

#endif /* PC_OS_RSEQ_X86_64_H */
