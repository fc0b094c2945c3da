"""What each bench script's JSON says, as rows of docs/benchmarks.md (``benches/run`` runs the scripts)."""

from __future__ import annotations

import attrs

ORIGINAL = {"precision": 0.574, "ood_items": 4.0, "chars": 4816.0, "items": 11.5, "latency_ms": 586.0}
"""The original system's reported figures (the issue text); pao's are measured below."""


def ms(value: float) -> str:
    return f"{value:,.1f} ms"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


@attrs.frozen
class Row:
    """One figure: what it is, its target, what this run measured, whether it met the target."""

    figure: str
    target: str
    measured: str
    met: bool | None
    original: str = ""


def gather_rows(d: dict) -> list[Row]:
    return [
        Row("three backends of 50/100/200 ms, gathered together", "<= 215 ms",
            f"p50 {ms(d['three_backends_p50_ms'])}, max {ms(d['three_backends_max_ms'])}",
            d["three_backends_p50_ms"] <= d["three_backends_target_ms"]),
        Row("a hung backend with a 300 ms deadline", "its deadline, no more (<= 400 ms)",
            f"p50 {ms(d['hung_backend_p50_ms'])}, max {ms(d['hung_backend_max_ms'])}", d["hung_backend_max_ms"] <= 400),
    ]


def startup_rows(d: dict) -> list[Row]:
    return [
        Row("`pao plugins --json`, whole process", f"<= 2 x `python -c pass` + 150 ms = {ms(d['target_ms'])}",
            f"p50 {ms(d['pao_plugins_json_p50_ms'])} (`python -c pass`: {ms(d['python_pass_p50_ms'])})"
            + (f"; CPU p50 {ms(d['pao_plugins_json_cpu_p50_ms'])} (`python -c pass`: {ms(d['python_pass_cpu_p50_ms'])}); "
               f"load average at the end {', '.join(map(str, d['load_average']))}" if "load_average" in d else ""),
            d["met"]),
        Row("heavy modules imported at start-up", "none",
            ", ".join(d["heavy_modules_at_startup"]) or "none", not d["heavy_modules_at_startup"]),
    ]


def cao_startup_rows(d: dict) -> list[Row]:
    p50, ratio = d["p50_ms"], d["ratio_to_cao"]
    cao = p50["cao --help"]
    cpu = d.get("cpu_p50_ms")
    rows = [
        Row(f"`{label}` beside `cao --help` (cli-agent-orchestrator 2.5.4), interleaved", f"<= cao's {ms(cao)}",
            f"p50 {ms(p50[label])} ({ratio[label]} x cao)"
            + (f"; CPU p50 {ms(cpu[label])} against cao's {ms(cpu['cao --help'])}" if cpu else ""),
            p50[label] <= cao)
        for label in ("pao --help", "pao list", "pao list, 3 agents") if label in p50
    ]
    if "load_average" in d:
        rows.append(Row("load average (1, 5, 15 min) at the end of these rounds", "", ", ".join(map(str, d["load_average"])), None))
    return rows


