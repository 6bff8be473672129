#!/usr/bin/env python3
"""Peak RSS of the embedded engine under the requests that once took gigabytes (issue 25):
`_mget` of 500,000 ids and `_msearch` of 5000 searches, against `searchgate engine` on a
free loopback port with 2000 documents of about 200 bytes. Prints each request's status,
answer size, time and the engine's peak RSS (VmHWM) after it.

usage: python3 loadtest/engine_memory.py [BINARY] [ENGINE OPTIONS...]
       (BINARY defaults to target/release/searchgate; e.g. --breaker-request-mb 100)
"""
import json, subprocess, sys, time, http.client, tempfile, re, os, shutil

if any(a in ("-h", "--help") for a in sys.argv[1:]):
    print(__doc__)
    sys.exit(0)
binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/searchgate"
extra = sys.argv[2:]
d = tempfile.mkdtemp(prefix="sec_mem_")
p = subprocess.Popen([binary, "engine", "--listen", "127.0.0.1:0", "--data-dir", d] + extra,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = p.stdout.readline()
port = int(re.search(r":(\d+)", line).group(1))

def req(method, path, body=None, ct="application/json"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request(method, path, body=body, headers={"Content-Type": ct})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data

def hwm():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmHWM"):
            return int(l.split()[1]) // 1024
    return -1

req("PUT", "/t", json.dumps({"settings": {"number_of_shards": 1}}))
bulk = "".join('{"index":{"_id":"%d"}}\n{"title":"doc %d","body":"%s"}\n' % (i, i, "x" * 200) for i in range(2000))
print("bulk", req("POST", "/t/_bulk?refresh=true", bulk, "application/x-ndjson")[0])
print("start peak RSS MB", hwm())
for name, method, path, body, ct in [
    ("mget 500k ids (2000 found, rest missing)", "POST", "/t/_mget", json.dumps({"ids": [str(i) for i in range(500000)]}), "application/json"),
    ("msearch 5000 items of size 10", "POST", "/_msearch", "".join('{"index":"t"}\n{"query":{"match_all":{}}}\n' for _ in range(5000)), "application/x-ndjson"),
    ("msearch 5000 items of size 100", "POST", "/_msearch", "".join('{"index":"t"}\n{"size":100,"query":{"match_all":{}}}\n' for _ in range(5000)), "application/x-ndjson"),
]:
    t = time.time()
    st, data = req(method, path, body, ct)
    kind = ""
    if st != 200:
        kind = json.loads(data)["error"]["type"]
    print(f"{name}: status {st} {kind} body {len(body)>>20} MB, response {len(data)>>10} KB, {time.time()-t:.1f}s, peak RSS now {hwm()} MB")
p.terminate(); p.wait()
shutil.rmtree(d, ignore_errors=True)
