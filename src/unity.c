/*
 * unity.c - every source of the library in one translation unit, compiled
 * into the single object file pcmalloc.o (a program that links it before the
 * C library gets pcmalloc as its malloc). The C++ operators (new.cc) are not
 * part of it: C++ programs link libpcmalloc instead.
 */
#define _GNU_SOURCE
#include "os/linux.c"
#include "os/topology.c"
#include "os/message.c"
#include "os/physmem.c"
#include "os/lifecycle.c"
#include "os/rseq.c"
#include "lock/spin.c"
#include "lock/ticket.c"
#include "lock/mcs.c"
#include "lock/mutex.c"
#include "lock/lock.c"
#include "ctl/options.c"
#include "ctl/ctl.c"
#include "page/buddy.c"
#include "page/pcp.c"
#include "page/release.c"
#include "page/topology.c"
#include "page/page_alloc.c"
#include "page/check.c"
#include "slab/cache.c"
#include "slab/slab_alloc.c"
#include "slab/slab_free.c"
#include "slab/check.c"
#include "slab/sheaf.c"
#include "slab/barn.c"
#include "malloc/init.c"
#include "malloc/large.c"
#include "malloc/huge.c"
#include "malloc/huge_table.c"
#include "malloc/huge_cache.c"
#include "malloc/malloc.c"
#include "malloc/override.c"
