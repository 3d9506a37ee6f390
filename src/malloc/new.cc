// malloc/new.cc - C++ operator new and delete in every variant (plain,
// array, nothrow, sized, aligned), forwarding to the prefixed C API through
// its hidden names (malloc.h, pc_malloc_local, ...: a direct call or jump,
// not one through the GOT).
//
// Built without exceptions or RTTI and linked as C, so that libpcmalloc.so
// does not need the C++ runtime: a C program that preloads it does not load
// libstdc++, libm and libgcc_s (about 1.4 MB of resident pages, issue 9's
// small-program footprint). What the standard asks of the C++ runtime is
// borrowed from the one the program has already loaded, looked up when an
// allocation first fails (never on the fast path):
//
// - Throwing forms: call the new-handler (std::get_new_handler of the loaded
//   runtime) and retry while one is installed, else throw std::bad_alloc
//   through the runtime's std::__throw_bad_alloc. Without a C++ runtime in
//   the process there can be neither a handler nor a catcher: abort with
//   pcmalloc's message.
// - Nothrow forms: return the block, or nullptr at once when no handler is
//   installed. With a handler, which may throw, the standard wants the
//   throwing form called and any exception turned into nullptr; this file
//   cannot catch, so it calls the runtime's own nothrow operator new, which
//   does exactly that and calls back into our (interposed) throwing form.
//   libstdc++ since GCC 9 and libc++ implement their nothrow forms that way.
#include <cstddef>
#include <new>

#include <dlfcn.h>

#include "pcmalloc.h"

#define PC_CXX_API __attribute__((visibility("default")))

extern "C" void pc_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
// The hidden aliases of pc_malloc, pc_free and pc_aligned_alloc (malloc.h,
// which C++ does not include).
#define PC_CXX_LOCAL __attribute__((visibility("hidden")))
extern "C" void *pc_malloc_local(std::size_t size) PC_CXX_LOCAL;
extern "C" void pc_free_local(void *p) PC_CXX_LOCAL;
extern "C" void *pc_aligned_alloc_local(std::size_t align, std::size_t size) PC_CXX_LOCAL;

namespace {

typedef std::new_handler (*get_handler_fn)();
typedef void (*throw_fn)();
typedef void *(*nothrow_fn)(std::size_t, const std::nothrow_t &);
typedef void *(*nothrow_al_fn)(std::size_t, std::align_val_t, const std::nothrow_t &);

// The loaded C++ runtime's entry points, looked up once; relaxed atomics:
// racing first lookups store the same values.
struct cxx_runtime {
	get_handler_fn get_handler;
	throw_fn throw_bad_alloc;
	nothrow_fn new_nt, new_arr_nt;
	nothrow_al_fn new_al_nt, new_arr_al_nt;
};
cxx_runtime runtime;
int runtime_state; // 0 not looked up, 1 done (relaxed: see above)

void *lookup(void *lib, const char *name)
{
	return lib ? dlsym(lib, name) : nullptr;
}

__attribute__((noinline, cold)) const cxx_runtime &cxx(void)
{
	if (__atomic_load_n(&runtime_state, __ATOMIC_ACQUIRE))
		return runtime;
	// RTLD_NOLOAD: only a runtime the program already has; never load one.
	void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (!lib)
		lib = dlopen("libc++.so.1", RTLD_LAZY | RTLD_NOLOAD);
	cxx_runtime r;
	r.get_handler = reinterpret_cast<get_handler_fn>(lookup(lib, "_ZSt15get_new_handlerv"));
	r.throw_bad_alloc = reinterpret_cast<throw_fn>(lookup(lib, "_ZSt17__throw_bad_allocv"));
	r.new_nt = reinterpret_cast<nothrow_fn>(lookup(lib, "_ZnwmRKSt9nothrow_t"));
	r.new_arr_nt = reinterpret_cast<nothrow_fn>(lookup(lib, "_ZnamRKSt9nothrow_t"));
	r.new_al_nt = reinterpret_cast<nothrow_al_fn>(lookup(lib, "_ZnwmSt11align_val_tRKSt9nothrow_t"));
	r.new_arr_al_nt = reinterpret_cast<nothrow_al_fn>(lookup(lib, "_ZnamSt11align_val_tRKSt9nothrow_t"));
	runtime = r;
	// release: the fields above before the flag that lets others skip this.
	__atomic_store_n(&runtime_state, 1, __ATOMIC_RELEASE);
	return runtime;
}

std::new_handler current_handler(void)
{
	const cxx_runtime &r = cxx();
	return r.get_handler ? r.get_handler() : nullptr;
}

void *try_alloc(std::size_t size, std::size_t align)
{
	return align ? pc_aligned_alloc_local(align, size ? size : 1) : pc_malloc_local(size);
}

__attribute__((noinline, cold)) void *alloc_slow(std::size_t size, std::size_t align)
{
	for (;;) {
		std::new_handler handler = current_handler();
		if (!handler) {
			const cxx_runtime &r = cxx();
			if (r.throw_bad_alloc)
				r.throw_bad_alloc(); // throws std::bad_alloc
			pc_fatal("operator new(%zu): out of memory, and no C++ runtime to throw std::bad_alloc",
				 size);
		}
		handler();
		void *p = try_alloc(size, align);
		if (p)
			return p;
	}
}

inline void *alloc_or_throw(std::size_t size, std::size_t align)
{
	void *p = try_alloc(size, align);
	return __builtin_expect(p != nullptr, 1) ? p : alloc_slow(size, align);
}

// Nothrow: see the header comment. `runtime_form` is the runtime's own
// nothrow operator of the same shape (it catches what the handler throws).
template <class F, class... A>
__attribute__((noinline, cold)) void *nothrow_slow(F runtime_form, std::size_t size, A... args)
{
	if (!current_handler() || !runtime_form)
		return nullptr;
	const std::nothrow_t tag{}; // not std::nothrow: that object is the runtime's
	return runtime_form(size, args..., tag);
}

} // namespace

PC_CXX_API void *operator new(std::size_t n) { return alloc_or_throw(n, 0); }
PC_CXX_API void *operator new[](std::size_t n) { return alloc_or_throw(n, 0); }
PC_CXX_API void *operator new(std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }
PC_CXX_API void *operator new[](std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }

PC_CXX_API void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	void *p = pc_malloc_local(n);
	return p ? p : nothrow_slow(cxx().new_nt, n);
}
PC_CXX_API void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
	void *p = pc_malloc_local(n);
	return p ? p : nothrow_slow(cxx().new_arr_nt, n);
}
PC_CXX_API void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	void *p = try_alloc(n, static_cast<std::size_t>(a));
	return p ? p : nothrow_slow(cxx().new_al_nt, n, a);
}
PC_CXX_API void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	void *p = try_alloc(n, static_cast<std::size_t>(a));
	return p ? p : nothrow_slow(cxx().new_arr_al_nt, n, a);
}

PC_CXX_API void operator delete(void *p) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete(void *p, const std::nothrow_t &) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p, const std::nothrow_t &) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete(void *p, std::size_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p, std::size_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete(void *p, std::align_val_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p, std::align_val_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete(void *p, std::size_t, std::align_val_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { pc_free_local(p); }
PC_CXX_API void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { pc_free_local(p); }
