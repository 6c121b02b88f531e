"""An S3-compatible store on 127.0.0.1 (moto's server), the place Ray Serve LLM loads adapters from.

Ray Serve LLM's ``dynamic_lora_loading_path`` must be a cloud URI (``s3://``, ``gs://``, ``azure://``); a
local folder is refused. moto's S3 server on loopback stands in for the bucket, and the standard
``AWS_ENDPOINT_URL_S3`` variable points boto3 (Ray's loader uses ``boto3.client("s3")``) at it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import processes
from ..loopback import LOOPBACK, free_port, listening

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


class S3Store:
    """``S3Store.start(bucket)``; ``.upload(name, folder)``; ``.env`` for the processes that read it; ``.stop()``."""

    def __init__(self, started: processes.Started, port: int, bucket: str):
        self.started, self.port, self.bucket = started, port, bucket
        self.proc = started.proc
        self.env = {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "course",
                    "AWS_SECRET_ACCESS_KEY": "course", "AWS_DEFAULT_REGION": "us-east-1",
                    "AWS_EC2_METADATA_DISABLED": "true"}

    @classmethod
    def start(cls, bucket: str = "adapters") -> "S3Store":
        port = free_port()
        # die_with_parent: if the process that started it dies, even by SIGKILL, the store goes too
        started = processes.start([sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)],
                                  die_with_parent=True)
        store = cls(started, port, bucket)
        try:
            processes.wait_until(lambda: listening(port), 30.0, proc=started.proc, what=f"存储（{LOOPBACK}:{port}）")
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
        self.started.stop()
        for k in self.env:
            os.environ.pop(k, None)
