// malloc/new.cc - C++ operator new and delete in every variant (plain,
// array, nothrow, sized, aligned), forwarding to the prefixed C API.
// Throwing forms follow the standard: call the new-handler and retry while
// one is installed, else throw std::bad_alloc.
#include <cstddef>
#include <new>

#include "pcmalloc.h"

#define PC_CXX_API __attribute__((visibility("default")))

namespace {

void *alloc_or_throw(std::size_t size, std::size_t align)
{
	for (;;) {
		void *p = align ? pc_aligned_alloc(align, size ? size : 1) : pc_malloc(size);
		if (p)
			return p;
		std::new_handler handler = std::get_new_handler();
		if (!handler)
			throw std::bad_alloc();
		handler();
	}
}

void *alloc_nothrow(std::size_t size, std::size_t align) noexcept
{
	try {
		return alloc_or_throw(size, align);
	} catch (...) {
		return nullptr;
	}
}

} // namespace

PC_CXX_API void *operator new(std::size_t n) { return alloc_or_throw(n, 0); }
PC_CXX_API void *operator new[](std::size_t n) { return alloc_or_throw(n, 0); }
PC_CXX_API void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return alloc_nothrow(n, 0); }
PC_CXX_API void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return alloc_nothrow(n, 0); }
PC_CXX_API void *operator new(std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }
PC_CXX_API void *operator new[](std::size_t n, std::align_val_t a) { return alloc_or_throw(n, static_cast<std::size_t>(a)); }
PC_CXX_API void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return alloc_nothrow(n, static_cast<std::size_t>(a));
}
PC_CXX_API void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return alloc_nothrow(n, static_cast<std::size_t>(a));
}

PC_CXX_API void operator delete(void *p) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p) noexcept { pc_free(p); }
PC_CXX_API void operator delete(void *p, const std::nothrow_t &) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p, const std::nothrow_t &) noexcept { pc_free(p); }
PC_CXX_API void operator delete(void *p, std::size_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p, std::size_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete(void *p, std::align_val_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p, std::align_val_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete(void *p, std::size_t, std::align_val_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { pc_free(p); }
PC_CXX_API void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { pc_free(p); }
PC_CXX_API void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { pc_free(p); }
