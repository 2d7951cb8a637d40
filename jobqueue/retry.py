"""The retry policy of the guide: which errors retry, and after how long."""

from __future__ import annotations

from datetime import datetime, timedelta

from jobqueue.models import ErrorType

# Delay before the next try, by the number of the attempt that just failed (1-based).
BACKOFF_SECONDS = (0.5, 2.0, 10.0, 30.0, 60.0)
EXTRACTOR_MISSING_MIN_DELAY = 30.0
PERMANENT_ERROR_TYPES = frozenset({ErrorType.CORRUPTION, ErrorType.UNSUPPORTED})
# The most retries a job may be given (config/settings.py's QUEUE_MAX_RETRIES says it
# again): the column is a 32-bit integer on PostgreSQL, and a larger number failed
# every attempt's record there, the job run again and again.
MAX_RETRIES = 1000


def is_retryable(error_type: str) -> bool:
    """Corrupt and unsupported files fail for good; everything else may pass next time."""
    return error_type not in PERMANENT_ERROR_TYPES


def backoff_delay(attempt: int, error_type: str = ErrorType.UNKNOWN) -> float:
    """Seconds to wait after failed attempt number ``attempt``."""
    delay = BACKOFF_SECONDS[min(max(attempt, 1), len(BACKOFF_SECONDS)) - 1]
    if error_type == ErrorType.EXTRACTOR_MISSING:
        # A missing library is not installed in half a second.
        delay = max(delay, EXTRACTOR_MISSING_MIN_DELAY)
    return delay


def retry_delay(error_type: str, attempt: int, max_retries: int) -> float | None:
    """Seconds until a job whose attempt ``attempt`` failed is tried again; None when
    it has failed for good (a permanent error, or no retry left)."""
    if is_retryable(error_type) and attempt <= max_retries:
        return backoff_delay(attempt, error_type)
    return None


def next_retry_at(now: datetime, attempt: int, error_type: str) -> datetime:
    """When a job whose attempt ``attempt`` failed may be claimed again."""
    return now + timedelta(seconds=backoff_delay(attempt, error_type))


def normalise_error_type(error_type: str) -> str:
    """Map anything unexpected to ``unknown`` so the column stays within its choices."""
    return error_type if error_type in ErrorType.values else ErrorType.UNKNOWN
