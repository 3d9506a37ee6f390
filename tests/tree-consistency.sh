#!/bin/sh
# Checks that the tree agrees with itself:
#  - src/unity.c includes every C source of the library (pcmalloc.o = all);
#  - docs/tunables.md documents every option of src/ctl/options.h;
#  - every layer header compiles on its own (STYLE.md section 1).
# Prints "N passed, N failed".
top=${1:-.}
cd "$top" || exit 1
pass=0 fail=0
for f in src/*/*.c; do
	rel=${f#src/}
	if grep -q "#include \"$rel\"" src/unity.c; then pass=$((pass+1)); else
		echo "src/unity.c does not include $rel"; fail=$((fail+1)); fi
done
for name in $(sed -n 's/.*X([A-Z_0-9]*, "\([a-z_.]*\)".*/\1/p' src/ctl/options.h); do
	if grep -q "\`$name\`" docs/tunables.md; then pass=$((pass+1)); else
		echo "docs/tunables.md does not document $name"; fail=$((fail+1)); fi
done
for h in src/internal.h src/*/*.h include/pcmalloc.h; do
	if echo "#include \"$h\"" | ${CC:-cc} -std=gnu11 -mcx16 -Iinclude -Isrc -fsyntax-only -x c - ; then
		pass=$((pass+1)); else echo "$h does not compile on its own"; fail=$((fail+1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
