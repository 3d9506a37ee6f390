/*
 * tests/malloc/test_cxx.cc - C++ operator new and delete in every variant:
 * plain, array, nothrow, sized delete, aligned (std::align_val_t), aligned
 * + nothrow and aligned + sized delete.
 *
 * The operators are called through volatile function pointers, so that the
 * compiler can neither elide a new/delete pair nor assume an outcome.
 */
#include <dlfcn.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

#include "test.h"

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

// Plain and array.
void *(*volatile p_new)(std::size_t) = &::operator new;
void *(*volatile p_new_arr)(std::size_t) = &::operator new[];
void (*volatile p_delete)(void *) noexcept = &::operator delete;
void (*volatile p_delete_arr)(void *) noexcept = &::operator delete[];
// Nothrow.
void *(*volatile p_new_nt)(std::size_t, const std::nothrow_t &) noexcept = &::operator new;
void *(*volatile p_new_arr_nt)(std::size_t, const std::nothrow_t &) noexcept = &::operator new[];
void (*volatile p_delete_nt)(void *, const std::nothrow_t &) noexcept = &::operator delete;
void (*volatile p_delete_arr_nt)(void *, const std::nothrow_t &) noexcept = &::operator delete[];
// Sized delete.
void (*volatile p_delete_sized)(void *, std::size_t) noexcept = &::operator delete;
void (*volatile p_delete_arr_sized)(void *, std::size_t) noexcept = &::operator delete[];
// Aligned.
void *(*volatile p_new_al)(std::size_t, std::align_val_t) = &::operator new;
void *(*volatile p_new_arr_al)(std::size_t, std::align_val_t) = &::operator new[];
void (*volatile p_delete_al)(void *, std::align_val_t) noexcept = &::operator delete;
void (*volatile p_delete_arr_al)(void *, std::align_val_t) noexcept = &::operator delete[];
// Aligned + nothrow.
void *(*volatile p_new_al_nt)(std::size_t, std::align_val_t, const std::nothrow_t &) noexcept =
	&::operator new;
void *(*volatile p_new_arr_al_nt)(std::size_t, std::align_val_t, const std::nothrow_t &) noexcept =
	&::operator new[];
void (*volatile p_delete_al_nt)(void *, std::align_val_t, const std::nothrow_t &) noexcept =
	&::operator delete;
void (*volatile p_delete_arr_al_nt)(void *, std::align_val_t, const std::nothrow_t &) noexcept =
	&::operator delete[];
// Aligned + sized delete.
void (*volatile p_delete_al_sized)(void *, std::size_t, std::align_val_t) noexcept =
	&::operator delete;
void (*volatile p_delete_arr_al_sized)(void *, std::size_t, std::align_val_t) noexcept =
	&::operator delete[];

const std::size_t sizes[] = {
	0, 1, 8, 15, 16, 17, 100, 1000, 4096, 8191, 8192, 8193, 100000,
	4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 9 * MiB,
};

// Requests no machine can satisfy.
const std::size_t too_large[] = {
	SIZE_MAX, SIZE_MAX - 4096, std::size_t(PTRDIFF_MAX) + 1, std::size_t(1) << 48,
};

bool is_aligned(const void *p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

// Writes all n bytes and reads back the ends.
bool writable(void *p, std::size_t n)
{
	if (!p)
		return false;
	if (n == 0)
		return true;
	std::memset(p, 0x5c, n);
	auto *c = static_cast<unsigned char *>(p);
	return c[0] == 0x5c && c[n - 1] == 0x5c;
}

// Runs f(n) for a too-large n and tells whether it threw std::bad_alloc.
template <class F> bool throws_bad_alloc(F f)
{
	try {
		void *p = f();
		std::fprintf(stderr, "  no exception, got %p\n", p);
		return false;
	} catch (const std::bad_alloc &) {
		return true;
	} catch (...) {
		std::fprintf(stderr, "  threw something other than std::bad_alloc\n");
		return false;
	}
}

int handler_calls;
void one_shot_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // the next failure throws
}

// A handler that throws itself (the standard's other way to give up).
struct handler_gave_up {};
void throwing_handler()
{
	handler_calls++;
	throw handler_gave_up();
}
void bad_alloc_handler()
{
	handler_calls++;
	throw std::bad_alloc();
}

} // namespace

