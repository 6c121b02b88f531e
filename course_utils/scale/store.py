"""An S3-compatible store on 127.0.0.1 (moto's server), the place Ray Serve LLM loads adapters from.

Ray Serve LLM's ``dynamic_lora_loading_path`` must be a cloud URI (``s3://``, ``gs://``, ``azure://``); a
local folder is refused. moto's S3 server on loopback stands in for the bucket, and the standard
``AWS_ENDPOINT_URL_S3`` variable points boto3 (Ray's loader uses ``boto3.client("s3")``) at it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..server.process import free_port  # a free port on 127.0.0.1 (the course's servers use the same)

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def wait_port(port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the process meant to listen on 127.0.0.1:{port} exited (code {proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def _die_with_parent() -> None:
    """In the child, before exec: Linux sends it SIGTERM when the process that started it dies (a kernel that
    crashed or was killed), so the store never outlives the lab."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except OSError:
        pass


class S3Store:
    """``S3Store.start(bucket)``; ``.upload(name, folder)``; ``.env`` for the processes that read it; ``.stop()``."""

    def __init__(self, proc: subprocess.Popen, port: int, bucket: str):
        self.proc, self.port, self.bucket = proc, port, bucket
        self.env = {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "course",
                    "AWS_SECRET_ACCESS_KEY": "course", "AWS_DEFAULT_REGION": "us-east-1",
                    "AWS_EC2_METADATA_DISABLED": "true"}

    @classmethod
    def start(cls, bucket: str = "adapters") -> "S3Store":
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        store = cls(proc, port, bucket)
        try:
            wait_port(port, proc=proc)
            os.environ.update(store.env)          # this process's boto3 and Ray's workers (runtime_env) alike
            store.client().create_bucket(Bucket=bucket)
        except BaseException:
            store.stop()
            raise
        return store

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.env["AWS_ENDPOINT_URL_S3"])

    def upload(self, name: str, folder: str | Path) -> None:
        """``s3://<bucket>/<name>/`` gets the adapter's config and weights."""
        s3 = self.client()
        for f in ADAPTER_FILES:
            s3.upload_file(str(Path(folder) / f), self.bucket, f"{name}/{f}")

    def adapters(self) -> list[str]:
        listing = self.client().list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return sorted({o["Key"].split("/")[0] for o in listing})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for k in self.env:
            os.environ.pop(k, None)
