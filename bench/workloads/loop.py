# loop.py: the Python workload of bench/sampling.sh --python, run by Debian's
# /usr/bin/python3. A pure-Python CPU loop in a few functions (~0.7 s for
# N=100 on this machine), then the same result line as spin.c:
#   spin cpu=<user+sys s of this process> user=<s> sys=<s> hwm_kb=<> rss_kb=<> check=<>
# so the benchmark parses both alike.
import resource
import sys


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % 1000003
    return a


def words(n):
    d = {}
    for i in range(n):
        k = "w%d" % (i % 97)
        d[k] = d.get(k, 0) + i
    return sum(d.values())


def sort_work(n):
    xs = [(i * 7919) % 10007 for i in range(n)]
    xs.sort()
    return xs[n // 2]


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def main():
    units = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    check = 0
    for u in range(units):
        check += fib(80000 + u) + words(24000) + sort_work(24000)
    r = resource.getrusage(resource.RUSAGE_SELF)
    print("spin cpu=%.6f user=%.6f sys=%.6f hwm_kb=%d rss_kb=%d check=%x" % (
        r.ru_utime + r.ru_stime, r.ru_utime, r.ru_stime,
        status_kb("VmHWM"), status_kb("VmRSS"), check))


main()
