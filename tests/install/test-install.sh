#!/bin/sh
# Installs the build into a temporary prefix and uses it the four documented
# ways: pkg-config, find_package (shared and static), the single object
# pcmalloc.o linked first, and the pcmalloc-run wrapper. Each must make
# malloc pcmalloc's (probe.c prints "pcmalloc").
# Usage: test-install.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
here="$src/tests/install"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # name, command...
	name=$1; shift
	out=$("$@" 2>"$tmp/err")
	if [ "$out" = pcmalloc ]; then pass=$((pass+1)); else
		echo "FAIL $name: got '$out'"; cat "$tmp/err"; fail=$((fail+1)); fi
}
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || { echo "install failed"; exit 1; }
lib=$(ls -d "$tmp"/prefix/lib*/ | head -n 1)
export PKG_CONFIG_PATH="$lib/pkgconfig"
cc=${CC:-cc}
if command -v pkg-config >/dev/null; then
	$cc "$here/probe.c" -DWITH_API $(pkg-config --define-variable=prefix="$tmp/prefix" --cflags --libs pcmalloc) -Wl,-rpath,"$lib" -o "$tmp/pc" &&
		check pkg-config "$tmp/pc"
else
	echo "pkg-config not installed: that check skipped"
fi
mkdir -p "$tmp/consumer"
cp "$here/probe.c" "$tmp/consumer/"
cp "$here/CMakeLists.txt.in" "$tmp/consumer/CMakeLists.txt"
if cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null &&
   cmake --build "$tmp/consumer/build" >/dev/null; then
	check find_package-shared env LD_LIBRARY_PATH="$lib" "$tmp/consumer/build/probe_shared"
	check find_package-static "$tmp/consumer/build/probe_static"
else
	echo "FAIL find_package: the consumer project did not build"; fail=$((fail+1))
fi
$cc "$here/probe.c" "$lib/pcmalloc.o" -lpthread -o "$tmp/po" && check pcmalloc.o "$tmp/po"
$cc "$here/probe.c" -o "$tmp/plain"
check pcmalloc-run "$tmp/prefix/bin/pcmalloc-run" -- "$tmp/plain"
[ "$("$tmp/plain")" = other ] && pass=$((pass+1)) || { echo "FAIL: plain program already on pcmalloc?"; fail=$((fail+1)); }
for tool in pcmalloc-top pcmalloc-ctl; do # installed, and they run
	if "$tmp/prefix/bin/$tool" 2>/dev/null; [ $? -eq 64 ]; then pass=$((pass+1)); else
		echo "FAIL: $tool not installed or does not run"; fail=$((fail+1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
