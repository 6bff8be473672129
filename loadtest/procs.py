"""Processes of a load test run: starting them (pinned or not), reading their output,
waiting for their ports, measuring their CPU time, and stopping every one at the end.
Nothing here knows about proxies or scenarios."""

import os
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
STARTED = []  # every process started here, stopped in cleanup()


def log(msg):
    print(msg, flush=True)


def cleanup():
    for p in reversed(STARTED):
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 10
    for p in reversed(STARTED):
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    STARTED.clear()


def start(cmd, core, env=None, cwd=None):
    """Starts `cmd` pinned to `core` (None: not pinned), its output piped; registers it for
    cleanup."""
    p = subprocess.Popen(
        (["taskset", "-c", core] if core is not None else []) + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
    )
    STARTED.append(p)
    return p


def wait_line(p, prefix, timeout=30):
    """Reads `p`'s output until a line starting with `prefix`; returns that line (the lines
    read are kept in `p.seen_lines`)."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if line.startswith(prefix):
            p.seen_lines = seen
            return line.strip()
    raise RuntimeError(f"{p.args}: no `{prefix}` line; output:\n" + "\n".join(seen))


def drain(p):
    """Keeps reading `p`'s output in the background so it never blocks on a full pipe."""
    import threading

    def run():
        for _ in p.stdout:
            pass

    threading.Thread(target=run, daemon=True).start()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def cpu_ns(pids):
    """CPU time (user+system) of every thread of `pids`, in ns (schedstat when present)."""
    total = 0
    for pid in pids:
        tasks = f"/proc/{pid}/task"
        try:
            tids = os.listdir(tasks)
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                with open(f"{tasks}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
                continue
            except (FileNotFoundError, IndexError, ValueError):
                pass
            try:
                with open(f"{tasks}/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) * 10**9 // CLK_TCK
            except FileNotFoundError:
                pass
    return total


def machine_busy_ns():
    """Busy time of cores 0 and 1 from /proc/stat, in ns."""
    busy = 0
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("cpu0", "cpu1"):
                v = [int(x) for x in parts[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                busy += sum(v[:8]) - idle
    return busy * 10**9 // CLK_TCK


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return out


def raise_priority():
    """Gives this runner and everything it starts precedence over other work on the machine
    (nice -20, and the same for its autogroup, since with autogroups the nice value of a
    process only counts within its session). Root only; bounded by the runs' length."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
        if os.path.exists("/proc/self/autogroup"):
            with open("/proc/self/autogroup", "w") as f:
                f.write("-20")
        return True
    except OSError as e:
        log(f"note: cannot raise the priority ({e}); other work on the machine will disturb the runs")
        return False
