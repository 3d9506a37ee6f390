#!/usr/bin/env bash
# tests/programs/gcc.sh - the C and C++ compilers under pcmalloc (cc1 and
# cc1plus allocate a great deal): a generated C file of ~5000 lines and a
# C++ file with STL containers, compiled with -O2; the object files must be
# byte for byte those of the run on glibc, and the programs must print the
# same.
#   gcc.sh /path/to/libpcmalloc.so      (Debian packages: gcc, g++)
source "$(dirname "$0")/lib.sh" "$@"
pc_need gcc g++ perl cmp

# ~5000 lines of C: 110 functions of switches, loops, structs and strings.
perl -e '
	print "#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n\n";
	print "struct rec { int a; long b; char name[24]; double w; };\n\n";
	for my $f (0 .. 109) {
		print "static uint64_t fn$f(uint64_t x, struct rec *r, int n)\n{\n";
		print "\tuint64_t acc = $f;\n\tchar buf[64];\n";
		print "\tfor (int i = 0; i < n; i++) {\n";
		print "\t\tswitch ((x + (uint64_t)i) % 7) {\n";
		for my $c (0 .. 6) {
			my $k = ($f * 7 + $c) % 13 + 1;
			print "\t\tcase $c:\n\t\t\tacc = acc * $k + r[i % 8].a;\n";
			print "\t\t\tr[(i + $c) % 8].b ^= (long)(acc >> $c);\n\t\t\tbreak;\n";
		}
		print "\t\t}\n\t\tx = x * 6364136223846793005ULL + 1442695040888963407ULL;\n\t}\n";
		print "\tsnprintf(buf, sizeof(buf), \"%s-%d-%llu\", r[$f % 8].name, $f, (unsigned long long)(acc % 1000));\n";
		print "\tacc += strlen(buf) * $f;\n";
		print "\tfor (int j = 0; j < 8; j++)\n\t\tr[j].w = r[j].w * 0.5 + (double)(acc % 97);\n";
		print "\treturn acc ^ x;\n}\n\n";
	}
	print "int main(void)\n{\n\tstruct rec r[8];\n\tuint64_t total = 0;\n";
	print "\tfor (int i = 0; i < 8; i++) {\n\t\tr[i].a = i * 3 + 1;\n\t\tr[i].b = i;\n\t\tr[i].w = i;\n";
	print "\t\tsnprintf(r[i].name, sizeof(r[i].name), \"rec%d\", i);\n\t}\n";
	for my $f (0 .. 109) { print "\ttotal += fn$f(total + $f, r, 50 + $f % 20);\n"; }
	print "\tprintf(\"total %llu w %.3f b %ld\\n\", (unsigned long long)total, r[3].w, r[5].b);\n";
	print "\treturn 0;\n}\n";
' >"$WORK/gen.c"

cat >"$WORK/stl.cc" <<'CXX'
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

template <class K, class V> struct Table {
	std::map<K, std::vector<V>> rows;
	void add(const K &k, V v) { rows[k].push_back(std::move(v)); }
	std::size_t total() const {
		std::size_t n = 0;
		for (const auto &kv : rows) n += kv.second.size();
		return n;
	}
};

int main()
{
	Table<std::string, std::string> t;
	std::unordered_map<long, std::shared_ptr<std::string>> u;
	std::set<std::pair<int, std::string>> s;
	unsigned long x = 1;
	for (int i = 0; i < 200000; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		std::string k = "key" + std::to_string(x % 5000);
		t.add(k, std::string(x % 100, 'a' + i % 26));
		u[(long)(x % 30000)] = std::make_shared<std::string>(k);
		if (i % 3 == 0) s.emplace((int)(x % 100000), k);
	}
	std::vector<std::string> keys;
	for (const auto &kv : t.rows) keys.push_back(kv.first);
	std::sort(keys.begin(), keys.end(), [](const std::string &a, const std::string &b) {
		return a.size() != b.size() ? a.size() < b.size() : a > b;
	});
	std::size_t len = std::accumulate(keys.begin(), keys.end(), std::size_t(0),
					  [](std::size_t a, const std::string &k) { return a + k.size(); });
	std::printf("rows %zu keys %zu len %zu u %zu s %zu first %s last %s\n", t.total(), keys.size(),
		    len, u.size(), s.size(), keys.front().c_str(), keys.back().c_str());
	return 0;
}
CXX

workload() {
	cp "$WORK/gen.c" "$WORK/stl.cc" .
	gcc -O2 -frandom-seed=pcmalloc -c gen.c -o gen.o &&
		gcc gen.o -o gen &&
		g++ -O2 -frandom-seed=pcmalloc -c stl.cc -o stl.o &&
		g++ stl.o -o stl || return 1
	./gen
	./stl
}

same_objects() {
	cmp "$WORK/glibc/gen.o" "$WORK/pcmalloc/gen.o" && cmp "$WORK/glibc/stl.o" "$WORK/pcmalloc/stl.o"
}

pc_check "generated source is ~5000 lines" test "$(wc -l <"$WORK/gen.c")" -ge 4500
pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "object files identical to glibc's" same_objects
pc_finish
