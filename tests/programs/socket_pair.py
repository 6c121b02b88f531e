"""Listen on 127.0.0.1, connect to itself, print the port, and wait (tests/test_processes.py, sockets)."""

import socket
import time

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
out = socket.create_connection(srv.getsockname())
print(srv.getsockname()[1], flush=True)
time.sleep(60)
