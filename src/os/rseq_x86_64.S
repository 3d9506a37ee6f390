/*
 * os/rseq_x86_64.S - the restartable sequences behind the per-CPU sheaves
 * (declared in os.h, "per-CPU stacks on rseq"; the design is in slab.h).
 *
 * Each function is one rseq critical section on glibc's registration of the
 * calling thread (struct rseq at %fs:os_rseq_offset; we never register and
 * never write a field the kernel owns; we write only rseq_cs, which is ours
 * to arm). The kernel moves the thread to the section's abort handler if it
 * is preempted, migrated or gets a signal between the start label and the
 * end of the commit instruction; the abort handler re-arms and starts over,
 * because the kernel clears rseq_cs when it aborts.
 *
 * The per-CPU slots: slot i is 64 bytes at base + (i << 6); its first word
 * points to a stack { u32 count; u32 capacity; u64 link; void *objects[] }.
 * A section reads the CPU number (rseq cpu_id: negative when this thread is
 * not registered, which fails the call), the slot's stack, and commits with
 * exactly one store, its last instruction. Every jump inside a section goes
 * forward to a label of the same section or out of it for good (a failure
 * exit that commits nothing): code outside [start, end) is never run between
 * a section's reads and its commit, where a preemption would go unseen.
 *
 * SysV ABI: arguments in rdi, rsi, rdx, rcx; result in rax; rax, rcx, rdx,
 * rsi, rdi, r8-r11 may be clobbered.
 */
#define RSEQ_SIG      0x53053053 /* glibc's signature on x86 */
#define RSEQ_CS       8          /* offsetof(struct rseq, rseq_cs) */
#define RSEQ_CPU_ID   4          /* offsetof(struct rseq, cpu_id) */
#define STACK_COUNT   0
#define STACK_CAP     4
#define STACK_OBJECTS 16
#define SLOT_SHIFT    6

/* struct rseq_cs: version, flags, start_ip, post_commit_offset, abort_ip. */
#define RSEQ_DESCRIPTOR(name, start, end, abort) \
	.section .data.rel.ro, "aw";             \
	.balign 32;                              \
name:	.long 0, 0;                              \
	.quad start, (end - start), abort;       \
	.text

	.text

/* void *os_rseq_pop(void *base): pop from the current CPU's stack.
 * Returns the object, or NULL when the stack is empty or the thread has no
 * rseq registration. */
	.globl os_rseq_pop
	.hidden os_rseq_pop
	.type os_rseq_pop, @function
	.balign 16
os_rseq_pop:
	.cfi_startproc
	movq os_rseq_offset(%rip), %rdx    /* rdx = offset of struct rseq from %fs */
.Lpop_arm:
	leaq .Lpop_cs(%rip), %rax          /* our descriptor */
	movq %rax, %fs:RSEQ_CS(%rdx)       /* arm: rseq->rseq_cs = &descriptor */
.Lpop_start:
	movslq %fs:RSEQ_CPU_ID(%rdx), %rax /* cpu = rseq->cpu_id (sign-extended) */
	testq %rax, %rax                   /* negative: not registered */
	js .Lpop_fail
	shlq $SLOT_SHIFT, %rax             /* byte offset of this CPU's slot */
	movq (%rdi,%rax), %rcx             /* rcx = the slot's stack */
	movl STACK_COUNT(%rcx), %eax       /* eax = count */
	testl %eax, %eax                   /* empty: leave, slow path */
	jz .Lpop_fail
	subl $1, %eax                      /* eax = count - 1, the top's index */
	movq STACK_OBJECTS(%rcx,%rax,8), %r8 /* r8 = objects[count - 1] */
	movl %eax, STACK_COUNT(%rcx)       /* commit: count = count - 1 */
.Lpop_end:
	movq %r8, %rax                     /* return the object */
	ret
.Lpop_fail:
	xorl %eax, %eax                    /* NULL */
	ret
	.long RSEQ_SIG                     /* signature the kernel checks */
.Lpop_abort:
	jmp .Lpop_arm                      /* aborted: arm again and retry */
	.cfi_endproc
	.size os_rseq_pop, . - os_rseq_pop
	RSEQ_DESCRIPTOR(.Lpop_cs, .Lpop_start, .Lpop_end, .Lpop_abort)

/* int os_rseq_push(void *base, void *obj): push onto the current CPU's
 * stack. Returns 1; 0 when it is full or the thread is not registered; -1
 * when obj already is one of the two topmost objects (a double free: the
 * caller reports it). The comparison runs before the capacity test, so a
 * full stack is checked too. It reads objects[count - 1] and
 * objects[count - 2] only when count > 0: with count == 1 the second is the
 * link word before objects[], which holds NULL or a pointer to another stack,
 * never an object (the caller's contract, os.h). */
	.globl os_rseq_push
	.hidden os_rseq_push
	.type os_rseq_push, @function
	.balign 16
