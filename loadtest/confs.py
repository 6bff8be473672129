"""Configuration writers of the load test: the clusters (tenants), the TLS certificate both
proxies serve, nginx's configuration and htpasswd files, and searchgate's config file.

Both proxies get the same clusters, credentials, certificate, body limit (40MB) and
access-log setting. nginx is configured as a fair reverse proxy: one worker on core 0,
keep-alive to clients and to an upstream pool with no request cap, request bodies
streamed (`proxy_request_buffering off`) through 64KB buffers like searchgate's, the
customer's Authorization removed and X-Forwarded-For/-Proto set.
"""

import os
import secrets
import string
import subprocess

DOMAIN = "localhost"
REGION = "us-east-1"
ALNUM = string.ascii_lowercase + string.digits


def rand(n):
    return "".join(secrets.choice(ALNUM) for _ in range(n))


def make_tenants(n):
    """`n` clusters; the first one (`acme`) is the one the single-cluster scenarios use."""
    out = []
    for i in range(max(1, n)):
        cid = "acme" if i == 0 else f"t{i:05d}"
        hostname = f"{cid}-{rand(4)}"
        out.append({
            "id": cid,
            "hostname": hostname,
            "host": f"{hostname}.{REGION}.{DOMAIN}",
            "user": f"u{rand(11)}",
            "pass": rand(20),
        })
    return out


def write_tenants_file(work, tenants):
    path = os.path.join(work, "tenants.txt")
    with open(path, "w") as f:
        for t in tenants:
            f.write(f"{t['host']} {t['user']} {t['pass']}\n")
    return path


def make_cert(work):
    """An ECDSA P-256 self-signed certificate for localhost and *.<region>.localhost."""
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", f"subjectAltName=DNS:localhost,DNS:*.{REGION}.{DOMAIN}"],
        check=True, capture_output=True,
    )
    return cert, key


def write_searchgate(work, name, args, tenants, up_port, cert, key, record=True, metrics=False):
    """searchgate's configuration for the instance `name` (its data dir and log take the
    name); `record`: record request metrics; `metrics`: a metrics listener on port 0."""
    data = os.path.join(work, name)
    os.makedirs(data, exist_ok=True)
    log = "off" if args.access_log == "off" else os.path.join(work, f"{name}-access.log")
    lines = [
        "[edge]",
        f'domain = "{DOMAIN}"',
        'http = "127.0.0.1:0"',
        'https = "127.0.0.1:0"',
        f'data_dir = "{data}"',
        f'tls_cert = "{cert}"',
        f'tls_key = "{key}"',
        "route_by_username = true",
        f'access_log = "{log}"',
        f"record_metrics = {'true' if record else 'false'}",
        f"pin_workers = {'false' if getattr(args, 'pin_workers', 'on') == 'off' else 'true'}",
        f'upstream_congestion = "{getattr(args, "upstream_congestion", "cubic")}"',
    ] + (['metrics = "127.0.0.1:0"'] if metrics else []) + [
        "",
        "[[plans]]",
        'name = "load"',
        "concurrency = 4096",
        "queue_size = 4096",
        'queue_timeout = "5s"',
        "shards = 10",
        'disk = "1gb"',
        'memory = "256mb"',
        "max_bulk_actions = 1000000",
        "",
    ]
    for t in tenants:
        lines += [
            "[[clusters]]",
            f'id = "{t["id"]}"',
            f'hostname = "{t["hostname"]}"',
            f'region = "{REGION}"',
            'class = "single-tenant"',
            'plan = "load"',
            f'username = "{t["user"]}"',
            f'password = "{t["pass"]}"',
            f'upstream = ["127.0.0.1:{up_port}"]',
            "",
        ]
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def basic(user, password):
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def write_nginx(work, args, tenants, up_port, http_port, https_port, cert, key, workers=1):
    """nginx.conf with one server block per cluster (server_name routing like searchgate's
    Host routing) and a default server answering 404. One worker is pinned to the first
    core of the runner's mask (like searchgate's one worker); two workers get
    `worker_cpu_affinity auto` (one per core, as searchgate pins its workers)."""
    pw = os.path.join(work, "htpasswd")
    os.makedirs(pw, exist_ok=True)
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    access = ("access_log off;" if args.access_log == "off"
              else f"access_log {work}/nginx-access.log combined buffer=32k flush=1s;")
    listen = f"listen 127.0.0.1:{http_port}; listen 127.0.0.1:{https_port} ssl;"
    servers = []
    auth_map = []
    for i, t in enumerate(tenants):
        names = t["host"] + (" localhost" if i == 0 else "")
        if args.nginx_auth == "basic":
            f = os.path.join(pw, t["id"])
            with open(f, "w") as fh:
                fh.write(f"{t['user']}:{{PLAIN}}{t['pass']}\n")
            check = f'auth_basic "searchgate"; auth_basic_user_file {f};'
        else:
            for name in names.split():
                auth_map.append(f'    "{name}|{basic(t["user"], t["pass"])}" 1;')
            check = "if ($sg_auth_ok = 0) { return 401; }"
        servers.append(f"  server {{ {listen} server_name {names}; {check}\n"
                       "    location / { proxy_pass http://backend; } }")
    map_block = ""
    if auth_map:
        # Keys are long (host and base64 credentials): room for them in the map's hash.
        map_block = ('  map_hash_bucket_size 256;\n  map_hash_max_size 65536;\n'
                     '  map "$host|$http_authorization" $sg_auth_ok {\n    default 0;\n'
                     + "\n".join(auth_map) + "\n  }\n")
    conf = f"""# written by loadtest/confs.py
daemon off;
master_process on;
worker_processes {workers};
worker_cpu_affinity {"01" if workers == 1 else "auto"};
worker_rlimit_nofile 65536;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
  {access}
  server_names_hash_max_size 8192;
  server_names_hash_bucket_size 128;
  keepalive_timeout 75s;
  keepalive_requests 10000000;
  client_max_body_size 40m;
  client_body_buffer_size {getattr(args, "nginx_body_buffer", "64k")};
  client_body_temp_path {work}/client_body;
  proxy_temp_path {work}/proxy_temp;
  fastcgi_temp_path {work}/fastcgi_temp;
  uwsgi_temp_path {work}/uwsgi_temp;
  scgi_temp_path {work}/scgi_temp;
  ssl_certificate {cert};
  ssl_certificate_key {key};
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  upstream backend {{
    server 127.0.0.1:{up_port};
    keepalive 256;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
  }}
  proxy_http_version 1.1;
  proxy_request_buffering off;
  proxy_set_header Connection "";
  proxy_set_header Host $http_host;
  proxy_set_header Authorization "";
  proxy_set_header X-Forwarded-For $remote_addr;
  proxy_set_header X-Forwarded-Proto $scheme;
{map_block}  server {{ listen 127.0.0.1:{http_port} default_server; listen 127.0.0.1:{https_port} ssl default_server; return 404; }}
{chr(10).join(servers)}
}}
"""
    path = os.path.join(work, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return path
