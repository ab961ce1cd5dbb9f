"""CSV import figures (not a test): rows/s and the API's memory, printed with a RESULT.

    .venv/bin/python -m bench.csv_import [--rows 100000] [--small 10000] [--tenant]

The API is ``campaign-engine serve`` in its own process (``api_process``) on the local Neo4j launcher
(or ``NEO4J_URI``, which is then WIPED). A generated SIS-like file (profileId, email, emailVerified,
dob, locale, timeZone, tags; one row in a hundred broken) is streamed to ``POST /imports/profiles`` in
64 KiB chunks: first ``--small`` rows (which also warms the JIT and the plans), then ``--rows`` more
new profiles, then the big file again (every row unchanged: the report must say so). Each pass prints
its rows/s and the API's peak resident memory after it: flat memory means the peak after the big file
is about the peak after the small one, whatever the size. The report of each pass is checked against
the file (rows, created, updated, unchanged, rejected), so a fast wrong import cannot pass. Target: at
least 5,000 rows/s for 100,000 rows.
``--tenant`` imports as an author of a tenant: every row's facts go into that tenant's view of the
person (docs/people.md), a view node and its own contact methods and tags per row.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator

import httpx

from bench._support import api_env, api_process, neo4j_uri, peak_rss_mb, rss_mb, wiped_graph
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token

SECRET = "bench-csv-import-secret-0123456789abcdef0123456789"
ADMIN = "bench-admin"
HEADER = "profileId,email,emailVerified,dob,locale,timeZone,tags\n"
LOCALES = ("en-GB", "es-MX", "es", "ar", "fr", "de")
ZONES = ("Europe/London", "America/Mexico_City", "Asia/Dubai", "Europe/Paris")


def rows(first: int, count: int) -> Iterator[str]:
    """One in a hundred rows has an address that is not one (rejected, reported)."""
    for i in range(first, first + count):
        email = f"bad-{i}" if i % 100 == 99 else f"student{i}@school.example"
        yield (
            f"p{i:07d},{email},{'true' if i % 2 else 'false'},20{i % 10:02d}-0{i % 9 + 1}-1{i % 9},"
            f'{LOCALES[i % 6]},{ZONES[i % 4]},"grade-{i % 12 + 1};club-{i % 7}"\n'
        )


def chunks(first: int, count: int) -> Iterator[bytes]:
    """The file in 64 KiB chunks, generated as it is sent: this process never holds the whole file."""
    buffer = [HEADER]
    size = len(HEADER)
    for line in rows(first, count):
        buffer.append(line)
        size += len(line)
        if size >= 65_536:
            yield "".join(buffer).encode()
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode()


def one_pass(base: str, token: str, first: int, count: int, *, new: bool) -> float:
    start = time.perf_counter()
    answer = httpx.post(
        f"{base}/imports/profiles",
        content=chunks(first, count),
        headers={"authorization": f"Bearer {token}", "content-type": "text/csv"},
        timeout=600,
    )
    seconds = time.perf_counter() - start
    if answer.status_code != 200:
        raise RuntimeError(f"{answer.status_code}: {answer.text[:500]}")
    report = answer.json()
    bad = sum(1 for i in range(first, first + count) if i % 100 == 99)
    good = count - bad
    expected = (count, good if new else 0, 0, 0 if new else good, bad)
    got = (report["rows"], report["created"], report["updated"], report["unchanged"], report["rejectedCount"])
    assert got == expected, f"report {got} != {expected}"
    return count / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--tenant", action="store_true", help="import as a tenant's author (its views)")
    args = parser.parse_args()
    with neo4j_uri() as uri:
        env, settings = api_env(uri, secret=SECRET, admin=ADMIN, domain="bench.test")
        with wiped_graph(settings):
            pass  # an empty database with this release's schema; the rows go in through the API
        token = mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE, ttl_seconds=3600)
        with api_process(env) as (base, pid):
            if args.tenant:
                created = httpx.post(
                    f"{base}/trpc/tenants.create",
                    json={"tenantId": "bench-school", "name": "Bench School"},
                    headers={"authorization": f"Bearer {token}"},
                )
                created.raise_for_status()
                token = mint_token(settings, profile_id="bench-author", tenant_id="bench-school",
                                   roles=["author"], ttl_seconds=3600)  # fmt: skip
            started = rss_mb(pid)
            small = one_pass(base, token, 0, args.small, new=True)
            after_small = peak_rss_mb(pid)
            print(f"{args.small:,} new rows: {small:,.0f} rows/s; API peak RSS {after_small:.0f} MiB "
                  f"(at start {started:.0f} MiB)")  # fmt: skip
            big = one_pass(base, token, args.small, args.rows, new=True)
            after_big = peak_rss_mb(pid)
            print(f"{args.rows:,} new rows: {big:,.0f} rows/s; API peak RSS {after_big:.0f} MiB")
            again = one_pass(base, token, args.small, args.rows, new=False)
            after_again = peak_rss_mb(pid)
            print(f"the same {args.rows:,} rows again (all unchanged): {again:,.0f} rows/s; API peak RSS "
                  f"{after_again:.0f} MiB")  # fmt: skip
    growth = after_again - after_small
    print(f"RESULT rows_per_s={big:.0f} update_rows_per_s={again:.0f} small_rows_per_s={small:.0f} "
          f"peak_rss_mb={after_again:.0f} rss_growth_mb={growth:.0f} rows={args.rows} "
          f"tenant={args.tenant}")  # fmt: skip


if __name__ == "__main__":
    main()
