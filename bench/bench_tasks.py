"""The benchmarks' Django task (``bench.bench_tasks.noop``), run on our queue."""

from django_tasks import task


@task()
def noop() -> None:
    return None
