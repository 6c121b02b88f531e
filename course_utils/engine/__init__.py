"""The engine lessons: scheduler traces, throughput benchmarks, FLOP arithmetic, vLLM's own source."""
