"""Lab 07: many replicas of one base, adapter-aware routing on Ray Serve, live on CPU.

- :mod:`.store`: an S3-compatible store on loopback (moto) holding the adapters Ray loads from;
- :mod:`.serve_app`: the Ray Serve LLM app, the code a student writes (``LLMConfig``, ``build_openai_app``);
- :mod:`.routers`: three routing policies on one deployment (adapter-aware, blind, static hash);
- :mod:`.traffic`: a skewed (Zipf) request stream; :mod:`.client` sends it (from the driver);
- :mod:`.metrics`: Serve's per-replica adapter counters, read from Ray's Prometheus text;
- :mod:`.sockets`: every socket of the lab's processes, sampled, and the processes left after it;
- :mod:`.driver`: the process that owns Ray, Serve, the store and the app, all on 127.0.0.1 only;
- :mod:`.cluster`: the lab's side: ``up``, ``run``, ``down``, answered by the driver; :mod:`.control` runs them live;
- :mod:`.bench`: the recorded sweep of adapters per replica (``make bench-scale``);
- ``site/sitecustomize.py``: keeps each Serve replica's internal gRPC server on loopback.
"""
