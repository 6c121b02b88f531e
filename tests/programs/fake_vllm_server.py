"""A stand-in for a vLLM server (tests/test_server.py): answers GET on ``--port`` and forks a child, as vLLM
starts its engine process. ``FAKE_MODE=rank``: fails like vLLM on a rank above max_lora_rank; ``hang``: never
answers; ``slow``: answers after ``FAKE_SLOW`` seconds (a cold start), 2 by default. ``GET /v1/models`` answers as
vLLM does (one model, ``base``), so the openai client can list it."""

import http.server
import json
import os
import subprocess
import sys
import time

port = int(sys.argv[sys.argv.index("--port") + 1])
mode = os.environ.get("FAKE_MODE", "ok")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("fake server starting, child", child.pid, flush=True)
if mode == "rank":
    time.sleep(0.5)
    print("ValueError: LoRA rank 32 is greater than max_lora_rank 16.", flush=True)
    sys.exit(1)
if mode == "hang":
    time.sleep(600)
if mode == "slow":
    time.sleep(float(os.environ.get("FAKE_SLOW", "2")))


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok"
        if self.path.startswith("/v1/models"):
            body = json.dumps({"object": "list", "data": [{"id": "base", "object": "model", "created": 0,
                                                           "owned_by": "vllm"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if body != b"ok" else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
