import socket, sys, threading
mode = sys.argv[1]
if mode == "sink":
    port, n = int(sys.argv[2]), int(sys.argv[3])
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(n); print("LISTENING", flush=True)
    totals = []
    def drain(c):
        t = 0
        while True:
            b = c.recv(1 << 16)
            if not b: break
            t += len(b)
        totals.append(t)
    th = []
    for _ in range(n):
        c, _a = s.accept(); t = threading.Thread(target=drain, args=(c,)); t.start(); th.append(t)
    for t in th: t.join()
    print("RECEIVED", sum(totals), flush=True)
else:
    host, port, nbytes = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    c = socket.create_connection((host, port), timeout=60)
    buf = b"x" * (1 << 16); left = nbytes
    while left > 0:
        k = c.sendall(buf[:min(left, len(buf))]); left -= min(left, len(buf))
    c.close()