def brief_rows(d: dict) -> list[Row]:
    inproc, process = d["in_process_brief_ms"], d["pao_brief_process_ms"]
    rows = [
        Row("in-process `brief` (gather + fuse + render), embedded stores", "p50 <= 50 ms",
            f"p50 {ms(inproc['p50'])}, p95 {ms(inproc['p95'])}", inproc["p50"] <= 50,
            original=ms(ORIGINAL["latency_ms"])),
        Row("composition alone (fusion, sections, sanitising, budget)", "", f"p50 {ms(d['compose_ms']['p50'])}", None),
        Row("`pao brief TOPIC`, whole process (semantic + lexical, the default)", "p50 <= 300 ms",
            f"p50 {ms(process['p50'])}, max {ms(process['max'])}", process["p50"] <= 300, original=ms(ORIGINAL["latency_ms"])),
    ]
    if "pao_brief_to_python_ratio" in d:
        rows.append(Row("the same over `python -c pass`, run alternately with it (p50 / p50)", "<= 10x",
                        f"{d['pao_brief_to_python_ratio']}x (`python -c pass` p50 {ms(d['python_pass_process_ms']['p50'])})",
                        d["pao_brief_to_python_ratio"] <= 10))
    if "pao_brief_process_cpu_ms" in d:
        rows += [
            Row("the same, CPU time of the process (inflated less by a busy machine)", "",
                f"p50 {ms(d['pao_brief_process_cpu_ms']['p50'])}", None),
            Row("`pao brief TOPIC`, whole process, both stores lexical only (interleaved)", "",
                f"p50 {ms(d['pao_brief_process_lexical_ms']['p50'])}, CPU p50 "
                f"{ms(d['pao_brief_process_lexical_cpu_ms']['p50'])}", None),
            Row("in-process `brief`, CPU time of all its threads", "", f"p50 {ms(d['in_process_brief_cpu_ms']['p50'])}",
                None),
        ]
    if "pao_brief_process_cold_ms" in d:  # the rows above: as a user runs it, the warm brief server answering
        rows.append(Row("`pao brief TOPIC`, whole process, `PAO_WARM_BRIEF=0` (every brief in its own process)", "",
                        f"p50 {ms(d['pao_brief_process_cold_ms']['p50'])}, CPU p50 "
                        f"{ms(d['pao_brief_process_cold_cpu_ms']['p50'])}, {d['pao_brief_cold_to_python_ratio']}x "
                        f"`python -c pass`; the warm brief servers answered {d['warm_brief_served']} of the "
                        f"{d.get('warm_brief_runs', '?')} runs of the default and lexical rows", None))
    for name, values in d["backend_search_ms"].items():
        rows.append(Row(f"{name} search inside `brief`", "", f"p50 {ms(values['p50'])}", None))
    return rows


def eval_rows(d: dict) -> list[Row]:
    return [
        Row("precision (items relevant or partly relevant)", ">= 85%", pct(d["precision"]), d["precision"] >= 0.85,
            original=pct(ORIGINAL["precision"])),
        Row("recall@10", ">= 60%", pct(d["recall_at_10"]), d["recall_at_10"] >= 0.60, original="not reported"),
        Row("out-of-domain items per control query", "<= 0.5", f"{d['ood_items']:.2f}", d["ood_items"] <= 0.5,
            original=f"{ORIGINAL['ood_items']:.0f}"),
        Row("characters per briefing", f"fewer than {ORIGINAL['chars']:,.0f}", f"{d['chars']:,.0f}",
            d["chars"] < ORIGINAL["chars"], original=f"{ORIGINAL['chars']:,.0f}"),
        Row("items per briefing", f"fewer than {ORIGINAL['items']}", f"{d['items']:.1f}",
            d["items"] < ORIGINAL["items"], original=f"{ORIGINAL['items']}"),
        Row("pipeline latency p50 (in-process brief, eval run)", "<= 50 ms", ms(d["latency_p50_ms"]),
            d["latency_p50_ms"] <= 50, original=ms(ORIGINAL["latency_ms"])),
        Row("briefings with an ESC byte / secrets leaked", "0 / 0",
            f"{d.get('briefings_with_esc', 'n/a')} / {d.get('secrets_leaked', 'n/a')}",
            d.get("briefings_with_esc") == 0 and d.get("secrets_leaked") == 0),
    ]


def held_out_rows(d: dict) -> list[Row]:
    """A corpus no knob was fitted on: the issue's generalisation targets."""
    return [
        Row("precision", ">= 90%", pct(d["precision"]), d["precision"] >= 0.90),
        Row("recall@10", ">= 70%", pct(d["recall_at_10"]), d["recall_at_10"] >= 0.70),
        Row("out-of-domain items per control query", "<= 0.5", f"{d['ood_items']:.2f}", d["ood_items"] <= 0.5),
        Row("characters / items per briefing", "", f"{d['chars']:,.0f} / {d['items']:.1f}", None),
        Row("pipeline latency p50 (in-process brief)", "<= 50 ms", ms(d["latency_p50_ms"]), d["latency_p50_ms"] <= 50),
        Row("briefings with an ESC byte / secrets leaked", "0 / 0",
            f"{d.get('briefings_with_esc', 'n/a')} / {d.get('secrets_leaked', 'n/a')}",
            d.get("briefings_with_esc") == 0 and d.get("secrets_leaked") == 0),
    ]


