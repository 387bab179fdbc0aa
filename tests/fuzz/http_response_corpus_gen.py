#!/usr/bin/env python3
"""Records the fuzz_http_response seed corpus from a real agent (run once;
the files are committed).

  http_response_corpus_gen.py BUILD_DIR OUT_DIR

Starts BUILD_DIR/bin/switchagg-agent on a private Unix socket, sends the
control API's requests (docs/control-api.md) as root, and writes each raw
answer, after one selector byte (fuzz_http_response.cc), to OUT_DIR/<name>.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

# The same lease asked for twice: the second answer is the idempotent one.
LEASE = '{"job":"77","uid":1000,"slots":2,"ttl_s":600}'
REQUESTS = [
    ("status", "GET", "/v1/status", ""),
    ("create", "POST", "/v1/leases", LEASE),
    ("create_again", "POST", "/v1/leases", LEASE),
    ("list", "GET", "/v1/leases", ""),
    ("token", "GET", "/v1/leases/77/token", ""),
    ("renew", "POST", "/v1/leases/77/renew", '{"ttl_s":900}'),
    ("drain", "POST", "/v1/drain", '{"on":false}'),
    ("metrics", "GET", "/metrics", ""),
    ("delete", "DELETE", "/v1/leases/77", ""),
    ("not_found", "DELETE", "/v1/leases/77", ""),
    ("bad_json", "POST", "/v1/leases", "{"),
    ("bad_method", "PUT", "/v1/status", ""),
    ("unknown_path", "GET", "/v2/nothing", ""),
]


def ask(sock_path, method, path, body):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    head = f"{method} {path} HTTP/1.1\r\nHost: agent\r\nContent-Length: {len(body)}\r\n"
    if body:
        head += "Content-Type: application/json\r\n"
    s.sendall((head + "\r\n" + body).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "agent.sock")
        cfg = os.path.join(d, "agent.toml")
        with open(cfg, "w") as f:
            f.write(f'[control]\nunix_socket = "{sock}"\nlisten = ""\n[data]\nlisten = "127.0.0.1:0"\n')
        agent = subprocess.Popen([os.path.join(build, "bin", "switchagg-agent"), "--config", cfg],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            line = agent.stdout.readline().decode()
            if not line.startswith("switchagg-agent ready"):
                sys.exit(f"agent did not start: {line!r}")
            for i, (name, method, path, body) in enumerate(REQUESTS):
                answer = ask(sock, method, path, body)
                # Selector: a different first-read split per seed, full body limit.
                with open(os.path.join(out, name), "wb") as f:
                    f.write(bytes([(i * 5 + 8) & 0x3f]) + answer)
        finally:
            agent.terminate()
            agent.wait(timeout=10)


if __name__ == "__main__":
    main()
