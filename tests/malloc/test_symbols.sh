#!/usr/bin/env bash
# tests/malloc/test_symbols.sh - every symbol the malloc front end promises
# is exported (defined, in the dynamic symbol table) by libpcmalloc.so.
#
#   test_symbols.sh /path/to/libpcmalloc.so [nm]
#
# Prints one line per missing symbol and "N passed, N failed"; exits 1 when
# any is missing.
set -u

lib=${1:?usage: test_symbols.sh LIBPCMALLOC_SO [NM]}
nm=${2:-nm}

if [[ ! -f $lib ]]; then
	echo "no such library: $lib" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

c_api=(
	malloc free calloc realloc reallocarray posix_memalign aligned_alloc
	memalign valloc pvalloc malloc_usable_size malloc_trim mallinfo2 mallopt
	malloc_stats malloc_info
	cfree
	__libc_malloc __libc_free __libc_calloc __libc_realloc __libc_memalign
	__libc_valloc __libc_pvalloc
)
# operator new/delete, Itanium C++ ABI names for x86_64 (size_t is 'm').
cxx_api=(
	_Znwm _Znam _ZdlPv _ZdaPv
	_ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t
	_ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t
	_ZdlPvm _ZdaPvm
	_ZnwmSt11align_val_t _ZnamSt11align_val_t
	_ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t
	_ZdlPvSt11align_val_t _ZdaPvSt11align_val_t
	_ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
	_ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t
)
prefixed_api=(
	pc_malloc pc_free pc_calloc pc_realloc pc_aligned_alloc pc_malloc_usable_size
	pcmalloc_ctl_get pcmalloc_ctl_set pcmalloc_ctl_set_text
	pcmalloc_stats_print pcmalloc_stats_json pcmalloc_stats_format
)

# Defined dynamic symbols, version suffixes (@@VER, @VER) stripped.
if ! defined=$("$nm" -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u); then
	echo "$nm -D failed on $lib" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

passed=0
failed=0
check_group() {
	local group=$1
	shift
	local sym
	for sym in "$@"; do
		if grep -qxF -- "$sym" <<<"$defined"; then
			passed=$((passed + 1))
		else
			echo "symbols: $group: $sym is not exported by $lib" >&2
			failed=$((failed + 1))
		fi
	done
}
check_group "C API" "${c_api[@]}"
check_group "C++ operators" "${cxx_api[@]}"
check_group "pc_ API" "${prefixed_api[@]}"

# No C++ runtime needed (malloc/new.cc): a C program that preloads the
# library must not load libstdc++ (and libm, libgcc_s) for it.
for runtime in libstdc++ libgcc_s libm; do
	if readelf -d "$lib" 2>/dev/null | grep -q "NEEDED.*$runtime"; then
		echo "symbols: $lib needs $runtime (see src/malloc/new.cc, src/os/symbol.c)" >&2
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
done

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
