"""The report of a `bench chaos` run: its results from what the run recorded, and the tables.

results() holds the frames the broker acknowledged against the outputs read (bench/chaos_check.py)
and turns the verdict, the faults, the crashes and the logs into the invariants that decide the exit
code; render() prints the report as the tables at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from bench.chaos_check import check, duplicate_bound, next_event_after
from bench.chaos_plan import expectation
from bench.report import format_table

if TYPE_CHECKING:
    from bench.chaos_run import ChaosRun


def results(run: ChaosRun, frames_topic: str) -> dict[str, Any]:
    """The report's findings: the checker's verdict, the invariants, the faults' and memory figures."""
    published = [
        expectation(frame, run.publisher.sources[frame.index])
        for frame in run.plan
        if frame.index in run.publisher.sources
    ]
    kills = len(run.worker_kills) + sum(1 for crash in run.crashes if crash["process"] != "triton")
    bound = duplicate_bound(kills, run.args.inflight, run.args.batch)
    verdict = check(frames_topic, published, run.collector.outputs, bound)
    answers, events = sorted(run.collector.triton_answers), sorted(run.collector.event_arrivals)
    for kill in run.triton_kills:
        # From the moment Triton was ready again: to the first output it had to answer (an
        # event, or a dead letter of its decode), and to the first event.
        kill["ready_to_next_answer_s"] = next_event_after(answers, kill["ready_at"])
        kill["ready_to_next_event_s"] = next_event_after(events, kill["ready_at"])
        after_ready = kill["ready_to_next_event_s"]
        kill["kill_to_next_event_s"] = (
            None if after_ready is None else round(kill["ready_at"] - kill["killed_at"] + after_ready, 3)
        )
    input_crashes = [crash for crash in run.crashes if crash["process"] == "triton"]
    stub_trouble = run.triton_log_lines
    invariants = {
        "frames the broker did not acknowledge": len(run.plan) - len(published),
        "valid frames without an event": verdict["failures"]["valid_without_event"],
        "valid frames with a dead letter instead": verdict["failures"]["valid_with_dead_letter"],
        "hostile frames without a dead letter": verdict["failures"]["hostile_without_dead_letter"],
        "hostile frames with an event instead": verdict["failures"]["hostile_with_event"],
        "dead letters with a wrong or no reason": verdict["failures"]["dead_letter_with_wrong_reason"],
        "frames with two different outcomes": verdict["failures"]["several_outcomes"],
        "events not matching their frame": verdict["failures"]["event_not_matching_its_frame"],
        "outputs of no published frame": verdict["failures"]["output_of_no_published_frame"],
        "duplicates within the bound": verdict["duplicates"]["within_bound"],
        "Triton crashes not caused here": len(input_crashes),
        "Triton stub failures in its log": len(stub_trouble),
        "worker crashes not caused here": len(run.crashes) - len(input_crashes),
        "every fault struck": len(run.worker_kills) == run.args.worker_kills
        and len(run.triton_kills) == run.args.triton_kills,
    }
    ok = all(value is True or value == 0 for value in invariants.values())
    return {
        "ok": ok and run.complete,
        "complete": run.complete,
        "stopped_because": run.stopped_because,
        "seconds": run.elapsed(),
        "invariants": invariants,
        "check": verdict,
        "worker_kills": run.worker_kills,
        "triton_kills": run.triton_kills,
        "crashes": run.crashes,
        "memory": {
            "triton_server_peak_rss_mib": round(run.sampler.triton_server_peak_kib / 1024, 1),
            "triton_with_stubs_peak_rss_mib": round(run.sampler.triton_group_peak_kib / 1024, 1),
            "worker_peak_rss_mib": round(run.sampler.worker_peak_kib / 1024, 1),
        },
        "initial_stale_shm_regions_removed": run.initial_shm_regions_removed,
        "triton_log_findings": run.triton_log_lines[:50],
        "worker_log_findings": run.worker_log_findings,
        "worker_exit_codes": run.worker_exit_codes,
    }


def render(report: dict[str, Any]) -> str:
    """The tables printed at the end (also Markdown)."""
    verdict = report["check"]
    parts = [
        f"\nchaos: {report['seconds']} s, {report['stopped_because']}; machine: "
        f"{report['machine']['cpu_model']}, {report['machine']['usable_cores']} cores; load average "
        f"before/after {report['load_average']['before']} / {report['load_average']['after']}"
        + (" - BUSY (figures inflated)" if report["busy"] else "")
    ]
    kind_columns = ["kind", "frames", "ok", "missing", "wrong", "event"]
    reasons = sorted({key for row in verdict["by_kind"] for key in row if key.startswith("dead_letter:")})
    rows = [{**row, **{key.split(":", 1)[1]: row.get(key) for key in reasons}} for row in verdict["by_kind"]]
    expected = report["input"]["hostile_kinds"]
    for row in rows:
        row["expected"] = "event" if row["kind"] == "valid" else expected.get(row["kind"], "?")
    parts.append(
        "\noutcome per kind (frames counted once; duplicates below):\n"
        + format_table(
            rows, [*kind_columns[:2], "expected", *kind_columns[2:], *(r.split(":", 1)[1] for r in reasons)]
        )
    )
    memory = report["memory"]
    duplicates = verdict["duplicates"]
    summary = {
        "frames": verdict["frames"]["published"],
        "valid": verdict["frames"]["valid"],
        "hostile": verdict["frames"]["hostile"],
        "worker_kills": len(report["worker_kills"]),
        "triton_kills": len(report["triton_kills"]),
        "duplicates": duplicates["total"],
        "duplicate_bound": duplicates["bound"],
        "triton_peak_rss_mib": memory["triton_server_peak_rss_mib"],
        "triton_stubs_peak_rss_mib": memory["triton_with_stubs_peak_rss_mib"],
        "worker_peak_rss_mib": memory["worker_peak_rss_mib"],
    }
    parts.append("\nrun:\n" + format_table([summary], list(summary)))
    if report["triton_kills"]:
        columns = ["at_s", "orphaned_stubs", "shm_regions_removed", "restart_s", "ready_to_next_answer_s"]
        columns += ["ready_to_next_event_s", "kill_to_next_event_s"]
        parts.append("\nTriton SIGKILLs:\n" + format_table(report["triton_kills"], columns))
    if report["worker_kills"]:
        restarts = [kill["restart_s"] for kill in report["worker_kills"] if kill["restart_s"] is not None]
        spread = (
            f"{min(restarts)}-{max(restarts)} s, median {float(np.median(restarts)):.1f} s"
            if restarts
            else "-"
        )
        parts.append(
            f"\nworker SIGKILLs: {len(report['worker_kills'])}, each ready again (partitions assigned) after "
            + spread
        )
    invariants = [
        {"invariant": name, "value": value, "holds": "yes" if value is True or value == 0 else "NO"}
        for name, value in report["invariants"].items()
    ]
    parts.append("\ninvariants:\n" + format_table(invariants, ["invariant", "value", "holds"]))
    parts.append(f"\nresult: {'PASS' if report['ok'] else 'FAIL'}")
    return "\n".join(parts)
