"""Email channel figures (not a test): prints them and ends with one RESULT line.

    .venv/bin/python -m bench.email_send [--recipients 20000] [--page-size 500] [--runs 3]
        [--warm-up 20000] [--max-warm-ups 8] [--cap [JSON]] [--provider postmark|smtp] [--languages 3]
        [--variants 2] [--click-tracking]

``--provider smtp`` sends through the SMTP provider to the pipelining SMTP sink in its own
process (``bench/_smtp_sink.py``), which records every recipient; its raw pass is the SMTP provider
alone sending the same number of pre-composed messages over the same pooled connections.

Neo4j is the local launcher (``LocalNeo4j``, 2g heap, 1g page cache) unless ``NEO4J_URI`` names a
database, which is then WIPED. The provider is the loopback Postmark stand-in: a real uvicorn HTTP
server in its own process (``bench/_standin.py``), as a real provider is, so it does not parse JSON on
the worker's interpreter lock. ``--recipients`` email-eligible members are seeded, then one dispatch is
confirmed and its email pages run through the real worker routing (local SQLite queue, page jobs,
claim transaction, rendering, HMAC tokens, batch POST, outcome write, cursor CAS) until it completes:
messages/s end to end. Each dispatch is of a new campaign over the same profiles (``new_campaign``).
That is done ``--runs`` times and the median run is the figure (one run on a
2-core machine varies by ±10%). Right after each measured dispatch the same number of pre-rendered
messages is POSTed to the stand-in in batches of the page size with nothing else around it: the raw
batch-POST rate. The efficiency is the median of each run's rate over its own raw pass: how much of
the provider's own speed the pipeline keeps. (The host's speed drifts by tens of percent over minutes;
one raw pass at the end made the ratio swing between 0.17 and 0.28 for the same code.)

After each raw pass, the walk's bare graph writes (``bench/_email_writes.py``: the
claim and the record + cursor step per page, one after the other, nothing else) over a campaign of
their own; the shared ceiling 1 / (1/raw + 1/writes) is the rate both would reach run one after the
other on the same cores, and the run's rate is set against it too (``shared_efficiency``). On one
machine the provider (or its stand-in) and Neo4j share the cores, so the cheaper ceiling alone is not
the limit; a walk that overlaps its sends with its writes can beat the shared ceiling (above 1.00).

The measured dispatches follow warm-up dispatches of ``--warm-up`` recipients on the same Neo4j, repeated
until its JIT compiler took less than 5% of the machine's CPU (at most ``--max-warm-ups``); the first
one's rate is printed too (``cold_emails_per_s``). A Neo4j started seconds ago plans every statement for
the first time and spends minutes JIT-compiling itself: on this 2-core machine its C2 compiler threads
took as much CPU as the Bolt workers running our statements after one 40,000-recipient warm-up, and
still a third of it after 60,000 (the measured rate then was ~4,500/s, against ~7,000/s once settled).
That is the price of a restart, not of a send; a production database has long paid it. Each dispatch
prints where the CPU went (``bench/_cpu.py``), including how much of the machine stayed idle: what
is left for more parallelism. ``--warm-up 0`` measures the cold database alone.

``--cap [JSON]`` then runs one more campaign over the same audience with
``CAMPAIGN_FREQUENCY_CAPS`` set (default: 100 emails per 7 days, which nobody reaches, so every claim
pays the cap's check and its log write and nobody is held back), and prints both rates side by side.

``--languages 3`` (three languages within 10% of one) gives every profile a locale spread over
en-GB, es-MX, es, ar and none (``bench/_languages.py``), and each measured run is then two dispatches
over fresh profiles, the order swapped every run: the one-language campaign (the figures above) and one
with ``es`` and ``ar`` translations, so the page walk renders three variants and serves each recipient
theirs. Both rates are printed per run with their ratio (three / one) and medians, and in the RESULT line.

``--variants 2`` (A/B variants within 10% of a plain send; 2 to 4) gives that comparison
campaign A/B content variants (``bench/_variants.py``: the control and arms with their own email copy in
each of its languages), so the walk renders once per (language, variant) and assigns each recipient an
arm; with ``--languages 1`` the comparison is a one-language campaign with variants against one without.

The measured (plain) dispatches send with the tenant's click tracking off (``clickTracking: false``), so
their figures stay comparable with the ones before variants and click tracking. ``--click-tracking`` (a
tracked CTA, one more signed token and slot per message) adds to each measured run a dispatch over fresh
profiles with click tracking on, the order swapped every run, and prints both rates side by side with
their ratio (tracked / plain), as ``--languages 3`` does.

``--variants 2 --click-tracking`` together (the done-when: variants and click-tracked links within
10% of the plain run) make that second dispatch of each run a campaign with the A/B variants **and**
click tracking, against the plain one, side by side in one run: ``tracked_ratio`` is then (variants +
clicks) / plain. (With ``--languages 3`` as well, the languages comparison keeps its variants too.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from bench._email_send_campaigns import (
    NOW,
    Campaigns,
    seed_profiles,
    set_click_tracking,
)
from bench._email_send_runs import (
    DEFAULT_CAP,
    _own_cpu,
    _receiver,
    languages_run,
    raw_rate,
    raw_smtp_rate,
    run_dispatch,
    shared_ceiling,
    tracked_run,
    warm_up,
    with_cap,
)
from bench._email_writes import bare_write_rate
from bench._languages import set_locales
from bench._smtp_sink import SinkProcess
from bench._support import neo4j_uri, side_by_side
from campaign_engine.config import Settings
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.schema import apply_schema


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipients", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--cap", nargs="?", const=DEFAULT_CAP, default=None, help="also run with this cap")
    parser.add_argument("--warm-up", type=int, default=20_000, help="recipients per warm-up (0: none)")
    parser.add_argument("--max-warm-ups", type=int, default=8, help="until the JIT settles, at most")
    parser.add_argument("--runs", type=int, default=3, help="measured dispatches; RESULT is their median")
    parser.add_argument("--provider", choices=["postmark", "smtp"], default="postmark")
    parser.add_argument(
        "--languages", type=int, choices=[1, 3], default=1, help="3: also runs in 3 languages"
    )
    parser.add_argument(
        "--variants", type=int, choices=[1, 2, 3, 4], default=1, help="2-4: the comparison has A/B variants"
    )
    parser.add_argument("--click-tracking", action="store_true", help="also runs with click-tracked CTAs")
    args = parser.parse_args()
    # Variants with click tracking: the tracked dispatch carries the variants (one combined comparison).
    combined = args.variants > 1 and args.click_tracking
    comparing = args.languages > 1 or (args.variants > 1 and not combined)
    work = Path(tempfile.mkdtemp(prefix="bench-email-"))
    with _receiver(args.provider) as standin, neo4j_uri() as uri:
        provider_settings: dict[str, object] = (
            {"campaign_email_provider": "smtp", "smtp_host": "127.0.0.1", "smtp_port": standin.port}
            if isinstance(standin, SinkProcess)
            else {
                "campaign_email_provider": "postmark",
                "postmark_api_key": SecretStr(standin.token),
                "postmark_api_url": standin.url,
            }
        )
        settings = Settings(
            neo4j_uri=uri,
            neo4j_user=os.environ.get("NEO4J_USER", "neo4j"),
            neo4j_password=SecretStr(os.environ.get("NEO4J_PASSWORD", "")),
            domain_name="bench.test",
            campaign_local_queue_path=str(work / "queue.sqlite3"),
            notifications_webhook_secret=SecretStr("whsec_YmVuY2gtd2ViaG9vay1zZWNyZXQtMDEyMzQ1Njc4OWE="),
            campaign_dispatch_delay_seconds=0,
            campaign_email_page_size=args.page_size,
            campaign_unsubscribe_secret=SecretStr("bench-unsubscribe-secret-0123456789abcdef"),
            campaign_app_origins='{"default": "https://app.bench.test"}',
            email_from="news@bench.test",
            _env_file=None,  # type: ignore[call-arg]
            **provider_settings,
        )
        graph = open_graph(settings)
        try:
            apply_schema(graph)
            sizes = [args.warm_up] * (args.max_warm_ups if args.warm_up else 0)
            # Each measured run, then its bare-writes pass over a campaign of its own (``Campaigns``).
            sizes += [args.recipients] * (2 * args.runs + (1 if args.cap else 0))
            sizes += [args.recipients] * (args.runs if comparing else 0)
            sizes += [args.recipients] * (args.runs if args.click_tracking else 0)
            t0 = time.perf_counter()
            seed_profiles(graph, sum(sizes))
            set_click_tracking(graph, settings, on=False)  # the plain runs: as before click tracking
            if args.languages > 1:
                set_locales(graph, "u")
            print(f"seeded {sum(sizes)} email-eligible profiles in {time.perf_counter() - t0:.1f} s")
            campaigns = Campaigns(graph)
            cold_rate = warm_up(settings, graph, work, standin, campaigns, args.warm_up, args.max_warm_ups)
            runs, raws, writes, translated_rates, tracked_runs = [], [], [], [], []

            def in_languages() -> None:
                rate = languages_run(settings, graph, work, standin, campaigns, args.recipients,
                                     args.languages, args.variants)  # fmt: skip
                translated_rates.append(rate)

            def tracked() -> None:
                tracked_runs.append(tracked_run(settings, graph, work, standin, campaigns, args.recipients,
                                                variants=args.variants if combined else 1))  # fmt: skip

            for number in range(1, args.runs + 1):
                odd = bool(number % 2)  # each comparison's order swapped every run: drift cancels
                if comparing and odd:
                    in_languages()
                if args.click_tracking and not odd:
                    tracked()
                run = run_dispatch(settings, graph, work, campaigns.new(args.recipients))
                rate = args.recipients / run.elapsed
                addresses = standin.addresses()
                assert len(addresses) == args.recipients, f"stand-in accepted {len(addresses)}"
                assert len(set(addresses)) == args.recipients, "an address was emailed twice"
                # The host's speed drifts by tens of percent over minutes: each run's ratio is to a raw
                # pass measured right after it, not to one pass at the end.
                if isinstance(standin, SinkProcess):
                    standin.reset()
                    raws.append(raw_smtp_rate(standin, args.recipients, args.page_size))
                else:
                    sample = standin.sample(args.page_size)
                    standin.reset()
                    raws.append(raw_rate(standin, sample, args.recipients, args.page_size))
                standin.reset()
                writes.append(bare_write_rate(settings, graph, work, campaigns.new(args.recipients), now=NOW))
                shared = shared_ceiling(raws[-1], writes[-1])
                print(f"run {number}: {args.recipients} emails in {run.elapsed:.2f} s ({rate:,.0f}/s; "
                      f"the dispatch call {run.elapsed - run.walk:.2f} s, the page walk {run.walk:.2f} s); "
                      f"raw rate right after it {raws[-1]:,.0f}/s, ratio {rate / raws[-1]:.2f}; "
                      f"bare graph writes {writes[-1]:,.0f}/s; shared ceiling {shared:,.0f}/s, "
                      f"efficiency against it {rate / shared:.2f}")  # fmt: skip
                runs.append(run)
                if comparing and not odd:
                    in_languages()
                if args.click_tracking and odd:
                    tracked()
            capped = (
                with_cap(settings, graph, work, campaigns.new(args.recipients), args.recipients, args.cap)
                if args.cap
                else None
            )
        finally:
            graph.close()
        if capped:
            addresses = standin.addresses()
            assert len(addresses) == len(set(addresses)) == args.recipients, "the capped run's sends"
        standin.reset()
    end_to_end = statistics.median(run.elapsed for run in runs)
    walk = statistics.median(run.walk for run in runs)
    e2e_rate = args.recipients / end_to_end
    walk_rate = args.recipients / walk
    raw = statistics.median(raws)
    ratio = statistics.median(args.recipients / run.elapsed / r for run, r in zip(runs, raws, strict=True))
    print(f"end-to-end rate: {e2e_rate:,.0f} emails/s (pages of {args.page_size}; the median of {len(runs)} "
          f"runs, {', '.join(f'{args.recipients / run.elapsed:,.0f}' for run in runs)})")  # fmt: skip
    print(f"page walk alone: {walk_rate:,.0f} emails/s ({walk_rate / raw:.2f} of raw)")
    raw_kind = "SMTP provider" if args.provider == "smtp" else "batch-POST"
    print(f"raw {raw_kind} rate: {raw:,.0f} messages/s (the median of "
          f"{', '.join(f'{r:,.0f}' for r in raws)})")  # fmt: skip
    print(f"efficiency (end to end / raw): {ratio:.2f} (the median of each run's ratio to its raw pass)")
    shared = statistics.median(shared_ceiling(r, w) for r, w in zip(raws, writes, strict=True))
    shared_ratio = statistics.median(
        args.recipients / run.elapsed / shared_ceiling(r, w)
        for run, r, w in zip(runs, raws, writes, strict=True)
    )
    print(f"bare graph writes (claim + record, one after the other): {statistics.median(writes):,.0f}/s "
          f"(the median of {', '.join(f'{w:,.0f}' for w in writes)})")  # fmt: skip
    print(f"shared ceiling 1/(1/raw + 1/writes): {shared:,.0f}/s; efficiency against it {shared_ratio:.2f} "
          "(on one machine the provider calls and the graph writes share the cores)")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    cap_result = ""
    if capped:
        cap_rate, cap_walk_rate = args.recipients / capped[0], args.recipients / capped[1]
        print(f"with the cap: {cap_rate:,.0f} emails/s end to end (without: {e2e_rate:,.0f}), page walk "
              f"{cap_walk_rate:,.0f} emails/s (without: {walk_rate:,.0f}); cap {args.cap}")  # fmt: skip
        cap_result = f" capped_emails_per_s={cap_rate:.0f} capped_walk_emails_per_s={cap_walk_rate:.0f}"
    # campaign-engine's own CPU: the worker (this process) and all of Neo4j, per 1,000 emails.
    cpu = statistics.median(
        (run.cpu.own + run.cpu.bolt + run.cpu.jit + run.cpu.jvm_other) / args.recipients * 1000
        for run in runs
    )
    result = f"emails_per_s={e2e_rate:.0f} efficiency={ratio:.2f} walk_emails_per_s={walk_rate:.0f}"
    result += f" cpu_core_s_per_1000={cpu:.2f} provider={args.provider}"
    result += f" shared_ceiling_per_s={shared:.0f} shared_efficiency={shared_ratio:.2f}"
    if cold_rate is not None:
        result += f" cold_emails_per_s={cold_rate:.0f}"
    if translated_rates:
        one = [args.recipients / run.elapsed for run in runs]
        label = f"{args.languages} languages" + (f", {args.variants} variants" if args.variants > 1 else "")
        ratio3 = side_by_side(f"emails/s in {label}", translated_rates, one, ref="one language, no variants")
        key = f"languages_{args.languages}" + (f"_variants_{args.variants}" if args.variants > 1 else "")
        result += f" {key}_emails_per_s={statistics.median(translated_rates):.0f}"
        result += f" {'variants' if args.variants > 1 else 'languages'}_ratio={ratio3:.3f}"
    if tracked_runs:
        one = [args.recipients / run.elapsed for run in runs]
        tracked = [args.recipients / run.elapsed for run in tracked_runs]
        what = f"{args.variants} variants + click-tracked" if combined else "click-tracked"
        tracked_ratio = side_by_side(f"emails/s {what}", tracked, one, ref="plain")
        result += f" tracked_emails_per_s={statistics.median(tracked):.0f}"
        result += f" tracked_ratio={tracked_ratio:.3f}"
        if combined:  # the done-when: within 10% of the plain run
            verdict = "within" if tracked_ratio >= 0.9 else "NOT within"
            print(f"{what} / plain: {tracked_ratio:.3f}, {verdict} 10%")
        # Our own CPU per 1,000 emails (this process and Neo4j): what a busy shared machine cannot blur.
        own = [_own_cpu(run, args.recipients) for run in runs]
        tracked_cpu = side_by_side(
            f"core-s per 1000 emails {what}",
            [_own_cpu(run, args.recipients) for run in tracked_runs],
            own,
            ref="plain",
        )
        result += f" tracked_cpu_ratio={tracked_cpu:.3f}"
    print(f"RESULT {result}{cap_result}")


if __name__ == "__main__":
    main()