// With PCMALLOC_EXPECT_ALL=1 (set by CTest for the runs on pcmalloc),
// operator new must not be libstdc++'s: a failed preload would test that.
TEST(new_interposed)
{
	Dl_info info;
	const char *who = "?";
	if (dladdr(reinterpret_cast<void *>(p_new), &info) && info.dli_fname)
		who = info.dli_fname;
	std::printf("operator new comes from %s\n", who);
	const char *all = std::getenv("PCMALLOC_EXPECT_ALL");
	if (all && std::strcmp(all, "1") == 0)
		CHECK(std::strstr(who, "libstdc++") == nullptr);
}

TEST(new_delete)
{
	for (std::size_t n : sizes) {
		void *p = p_new(n);
		CHECK(p != nullptr);
		CHECK(is_aligned(p, n >= 16 ? 16 : 1));
		CHECK(writable(p, n));
		p_delete(p);
		void *a = p_new_arr(n);
		CHECK(a != nullptr);
		CHECK(writable(a, n));
		p_delete_arr(a);
	}
	// new(0) gives distinct pointers
	void *z1 = p_new(0), *z2 = p_new(0);
	CHECK(z1 != nullptr && z2 != nullptr && z1 != z2);
	p_delete(z1);
	p_delete(z2);
	p_delete(nullptr);
	p_delete_arr(nullptr);
}

TEST(new_too_large_throws)
{
	for (std::size_t n : too_large) {
		CHECK(throws_bad_alloc([n] { return p_new(n); }));
		CHECK(throws_bad_alloc([n] { return p_new_arr(n); }));
		CHECK(throws_bad_alloc([n] { return p_new_al(n, std::align_val_t(64)); }));
		CHECK(throws_bad_alloc([n] { return p_new_arr_al(n, std::align_val_t(4096)); }));
	}
	// A new-expression with a valid size that cannot be had.
	volatile std::size_t big = std::size_t(1) << 47;
	CHECK(throws_bad_alloc([&] { return static_cast<void *>(new char[big]); }));
}

TEST(nothrow)
{
	for (std::size_t n : sizes) {
		void *p = p_new_nt(n, std::nothrow);
		CHECK(p != nullptr && writable(p, n));
		p_delete_nt(p, std::nothrow);
		void *a = p_new_arr_nt(n, std::nothrow);
		CHECK(a != nullptr && writable(a, n));
		p_delete_arr_nt(a, std::nothrow);
	}
	for (std::size_t n : too_large) {
		CHECK(p_new_nt(n, std::nothrow) == nullptr); // nothrow: nullptr
		CHECK(p_new_arr_nt(n, std::nothrow) == nullptr);
		CHECK(p_new_al_nt(n, std::align_val_t(64), std::nothrow) == nullptr);
		CHECK(p_new_arr_al_nt(n, std::align_val_t(64), std::nothrow) == nullptr);
	}
	volatile std::size_t big = std::size_t(1) << 47;
	char *c = new (std::nothrow) char[big];
	CHECK(c == nullptr);
	delete[] c;
}

TEST(sized_delete)
{
	for (std::size_t n : sizes) {
		void *p = p_new(n);
		CHECK(writable(p, n));
		p_delete_sized(p, n);
		void *a = p_new_arr(n);
		CHECK(writable(a, n));
		p_delete_arr_sized(a, n);
	}
	// A new-expression of an array with a destructor passes the size too.
	struct D {
		int x = 1;
		~D() { x = 0; }
	};
	for (std::size_t n : { std::size_t(1), std::size_t(100), std::size_t(10000), std::size_t(1000000) }) {
		volatile std::size_t vn = n;
		D *d = new D[vn];
		CHECK(d[n - 1].x == 1);
		delete[] d;
	}
}

TEST(aligned)
{
	for (std::size_t a = 1; a <= 64 * MiB; a *= 2) {
		for (std::size_t n : { std::size_t(1), std::size_t(24), std::size_t(5000),
				       std::size_t(100000), 4 * MiB + 1 }) {
			if (a > 1 * MiB && n > 5000)
				continue; // keep the 64 MiB cases cheap
			auto al = std::align_val_t(a);
			void *p = p_new_al(n, al);
			CHECK(p != nullptr && is_aligned(p, a)); // aligned new honours the alignment
			CHECK(writable(p, n));
			p_delete_al(p, al);
			void *q = p_new_arr_al(n, al);
			CHECK(q != nullptr && is_aligned(q, a));
			CHECK(writable(q, n));
			p_delete_arr_al(q, al);
			void *r = p_new_al_nt(n, al, std::nothrow);
			CHECK(r != nullptr && is_aligned(r, a));
			CHECK(writable(r, n));
			p_delete_al_nt(r, al, std::nothrow);
			void *s = p_new_arr_al_nt(n, al, std::nothrow);
			CHECK(s != nullptr && is_aligned(s, a));
			CHECK(writable(s, n));
			p_delete_arr_al_nt(s, al, std::nothrow);
			void *t = p_new_al(n, al); // aligned + sized delete
			CHECK(t != nullptr && is_aligned(t, a));
			p_delete_al_sized(t, n, al);
			void *u = p_new_arr_al(n, al);
			CHECK(u != nullptr && is_aligned(u, a));
			p_delete_arr_al_sized(u, n, al);
		}
	}
	// Over-aligned types go through the aligned operators.
	struct alignas(64) A64 {
		char c[64];
	};
	struct alignas(4096) A4K {
		char c[100];
	};
	A64 *x = new A64;
	CHECK(is_aligned(x, 64));
	delete x;
	volatile std::size_t n = 33;
	A4K *y = new A4K[n];
	CHECK(is_aligned(y, 4096));
	delete[] y;
	A64 *z = new (std::nothrow) A64;
	CHECK(z != nullptr && is_aligned(z, 64));
	delete z;
}

