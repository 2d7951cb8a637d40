"""The list's Name sort before and after migration 0016, one vendor, one database.

Seeds with bench/staff_scale.py's bulk SQL (N documents of 1,000 people, 30 % titled),
then gives one person every 20th document (50,000 at a million). Times the sorted
pages as that person and as staff: HEAD's sort (file name, doc_owner_name/doc_name),
the new sort before its indexes exist, and after ``migrate documents 0016``.

    .venv/bin/python bench/name_sort.py postgres|sqlite URL N

It migrates the database it is given back and forth: use a scratch one. The figures
are in RESULTS.md ("The list's Name sort by the name shown").
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import common
import staff_scale
from common import ROOT
from page_timing import plan, time_requests

sys.path.insert(0, str(ROOT))


def main() -> None:
    vendor, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.environ.update(common.product_env(url, "/tmp", ALLOWED_HOSTS="testserver"))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.models.functions import Lower
    from django.test import Client

    from documents import views
    from documents.models import Document

    out = {"vendor": vendor, "documents": n, "phases": {}}
    call_command("migrate", verbosity=0)
    t = time.monotonic()
    call_command("migrate", "documents", "0015", verbosity=0)
    out["to_0015_s"] = time.monotonic() - t
    from django.contrib.auth import get_user_model

    reseed = not Document.objects.exists()
    if reseed:
        s = staff_scale.seed(vendor, n)
        out["seed_s"] = s["seed_seconds"]
    staff = get_user_model().objects.get(username="staff")
    person = get_user_model().objects.get(username="person0")
    with connection.cursor() as cursor:
        if not reseed:
            cursor.execute("SELECT 1")
        else:
            cursor.execute(
                "UPDATE documents_document SET owner_id = %s WHERE id %% 20 = 0",
                [person.pk],
            )
            cursor.execute("VACUUM ANALYZE" if vendor == "postgres" else "ANALYZE")
    out["person_documents"] = Document.objects.filter(owner=person).count()
    clients = {}
    for who, user in (("person", person), ("staff", staff)):
        clients[who] = Client()
        clients[who].force_login(user)
    deep = {"person": 1000, "staff": 20000}
    new_sorts = dict(views.SORTS)
    old_sorts = {
        **new_sorts,
        "name": (Lower("original_filename"), "id"),
        "-name": (Lower("original_filename").desc(), "-id"),
    }

    def measure(phase: str) -> None:
        rows = []
        for who in ("person", "staff"):
            for path in (
                "/documents/?sort=name",
                "/documents/?sort=-name",
                f"/documents/?sort=name&page={deep[who]}",
            ):
                times, captured, status = time_requests(clients[who], path, 3)
                if status != 200:
                    raise SystemExit(f"{path} answered {status}")
                page_sql = [
                    q
                    for q in captured
                    if "ORDER BY" in q["sql"]
                    and " LIMIT " in q["sql"]
                    and "documents_document" in q["sql"]
                    and "COUNT(" not in q["sql"]
                ]
                q = max(page_sql, key=lambda q: float(q["time"]))
                rows.append(
                    {
                        "who": who,
                        "path": path,
                        "median_ms": statistics.median(times),
                        "page_sql_ms": float(q["time"]) * 1000,
                        "sql": q["sql"],
                        "plan": plan(q["sql"]),
                    }
                )
                print(
                    phase,
                    who,
                    path,
                    rows[-1]["median_ms"],
                    rows[-1]["page_sql_ms"],
                    file=sys.stderr,
                )
        out["phases"][phase] = rows

    views.SORTS.clear()
    views.SORTS.update(old_sorts)
    measure("before: file name (HEAD)")
    views.SORTS.clear()
    views.SORTS.update(new_sorts)
    measure("shown name, no index yet")
    t = time.monotonic()
    call_command("migrate", "documents", "0016", verbosity=0)
    out["forward_s"] = time.monotonic() - t
    if vendor == "postgres":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE documents_document")
    measure("after: shown name, 0016")
    # The search page's Type menu (one query, list's _types).
    menu = {}
    for who, user in (("person", person), ("staff", staff)):
        times = []
        for _ in range(6):
            t = time.perf_counter()
            choices = views._type_choices(user, "")
            times.append((time.perf_counter() - t) * 1000)
        menu[who] = {"median_ms": statistics.median(times[1:]), "types": len(choices)}
        times, captured, status = time_requests(clients[who], "/documents/search/", 3)
        menu[who]["search_page_ms"] = statistics.median(times)
    out["type_menu"] = menu
    t = time.monotonic()
    call_command("migrate", "documents", "0015", verbosity=0)
    out["reverse_full_s"] = time.monotonic() - t
    t = time.monotonic()
    call_command("migrate", "documents", "0016", verbosity=0)
    out["forward_again_s"] = time.monotonic() - t
    print(json.dumps(out))


if __name__ == "__main__":
    main()
