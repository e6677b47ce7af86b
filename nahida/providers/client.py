"""How to connect to an LLM endpoint, apart from how to talk to it.

`ClientSettings` says where the endpoint is, how patient to be and how many connections to keep
open. Each provider builds one SDK client over one HTTP client (`http_client`: keep-alive, its
pool as large as the model calls the bot can make at once; aiohttp underneath where the SDK
offers it), with the SDK's own retries switched off, so that `with_retries` is the one place
that retries, the same way for every provider. SDK exceptions become the typed errors of
`nahida.errors`, with the HTTP status kept and the API key scrubbed from every message; so does
the decoder's error for an answer that is not JSON (`unreadable`), which the SDKs let through.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

import aiohttp
import structlog

from nahida.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
)

T = TypeVar("T")

log = structlog.get_logger(__name__)

# A Retry-After hint longer than this is not waited for; our own backoff is used instead.
MAX_RETRY_AFTER = 60.0
_MAX_CONNECTIONS = 1000  # open at once, kept alive or not (the SDKs' httpx default)
DETAIL_CHARS = 300  # of a decoder's message, which may quote the body it could not read


@dataclass(frozen=True, slots=True)
class ClientSettings:
    base_url: str | None
    api_key: str = field(repr=False)
    timeout: float = 60.0
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    # connections kept alive for the next call: as many as can run at once (the app passes its
    # bus's; the SDKs' own default keeps 100)
    connections: int = 100
    keepalive_expiry: float = 5.0  # seconds an idle connection stays open


def http_client(sdk: ModuleType, settings: ClientSettings) -> Any:
    """The SDK's HTTP client (its timeouts, redirects) with the pool of `settings`: the one
    that sends through aiohttp where the SDK has it (`DefaultAioHttpClient`, the SDKs' own
    documented choice; aiohttp is ours anyway), else its httpx one. httpx parses HTTP in
    Python: through aiohttp a call costs less CPU (`scripts/bench_sdk.py`).

    The pool's limits are of the class the SDK exports its own defaults in
    (`DEFAULT_CONNECTION_LIMITS`), whichever HTTP package the SDK release is built on.
    aiohttp keeps alive every connection it may open, so there the pool is the most open at
    once: a call beyond it waits for one (the bot never makes more at once than
    `settings.connections`). httpx opens more and closes them after their call."""
    limits_type = type(sdk.DEFAULT_CONNECTION_LIMITS)
    aiohttp_client = getattr(sdk, "DefaultAioHttpClient", None)
    if aiohttp_client is not None:
        limits = limits_type(
            max_connections=settings.connections, keepalive_expiry=settings.keepalive_expiry
        )
        return aiohttp_client(limits=limits)
    limits = limits_type(
        max_connections=max(_MAX_CONNECTIONS, settings.connections),
        max_keepalive_connections=settings.connections,
        keepalive_expiry=settings.keepalive_expiry,
    )
    return sdk.DefaultAsyncHttpxClient(limits=limits)


async def with_retries(
    call: Callable[[], Awaitable[T]], settings: ClientSettings, provider_name: str
) -> T:
    """Await `call()`; on a retryable `ProviderError` try again, up to `max_retries` times.

    The last error is re-raised as it is once the retries are spent or when it is not retryable.
    """
    retries = 0
    while True:
        try:
            return await call()
        except ProviderError as error:
            if not error.retryable or retries >= settings.max_retries:
                raise
            delay = backoff_delay(retries, settings, retry_after(error))
            retries += 1
            log.warning(
                "provider.retry",
                provider=provider_name,
                error=type(error).__name__,
                status=error.status,
                retry=retries,
                delay=round(delay, 3),
            )
            await asyncio.sleep(delay)


def backoff_delay(retries: int, settings: ClientSettings, hint: float | None = None) -> float:
    """Seconds to wait before re-try `retries + 1`: the server's hint, else jittered backoff."""
    if hint is not None and 0 <= hint <= MAX_RETRY_AFTER:
        return hint
    ceiling = min(settings.backoff_max, settings.backoff_base * 2.0**retries)
    return ceiling * (0.5 + random.random() / 2)


def retry_after(error: ProviderError) -> float | None:
    """The Retry-After hint (seconds) carried by `error` or by the HTTP response that caused it."""
    carried = getattr(error, "retry_after", None)
    if isinstance(carried, int | float):
        return float(carried)
    response = getattr(error.__cause__, "response", None)  # the SDKs' APIStatusError
    headers = getattr(response, "headers", None)
    return _parse_retry_after(headers) if headers is not None else None