def fit_rows(d: dict) -> list[Row]:
    def figures(f: dict) -> str:
        return f"precision {pct(f['precision'])}, recall@10 {pct(f['recall_at_10'])}, ood {f['ood_items']:.2f}"

    def setting(values: dict) -> str:
        return ", ".join(f"{key} {value}" for key, value in values.items())

    target = ">= 90% / >= 70% / <= 0.5"
    rows = []
    for way in d["directions"]:
        rows.append(Row(f"fitted on {way['fit']}: {setting(way['chosen'])}", "", figures(way["on_fit"]), None))
        rows.append(Row(f"reported on {way['report']} (not fitted)", target, figures(way["on_report"]), way["met"]))
    for corpus, figures_there in d["shipped_figures"].items():
        rows.append(Row(f"shipped ({setting(d['shipped'])}) on {corpus}", target, figures(figures_there),
                        d["shipped_met"][corpus]))
    near = [way["fit"] for way in d["directions"] if way["shipped_near_best"]]
    rows.append(Row("the shipped setting is among the near-best settings of the fit on", "",
                    ", ".join(near) or "neither corpus", None))
    return rows


def gates_rows(d: list) -> list[Row]:
    return [Row(f"{g['store']}, {g['statistic']}: gate from {g['fit']}'s controls ({g['gate']}), on {g['report']}", "",
                f"relevant tops kept {g['relevant_tops_kept']}/{g['relevant_tops']}, controls through "
                f"{g['controls_through']}/{g['controls']}", None) for g in d]


def longterm_rows(d: dict) -> list[Row]:
    rows = [Row(f"load {d['rows']:,} observations ({d['backend']})", "",
                f"{d['load_s']} s" if d.get("loaded", True) else "reused the bench schema of an earlier run", None)]
    if "retrieval" in d:
        rows.append(Row("retrieval the searches ran", "", d["retrieval"], None))
    for mode in ("ranked", "ranked-lexical", "original"):
        if mode not in d:
            continue
        warm = d[mode]["warm"]
        label = "ranked, lexical only (semantic = false)" if mode == "ranked-lexical" else mode
        target = "p50 <= 15 ms, p95 <= 60 ms" if d["backend"] == "postgres" else "p50 <= 15 ms"
        met = warm["p50_ms"] <= 15 and (d["backend"] != "postgres" or warm["p95_ms"] <= 60)
        full = d["rows"] >= (1_000_000 if d["backend"] == "postgres" else 100_000)
        judged = mode == "ranked" and full
        rows.append(Row(f"search, mode {label}, warm ({d['rows']:,} rows)", target if judged else "",
                        f"p50 {ms(warm['p50_ms'])}, p95 {ms(warm['p95_ms'])}", met if judged else None))
        cold_judged = judged and d["backend"] == "postgres"
        for key, how in (("cold", "no warm searcher: the search runs in the new process"),
                         ("cold_searcher", "warm searcher running: the new process asks it")):
            if key not in d[mode]:
                continue
            cold = d[mode][key]
            cpu = f" (CPU p50 {ms(cold['cpu_p50_ms'])}; imported {', '.join(cold['imported']) or 'nothing heavy'}" \
                if "cpu_p50_ms" in cold else ""
            if cpu and "in_process" in cold:
                cpu += f"; {cold['in_process']} of {cold['n']} ran in-process"
            cpu += ")" if cpu else ""
            judge = cold_judged and (key == "cold_searcher" or "cold_searcher" not in d[mode])
            rows.append(Row(f"search, mode {label}, cold: first search of a new process, connection included "
                            f"({how}; {cold['n']} runs)", "p50 <= 60 ms" if judge else "",
                            f"p50 {ms(cold['p50_ms'])}, p95 {ms(cold['p95_ms'])}{cpu}", cold["p50_ms"] <= 60 if judge else None))
    return rows


def longterm_eval_rows(d: dict) -> list[Row]:
    rows = []
    for dialect, variants in d.items():
        for variant in ("ranked (default)", "ranked, lexical only", "original"):
            f = variants[variant]
            default = variant == "ranked (default)"
            rows.append(Row(f"{dialect}, mode {variant}: precision / recall@10 / ood items",
                            ">= 85% / - / <= 0.5" if default else "",
                            f"{pct(f['precision'])} / {pct(f['recall@10'])} / {f['ood_items']:.2f}",
                            (f["precision"] >= 0.85 and f["ood_items"] <= 0.5) if default else None))
    return rows


