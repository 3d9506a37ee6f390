#!/usr/bin/env bash
# tests/programs/perl_threads.sh - perl ithreads under pcmalloc: 8 threads
# build and sort hashes and arrays (each thread is a cloned interpreter, so
# memory is allocated in one thread and freed in another), and pass strings
# through a Thread::Queue; output compared with the run on glibc.
#   perl_threads.sh /path/to/libpcmalloc.so      (Debian package: perl)
source "$(dirname "$0")/lib.sh" "$@"
pc_need perl
if ! perl -Mthreads -MThread::Queue -e 1 2>/dev/null; then
	echo "perl_threads: skipped: this perl has no threads" >&2
	exit 77
fi

workload() {
	perl -Mthreads -MThread::Queue -e '
		use strict; use warnings;
		my $q = Thread::Queue->new();
		my @workers = map {
			threads->create(sub {
				my $id = shift;
				my %h;
				for my $i (1 .. 40000) {
					my $k = sprintf("k%d-%06d", $id, ($i * 7919) % 100003);
					$h{$k} = join(",", $i, $id, "x" x ($i % 64));
				}
				delete $h{sprintf("k%d-%06d", $id, ($_ * 7919) % 100003)} for grep { $_ % 3 == 0 } 1 .. 40000;
				my @keys = sort keys %h;
				my $sum = 0;
				$sum += length($h{$_}) for @keys;
				my @nums = sort { $a <=> $b } map { ($_ * 31337) % 100000 } 1 .. 60000;
				my @strs = sort map { scalar reverse($_) } @keys;
				$q->enqueue(map { "$id:$_" } @keys[0 .. 999]);
				return join(" ", $id, scalar(@keys), $sum, $keys[0], $keys[-1], $nums[30000], $strs[0]);
			}, $_)
		} 1 .. 8;
		my $consumer = threads->create(sub {
			my ($n, $len) = (0, 0);
			while (defined(my $item = $q->dequeue())) { $n++; $len += length($item); }
			return "queue $n $len";
		});
		print $_->join(), "\n" for @workers;
		$q->end();
		print $consumer->join(), "\n";
	'
}

pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "all 8 threads reported" test "$(grep -c '^[1-8] ' "$WORK/pcmalloc.out")" -eq 8
pc_finish
