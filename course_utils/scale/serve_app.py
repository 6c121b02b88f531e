"""The Ray Serve LLM app of Lab 07: one base, N replicas, LoRA adapters loaded by name from a bucket.

This is the code a student writes (the lab prints it). A request for ``model="tiny:sql"`` asks for the
adapter ``sql``: Ray turns it into a multiplexed model id, routes it to a replica (by default, one that
already holds ``sql``), and that replica loads ``s3://<bucket>/sql/`` into its vLLM engine if it has not,
keeping at most ``max_num_adapters_per_replica`` adapters (least recently used goes first).
"""

from __future__ import annotations


def build_app(base_model: str, model_id: str, bucket: str, replicas: int, adapters_per_replica: int,
              engine: dict):
    from ray.serve.llm import LLMConfig, build_openai_app

    config = LLMConfig(
        model_loading_config={"model_id": model_id, "model_source": base_model},
        accelerator_config={"kind": "cpu"},            # on a GPU: leave it out (one GPU per replica)
        engine_kwargs={
            "enable_lora": True,
            "max_lora_rank": 64,
            "max_loras": adapters_per_replica,         # adapters in one batch on a replica
            "max_cpu_loras": adapters_per_replica,     # adapters a replica's vLLM keeps
            "generation_config": "vllm",               # no sampling defaults from the model's file (Lab 04 §3)
            **engine,                                  # dtype, max_model_len, ... of the profile
        },
        lora_config={
            "dynamic_lora_loading_path": f"s3://{bucket}",   # "model": "tiny:sql" -> s3://<bucket>/sql/
            "max_num_adapters_per_replica": adapters_per_replica,
        },
        deployment_config={
            "num_replicas": replicas,
            "max_ongoing_requests": 16,
            # Ray's default router, plus two policies the lab compares it with (course_utils/scale/routers.py)
            "request_router_config": {"request_router_class": "course_utils.scale.routers.CourseRouter"},
        },
        log_engine_metrics=False,
    )
    return build_openai_app({"llm_configs": [config], "ingress_deployment_config": {"num_replicas": 1}})
