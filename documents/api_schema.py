"""The OpenAPI schema's additions: both token schemes, the error shape, one URL form.

drf-spectacular finds these through SPECTACULAR_SETTINGS (hooks) and through the API's
URL conf, which imports this module (the authentication extension registers itself);
not from the app config, so that workers, which serve no schema, do not load it.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error has this shape.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "Stable, for scripts: not_found, invalid, "
                    "not_authenticated, permission_denied, throttled, duplicate, ...",
                },
                "message": {
                    "type": "string",
                    "description": "One sentence, for people.",
                },
                "fields": {
                    "type": "object",
                    "description": "Messages per request field; empty when none.",
                    "additionalProperties": {
                        "type": "array",
                        "items": {"type": "string"},
                    },
                },
            },
            "required": ["code", "message", "fields"],
        }
    },
    "required": ["error"],
}
# Every endpoint may answer these; endpoints add their own (409, 503, 507) by hand.
COMMON_ERRORS = {
    "400": "The request is not valid (see fields).",
    "401": "No credentials, or wrong ones.",
    "403": "Not allowed for you (or a missing CSRF token with a session).",
    "404": "No such document, or not one you may see (on a list: a page past its "
    "last).",
    "406": "An answer other than JSON was asked for (Accept, or ?format=).",
    "429": "Over your rate or active-job limit; Retry-After says when to retry.",
}
# Every operation that takes a body may answer these (documents.middleware, DRF).
BODY_ERRORS = {
    "411": "A chunked body without Content-Length; send its length.",
    "413": "The body is over the size limit (refused before it is read).",
    "415": "A body of a type this operation does not read (see its request body).",
}
UPLOAD_ERRORS = {
    "409": "You already uploaded this content (send allow_duplicates=true).",
    "503": "The database did not accept the upload; nothing was kept. Try again "
    "after Retry-After.",
    "507": "The server's storage is full; nothing was kept.",
}


class TokenOrBearerScheme(OpenApiAuthenticationExtension):
    """documents.tokens accepts ``Token <key>`` and ``Bearer <key>``: either will do."""

    target_class = "documents.tokens.TokenAuthentication"
    name = ["tokenAuth", "bearerAuth"]

    def get_security_requirement(self, auto_schema) -> list[dict]:
        return [{name: []} for name in self.name]

    def get_security_definition(self, auto_schema) -> list[dict]:
        token = {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`; make a key on your API tokens page "
            "(`/accounts/tokens/`).",
        }
        return [token, {"type": "http", "scheme": "bearer"}]


def only_canonical_paths(endpoints: list, **kwargs) -> list:
    """Preprocessing hook: each endpoint once, with its trailing slash (the forms
    without it and the JSON 404 catch-all are conveniences, not endpoints)."""
    return [e for e in endpoints if e[0].endswith("/") and e[0].startswith("/api/")]


def add_error_responses(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: the error shape as a component, on every operation."""
    result["components"].setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result["paths"].items():
        for method, operation in operations.items():
            errors = dict(COMMON_ERRORS)
            if "requestBody" in operation:
                errors.update(BODY_ERRORS)
            if method == "post" and path == "/api/documents/":
                errors.update(UPLOAD_ERRORS)
            if path == "/api/documents/{id}/":
                errors["412"] = (
                    "An If-Match other than *: the weak ETag never matches it, so "
                    "nothing is done (or, on a change, an If-None-Match that matches)."
                )
            if method == "post" and path.endswith("/reprocess/"):
                errors["409"] = (
                    "An extraction of it (its first, or a reprocess) is running "
                    "(one that is waiting will read it anew: 202)."
                )
            for code, description in errors.items():
                operation["responses"].setdefault(
                    code, {"description": description, "content": ref}
                )
            # DRF sends it with every 429 (throttles and the active-job limit), and
            # with an upload's 503 (documents.api.UploadNotKept).
            for code in ("429", "503"):
                if code in operation["responses"]:
                    answer = operation["responses"][code]
                    answer.setdefault("headers", {})["Retry-After"] = {
                        "schema": {"type": "integer"},
                        "description": "Seconds to wait before trying again.",
                    }
    return result