def _parse_retry_after(headers: Mapping[str, str]) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return _finite(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return _finite(float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def from_sdk_error(exc: Exception, sdk: ModuleType, provider: str, api_key: str) -> ProviderError:
    """The typed error for an exception raised by an SDK (`sdk` is the `openai` or `anthropic`
    module: both SDKs share one exception tree, so one mapping serves both)."""
    _scrub_exception(exc, api_key)
    if isinstance(exc, sdk.APITimeoutError) and not _connection_failure(exc):
        return ProviderTimeoutError(f"{provider}: request timed out", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):  # APITimeoutError is one too
        return ProviderConnectionError(
            f"{provider}: could not connect: {_connection_detail(exc, api_key)}", provider=provider
        )
    if isinstance(exc, sdk.APIStatusError):
        return error_for_status(exc.status_code, _status_detail(exc, api_key), provider)
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderResponseError(
            f"{provider}: unexpected response: {_detail(exc, api_key)}",
            provider=provider,
            status=exc.status_code,
        )
    return ProviderError(f"{provider}: {_detail(exc, api_key)}", provider=provider)


def unreadable(exc: ValueError, provider: str, api_key: str) -> ProviderResponseError:
    """The error for an answer the SDK could not read. A 200 whose body is not JSON (a proxy's
    error page, a body cut short) reaches us as the JSON decoder's ValueError, or pydantic's for
    a typed answer, not as an SDK error."""
    detail = _detail(exc, api_key)
    if len(detail) > DETAIL_CHARS:
        detail = detail[: DETAIL_CHARS - 1] + "…"
    return ProviderResponseError(
        f"{provider}: the answer could not be read ({type(exc).__name__}: {detail})",
        provider=provider,
    )


def error_for_status(status: int, detail: str, provider: str) -> ProviderError:
    """The typed error for an HTTP error status; other 4xx are plain, non-retryable errors."""
    message = f"{provider}: HTTP {status}: {detail}"
    if status in (401, 403):
        return ProviderAuthError(message, provider=provider, status=status)
    if status == 408:
        return ProviderTimeoutError(message, provider=provider, status=status)
    if status == 429:
        return ProviderRateLimitError(message, provider=provider, status=status)
    if status >= 500:
        return ProviderServerError(message, provider=provider, status=status)
    return ProviderError(message, provider=provider, status=status)


def scrub(text: str, api_key: str) -> str:
    """`text` with every occurrence of the API key masked."""
    return text.replace(api_key, "***") if api_key else text


def _detail(exc: Exception, api_key: str) -> str:
    return scrub(str(exc), api_key) or type(exc).__name__


def _status_detail(exc: Exception, api_key: str) -> str:
    # The API's own words ({"error": {"message": ...}}), not the SDK's "Error code: 401 - {...}".
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = (inner if isinstance(inner, dict) else body).get("message")
        if isinstance(message, str) and message:
            return scrub(message, api_key)
    return _detail(exc, api_key)


def _connection_detail(exc: Exception, api_key: str) -> str:
    # The SDK says only "Connection error."; the transport error under it says what went wrong.
    cause = exc.__cause__
    return _detail(cause, api_key) if isinstance(cause, Exception) else _detail(exc, api_key)


def _connection_failure(exc: BaseException) -> bool:
    """Whether a timeout the SDK reports was a connection that failed: the OpenAI SDK's aiohttp
    transport (3.63) turns every aiohttp connection error into httpx's `ConnectTimeout`, a
    refused or dropped connection too (Anthropic's says `ConnectError`); the aiohttp error
    stays in the chain of causes."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, aiohttp.ClientConnectionError):
            return not isinstance(seen, asyncio.TimeoutError)
        seen = seen.__cause__
    return False


def read_answer(parse: Callable[[dict[str, Any], str], T], data: object, provider: str) -> T:
    """`parse(data, provider)` of an endpoint's JSON body (the SDK's `post` answers it parsed,
    with `cast_to=object`: building the SDK's typed response cost a sixth of a call,
    `scripts/bench_sdk.py`); a body of another shape raises ProviderResponseError."""
    if not isinstance(data, dict):
        raise ProviderResponseError(
            f"{provider}: response is not a JSON object but {type(data).__name__}",
            provider=provider,
        )
    try:
        return parse(data, provider)
    except (AttributeError, KeyError, IndexError, TypeError) as exc:
        raise ProviderResponseError(
            f"{provider}: unexpected response shape: {type(exc).__name__}: {exc}",
            provider=provider,
        ) from exc


def _scrub_exception(exc: Exception, api_key: str) -> None:
    # The SDK exception stays chained as __cause__ and is printed in tracebacks, so it must not
    # carry the key either (a server may echo it back in an error body).
    if api_key and any(api_key in str(arg) for arg in exc.args):
        exc.args = tuple(scrub(str(arg), api_key) for arg in exc.args)
        if isinstance(getattr(exc, "message", None), str):  # the SDKs' APIError
            exc.message = scrub(exc.message, api_key)  # type: ignore[attr-defined]
            exc.body = _scrub_json(getattr(exc, "body", None), api_key)  # type: ignore[attr-defined]


def _scrub_json(value: object, api_key: str) -> object:
    if isinstance(value, str):
        return scrub(value, api_key)
    if isinstance(value, dict):
        return {key: _scrub_json(item, api_key) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_json(item, api_key) for item in value]
    return value