def history_rows(d: dict) -> list[Row]:
    full = d["exchanges"] >= 100_000
    return [
        Row(f"index {d['sessions']:,} sessions ({d['transcript_mb']} MB of transcripts)", "",
            f"{d['index_s']} s: {d['sessions_per_s']:,} sessions/s, {d['mb_per_s']} MB/s", None),
        Row("re-index after one appended line", "", f"{d['reindex_after_append_s']} s", None),
        Row(f"lexical query over {d['exchanges']:,} exchanges", "p50 <= 10 ms" if full else "",
            f"p50 {ms(d['query_p50_ms'])}, p95 {ms(d['query_p95_ms'])}", d["query_p50_ms"] <= 10 if full else None),
        Row("client round trip over loopback, on top of the search (JSON-RPC)", "p50 <= 5 ms",
            ms(d["jsonrpc_round_trip_over_search_p50_ms"]), d["jsonrpc_round_trip_over_search_p50_ms"] <= 5),
        Row("client round trip over loopback, on top of the search (MCP)", "p50 <= 5 ms",
            ms(d["mcp_round_trip_over_search_p50_ms"]), d["mcp_round_trip_over_search_p50_ms"] <= 5),
    ]


def fresh_rows(d: dict) -> list[Row]:
    h = d["history"]
    full = h["transcripts"] >= 3000
    check = h["check_unchanged"]
    new = h["new_transcripts_with_a_0.5_s_budget"]
    rows = [
        Row(f"history: check before a search, nothing changed ({h['transcripts']:,} transcripts)",
            "p50 <= 50 ms" if full else "", f"p50 {ms(check['p50_ms'])}, p95 {ms(check['p95_ms'])} "
            f"(CPU p50 {ms(check['cpu_p50_ms'])})", check["p50_ms"] <= 50 if full else None),
        Row("history: search with the check / without it", "",
            f"p50 {ms(h['search_with_check']['p50_ms'])} / {ms(h['search_without_check']['p50_ms'])}", None),
        Row("history: one grown transcript indexed before the search", "",
            f"{ms(h['one_grown_transcript']['ms'])} ({h['one_grown_transcript']['exchanges_reindexed']} exchanges re-read)", None),
        Row(f"history: {new['new']:,} new transcripts ({new['new_mb']} MB), 0.5 s budget",
            "within the budget, the rest said", f"{ms(new['ms'])}: {new['files_indexed']} indexed, {new['files_left']} left"
            + (" (said)" if new["note"] else ""), new["ms"] <= 500 + check["p50_ms"] and (new["files_left"] == 0 or bool(new["note"]))),
    ]
    l = d["longterm"]
    for dialect in ("sqlite", "postgres"):
        if dialect not in l:
            continue
        f = l[dialect]
        rows.append(Row(f"memory file ({l['observations']:,} observations), {dialect}: check, nothing changed",
                        "p50 <= 20 ms", f"p50 {ms(f['check_unchanged']['p50_ms'])}, p95 {ms(f['check_unchanged']['p95_ms'])}",
                        f["check_unchanged"]["p50_ms"] <= 20))
        rows.append(Row(f"memory file, {dialect}: sync of one edited observation / first full sync", "",
                        f"{ms(f['one_edited_observation']['ms'])} / {f['first_sync_s']} s", None))
    return rows


def background_rows(d: dict) -> list[Row]:
    b, e = d["brief_first_sync"], d["eval_memory_file"]
    return [
        Row(f"`pao brief` whose search first syncs a memory file ({b['observations']} observations): background job on / off "
            f"(interleaved, {b['runs']} each)", "", f"p50 {ms(b['job_on_p50_ms'])} / {ms(b['job_off_p50_ms'])}", None),
        Row("the same, job on: every observation has a vector, after the brief ended", "",
            f"p50 {b['every_vector_after_brief_p50_s']} s", None),
        Row(f"the eval memory file ({e['observations']} observations) through one `pao brief`: every observation has a "
            "vector, after the brief ended", "", f"{e['every_vector_after_brief_s']} s (the brief: {ms(e['brief_ms'])})", None),
    ]


def history_eval_rows(d: dict) -> list[Row]:
    search = "semantic + lexical" if d["tuning"].get("semantic") else "lexical"
    return [Row(f"history alone, {search}: precision / recall@10 / ood items", "",
                f"{pct(d['precision'])} / {pct(d['recall_at_10'])} / {d['ood_items']:.2f}", None),
            Row(f"history alone, {search}: search latency", "", f"p50 {ms(d['latency_p50_ms'])}", None)]
