"""Lab 07: keep Ray Serve replicas on loopback.

Ray Serve 2.60.0 starts an inter-deployment gRPC server in EVERY replica with a hard-coded
``add_port_to_grpc_server(self._server, "[::]:0")`` (ray/serve/_private/replica.py), i.e. on all
interfaces, whatever http_options/host say. No setting changes it. This file is put on the workers'
PYTHONPATH (runtime_env env_vars), so Python imports it at start in every Ray worker; it waits for
ray.serve._private.replica to be imported (without importing anything heavy itself) and rewrites
"[::]:<port>" to "127.0.0.1:<port>" in that module's add_port_to_grpc_server. Handles reach replicas at
the node IP, which is 127.0.0.1 here, so nothing else changes.
"""
import importlib.abc
import importlib.machinery
import sys

_TARGET = "ray.serve._private.replica"


class _LoopbackReplicaGrpc(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_orig = spec.loader.exec_module

        def exec_module(module):
            exec_orig(module)
            add_port = module.add_port_to_grpc_server

            def add_port_loopback(server, address):
                if address.startswith("[::]:"):
                    address = "127.0.0.1:" + address[len("[::]:"):]
                return add_port(server, address)

            module.add_port_to_grpc_server = add_port_loopback

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _LoopbackReplicaGrpc())