TEST(new_handler)
{
	// A failing new calls the installed handler before throwing.
	handler_calls = 0;
	std::set_new_handler(one_shot_handler);
	CHECK(throws_bad_alloc([] { return p_new(SIZE_MAX - 4096); }));
	CHECK_EQ(handler_calls, 1);
	handler_calls = 0;
	std::set_new_handler(one_shot_handler);
	CHECK(throws_bad_alloc([] { return p_new_al(SIZE_MAX - 4096, std::align_val_t(256)); }));
	CHECK_EQ(handler_calls, 1);
	// nothrow new too, then returns nullptr.
	handler_calls = 0;
	std::set_new_handler(one_shot_handler);
	CHECK(p_new_nt(SIZE_MAX - 4096, std::nothrow) == nullptr);
	CHECK_EQ(handler_calls, 1);
	// What the handler throws reaches the caller of a throwing new...
	handler_calls = 0;
	std::set_new_handler(throwing_handler);
	bool caught = false;
	try {
		p_new_arr(SIZE_MAX - 4096);
	} catch (const handler_gave_up &) {
		caught = true;
	}
	CHECK(caught);
	CHECK_EQ(handler_calls, 1);
	// ...and is turned into nullptr by every nothrow form (pcmalloc has no
	// C++ runtime of its own: new.cc hands these to the program's).
	handler_calls = 0;
	CHECK(p_new_nt(SIZE_MAX - 4096, std::nothrow) == nullptr);
	CHECK(p_new_arr_nt(SIZE_MAX - 4096, std::nothrow) == nullptr);
	CHECK(p_new_al_nt(SIZE_MAX - 4096, std::align_val_t(64), std::nothrow) == nullptr);
	CHECK(p_new_arr_al_nt(SIZE_MAX - 4096, std::align_val_t(4096), std::nothrow) == nullptr);
	CHECK_EQ(handler_calls, 4);
	handler_calls = 0;
	std::set_new_handler(bad_alloc_handler);
	CHECK(throws_bad_alloc([] { return p_new(SIZE_MAX - 4096); }));
	CHECK(p_new_al_nt(SIZE_MAX - 4096, std::align_val_t(64), std::nothrow) == nullptr);
	CHECK_EQ(handler_calls, 2);
	// With no handler, an ordinary nothrow allocation is served as before.
	std::set_new_handler(nullptr);
	void *ok = p_new_nt(100, std::nothrow);
	CHECK(ok != nullptr);
	p_delete(ok);
}

TEST(many_objects)
{
	// Containers of many small objects built and torn down: the common case.
	enum { N = 200000 };
	static void *ps[N];
	std::uint64_t rng = 11;
	for (int i = 0; i < N; i++) {
		std::size_t n = 1 + test_rand(&rng) % 512;
		ps[i] = p_new(n);
		static_cast<unsigned char *>(ps[i])[0] = static_cast<unsigned char>(i);
	}
	int bad = 0;
	for (int i = 0; i < N; i += 2) {
		bad += static_cast<unsigned char *>(ps[i])[0] != static_cast<unsigned char>(i);
		p_delete(ps[i]);
	}
	for (int i = 1; i < N; i += 2) {
		bad += static_cast<unsigned char *>(ps[i])[0] != static_cast<unsigned char>(i);
		p_delete(ps[i]);
	}
	CHECK_EQ(bad, 0);
}

int main()
{
	RUN(new_interposed);
	RUN(new_delete);
	RUN(new_too_large_throws);
	RUN(nothrow);
	RUN(sized_delete);
	RUN(aligned);
	RUN(new_handler);
	RUN(many_objects);
	return test_report();
}
