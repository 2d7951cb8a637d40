"""Operations: health and readiness probes, Prometheus metrics, settings checks."""
