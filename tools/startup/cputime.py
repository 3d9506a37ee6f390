#!/usr/bin/python3
"""tools/startup/cputime.py - the CPU time of whole runs of a program under
several allocators, interleaved, for docs/footprint.md ("2026-11-25
morning, helper footprint2").

    python3 tools/startup/cputime.py N LIB[,LIB...] PROGRAM ARGS
    PIN=1 python3 tools/startup/cputime.py 31 main.so,branch.so ./bench_prodcons --threads 2

Each LIB ('-': the C library's malloc) runs N times, the order rotated each
time: fork, exec with LD_PRELOAD=LIB (stdout to /dev/null), and os.wait4's
rusage: user + system time of the whole process, with its wall time.
PIN=cpu pins the child (all its threads) to that CPU first, which takes
out where a multi-threaded program's threads happen to run: on a shared
2-CPU machine that alone moves bench_prodcons's median by a tenth.
Prints the median (range) of each.
"""
import os
import statistics
import sys
import time


def main():
    n = int(sys.argv[1])
    libs = sys.argv[2].split(",")
    prog = sys.argv[3:]
    pin = os.environ.get("PIN")
    res = {lib: ([], []) for lib in libs}
    for r in range(n):
        for lib in libs[r % len(libs):] + libs[:r % len(libs)]:
            env = dict(os.environ)
            env.pop("PIN", None)
            if lib != "-":
                env["LD_PRELOAD"] = lib
            t0 = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                try:  # the child never returns to this loop
                    fd = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(fd, 1)
                    if pin:
                        os.sched_setaffinity(0, {int(pin)})
                    os.execve(prog[0], prog, env)
                finally:
                    os._exit(127)
            _, status, ru = os.wait4(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:  # a failed run is no sample
                sys.exit(f"{lib}: {prog[0]} exited with status {status:#x}")
            res[lib][0].append(time.perf_counter() - t0)
            res[lib][1].append(ru.ru_utime + ru.ru_stime)
    print("load %.1f %.1f %.1f" % os.getloadavg(), " ".join(prog), "n", n, "pin", pin or "-")
    for lib in libs:
        w, c = res[lib]
        print("  %-24s cpu %.2f ms (%.2f-%.2f)  wall %.2f ms (%.2f-%.2f)" % (
            lib[-24:], 1e3 * statistics.median(c), 1e3 * min(c), 1e3 * max(c),
            1e3 * statistics.median(w), 1e3 * min(w), 1e3 * max(w)))


if __name__ == "__main__":
    main()