os_rseq_push:
	.cfi_startproc
	movq os_rseq_offset(%rip), %rdx    /* rdx = offset of struct rseq from %fs */
.Lpush_arm:
	leaq .Lpush_cs(%rip), %rax         /* our descriptor */
	movq %rax, %fs:RSEQ_CS(%rdx)       /* arm: rseq->rseq_cs = &descriptor */
.Lpush_start:
	movslq %fs:RSEQ_CPU_ID(%rdx), %rax /* cpu = rseq->cpu_id */
	testq %rax, %rax                   /* negative: not registered */
	js .Lpush_fail
	shlq $SLOT_SHIFT, %rax             /* byte offset of this CPU's slot */
	movq (%rdi,%rax), %rcx             /* rcx = the slot's stack */
	movl STACK_COUNT(%rcx), %eax       /* eax = count */
	testl %eax, %eax                   /* empty: nothing to compare with */
	jz .Lpush_room                     /* (a jump forward inside the section) */
	cmpq %rsi, STACK_OBJECTS-8(%rcx,%rax,8) /* obj == objects[count - 1]? */
	je .Lpush_twice
	cmpq %rsi, STACK_OBJECTS-16(%rcx,%rax,8) /* obj == objects[count - 2]
					     (the link word when count == 1)? */
	je .Lpush_twice
.Lpush_room:
	cmpl STACK_CAP(%rcx), %eax         /* count >= capacity: full, slow path */
	jae .Lpush_fail
	movq %rsi, STACK_OBJECTS(%rcx,%rax,8) /* objects[count] = obj (above the
					     top: harmless if we abort now) */
	addl $1, %eax                      /* eax = count + 1 */
	movl %eax, STACK_COUNT(%rcx)       /* commit: count = count + 1 */
.Lpush_end:
	movl $1, %eax                      /* pushed */
	ret
.Lpush_fail:
	xorl %eax, %eax                    /* not pushed */
	ret
.Lpush_twice:
	/* Left without a commit, so what we read was one consistent state of
	 * this CPU's stack: obj was in it, free, at that instant. */
	movl $-1, %eax                     /* already on the stack */
	ret
	.long RSEQ_SIG                     /* signature the kernel checks */
.Lpush_abort:
	jmp .Lpush_arm                     /* aborted: arm again and retry */
	.cfi_endproc
	.size os_rseq_push, . - os_rseq_push
	RSEQ_DESCRIPTOR(.Lpush_cs, .Lpush_start, .Lpush_end, .Lpush_abort)

/* bool os_rseq_slot_cas(void *base, unsigned cpu, void *old, void *new):
 * if the caller runs on `cpu` and slot cpu's stack pointer is `old`, store
 * `new` there and return 1; else 0. Run on that CPU, the store aborts every
 * section of that CPU that read `old` and has not committed yet. */
	.globl os_rseq_slot_cas
	.hidden os_rseq_slot_cas
	.type os_rseq_slot_cas, @function
	.balign 16
os_rseq_slot_cas:
	.cfi_startproc
	movq os_rseq_offset(%rip), %r8     /* r8 = offset of struct rseq from %fs */
	movl %esi, %r9d                    /* r9 = cpu (zero-extended) */
	shlq $SLOT_SHIFT, %r9              /* byte offset of slot cpu */
.Lcas_arm:
	leaq .Lcas_cs(%rip), %rax          /* our descriptor */
	movq %rax, %fs:RSEQ_CS(%r8)        /* arm: rseq->rseq_cs = &descriptor */
.Lcas_start:
	movl %fs:RSEQ_CPU_ID(%r8), %eax    /* the CPU we run on (or negative) */
	cmpl %esi, %eax                    /* not cpu: fail */
	jne .Lcas_fail
	cmpq %rdx, (%rdi,%r9)              /* the slot no longer holds old: fail */
	jne .Lcas_fail
	movq %rcx, (%rdi,%r9)              /* commit: slot = new */
.Lcas_end:
	movl $1, %eax                      /* stored */
	ret
.Lcas_fail:
	xorl %eax, %eax                    /* not stored */
	ret
	.long RSEQ_SIG                     /* signature the kernel checks */
.Lcas_abort:
	jmp .Lcas_arm                      /* aborted: arm again and retry */
	.cfi_endproc
	.size os_rseq_slot_cas, . - os_rseq_slot_cas
	RSEQ_DESCRIPTOR(.Lcas_cs, .Lcas_start, .Lcas_end, .Lcas_abort)

	.section .note.GNU-stack, "", @progbits
