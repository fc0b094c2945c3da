"""What each bench script's JSON says, as rows of docs/benchmarks.md (``benches/run`` runs the scripts)."""

from __future__ import annotations

import statistics

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


def lifecycle_rows(d: dict) -> list[Row]:
    rows = []
    if "readiness" in d:
        r = d["readiness"]["readiness_latency"]
        rows.append(Row(f"readiness latency: ready screen drawn -> pao notices ({r['n']} starts)", "p50 <= 100 ms",
                        f"p50 {ms(r['p50_ms'])}, p90 {ms(r['p90_ms'])}, max {ms(r['max_ms'])}", r["p50_ms"] <= 100))
    for variant, o in d.get("overhead", {}).items():
        # The target is the default install's: semantic + lexical search in both stores.
        default = variant == "semantic"
        rows.append(Row(f"`pao spawn --no-nudge` beyond the agent's own start-up, {variant} search, "
                        f"{statistics.median(o['briefing_items']):.0f} items in the briefing",
                        "<= 300 ms" if default else "",
                        f"p50 {ms(o['pao_overhead']['p50_ms'])} "
                        f"(whole process p50 {ms(o['pao_spawn_total']['p50_ms'])}; "
                        f"gather+compose p50 {ms(o['steps_p50_ms']['2-3 gather+compose'])})",
                        o["pao_overhead"]["p50_ms"] <= 300 if default else None))
        rows.append(Row("the same, CPU time of the pao process", "", f"p50 {ms(o['pao_process_cpu']['p50_ms'])}", None))
        rows.append(Row("the same, each step's p50 (`pao spawn --json`)", "",
                        ", ".join(f"{step.split(' ', 1)[1]} {ms(value)}" for step, value in o["steps_p50_ms"].items()), None))
    if "concurrent" in d:
        c = d["concurrent"]
        ok = c["spawned"] == 5 and all(state in ("ready", "busy") for state in c["states_at_exit"])
        rows.append(Row("five concurrent `pao spawn`", "all five ready",
                        f"{c['spawned']} spawned, states {', '.join(c['states_at_exit'])}; {ms(c['wall_ms'])} wall",
                        ok))
    return rows


def mcp_start_rows(d: dict) -> list[Row]:
    return [
        Row("`python -I -m pao_mcp`: start to its `initialize` answer", f"<= {ms(d['target_ms'])}",
            f"p50 {ms(d['initialize_p50_ms'])}, max {ms(d['initialize_max_ms'])} (`python -I -c pass`: "
            f"{ms(d['python_pass_p50_ms'])}); load average at the end {', '.join(map(str, d['load_average']))}", d["met"]),
        Row("start to its `tools/list` answer (sent right after)", "", f"p50 {ms(d['tools_list_p50_ms'])}", None),
        Row("its CPU time, start to exit after both answers", "",
            f"p50 {ms(d['server_cpu_p50_ms'])} (`python -I -c pass`: {ms(d['python_pass_cpu_p50_ms'])})", None),
    ]


def mcp_rows(d: dict) -> list[Row]:
    rows = [Row("`pao mcp` start to initialized (SDK client, stdio)", "", ms(d["start_to_initialized_ms"]), None)]
    for key, label in (("search_memory_ms", "`search_memory`, eval dev queries"), ("remember_new_ms", "`remember`, a new fact"),
                       ("remember_known_ms", "`remember`, a fact already stored"), ("memory_status_ms", "`memory_status`")):
        f = d[key]
        rows.append(Row(f"{label}: tool call to result ({f['runs']} calls)", "", f"p50 {ms(f['p50'])}, p95 {ms(f['p95'])}", None))
    return rows


def registry_rows(d: dict) -> list[Row]:
    rows = []
    for op in ("add", "update", "find", "list", "remove"):
        on_file, on_postgres = d["json"]["operations_ms"][op], d["postgresql"]["operations_ms"][op]
        rows.append(Row(f"`{op}` ({on_file['runs']} ops), JSON file / PostgreSQL", "",
                        f"p50 {on_file['p50']:.2f} ms / {on_postgres['p50']:.2f} ms", None))
    listing = d["pao_list_ms"]
    rows.append(Row(f"`pao list --json`, whole process, taking turns ({listing['json']['runs']} runs each), "
                    "JSON file / PostgreSQL / the difference", "",
                    f"p50 {ms(listing['json']['p50'])} / {ms(listing['postgresql']['p50'])} / "
                    f"{ms(listing['postgresql_minus_json']['p50'])}", None))
    return rows


def notify_rows(d: dict) -> list[Row]:
    hook, webhook, command, start, load = (d[k] for k in ("hook_wait", "event_to_webhook", "event_to_command",
                                                           "recorder_start", "load_average"))
    return [Row(f"Stop hook event to the webhook's POST ({webhook['runs']} rounds; load {load['before'][0]} -> "
                f"{load['after'][0]})", f"p95 <= {d['target_p95_s'] * 1000:.0f} ms",
                f"p50 {ms(webhook['p50_ms'])}, p95 {ms(webhook['p95_ms'])}", d["met"]),
            Row("Stop hook event to the command's run", "", f"p50 {ms(command['p50_ms'])}, p95 {ms(command['p95_ms'])}", None),
            Row("what the CLI waits for the hook / the recorder's start-up", "",
                f"p50 {ms(hook['p50_ms'])} / {ms(start['p50_ms'])}", None)]


def host_ready_rows(d: dict) -> list[Row]:
    return [Row(f"{host} start to ready ({f['runs']} runs)", "", f"p50 {f['p50_s']:.2f} s, min {f['min_s']:.2f} s, "
                f"max {f['max_s']:.2f} s", None) for host, f in d.items()]


def session_channel_rows(d: dict) -> list[Row]:
    cost = d["hook_cost"]
    rows = [Row("hook cost per event: one `sh` append (pao's hooks)", f"< a Python interpreter per event ({cost['python_p50_ms']} ms)",
                f"p50 {cost['sh_p50_ms']} ms (x{cost['ratio_python_over_sh']} faster)", cost["sh_p50_ms"] < cost["python_p50_ms"])]
    for key, modes in d.items():
        if key.startswith("claude-code"):
            for mode, f in modes.items():
                target = "none lost" if mode == "command-line" else ""
                ok = (f["lost"] == 0) if mode == "command-line" else None
                rows.append(Row(f"{key} launch to first request with the task, {mode} ({f['runs']} runs)", target,
                                f"p50 {f['p50_s']:.2f} s, lost {f['lost']}", ok))
    return rows


def cao_session_rows(d: dict) -> list[Row]:
    p50, lost, ratio, n = d["p50_s"], d["lost"], d["ratio_cao_over_pao"], d["rounds"]
    what = {"launch_s": "launch -> first model request carrying the task", "send_s": "send -> model request carrying the message"}

    def figure(tool: str, key: str) -> str:
        took = "none arrived" if p50[tool][key] is None else f"p50 {p50[tool][key]:.2f} s"
        runs = d.get("runs", {}).get(tool, {}).get(key, n)
        return f"{tool} {took}" + (f" ({lost[tool][key]} of {runs} lost)" if lost[tool][key] else "")

    target = {"launch_s": "<= 1.0 s, >= 10 x ahead of cao, none lost", "send_s": "<= cao, none lost"}

    def met(key: str) -> bool:
        mine, theirs = p50["pao"][key], p50["cao"][key]
        if key == "launch_s":  # the first turn's figure: a bound of its own, and far ahead of cao
            return mine is not None and not lost["pao"][key] and mine <= 1.0 and (theirs is None or theirs >= 10 * mine)
        return mine is not None and not lost["pao"][key] and (theirs is None or mine <= theirs)

    rows = [Row(f"{label}, Claude Code {d['claude_code']}, beside cli-agent-orchestrator 2.5.4 ({n} interleaved rounds)",
                target[key], f"{figure('pao', key)}; {figure('cao', key)}"
                + (f" (cao takes {ratio[key]} x pao's time)" if ratio[key] else ""), met(key))
            for key, label in what.items()]
    steps = d.get("pao_steps_p50_s") or {}
    if steps:
        rows.append(Row("where pao's launch goes, p50 (spawn steps: seconds each; events: seconds from the launch)", "",
                        ", ".join(f"{key} {value:.2f}" for key, value in steps.items() if value is not None), None))
    return rows + [Row("`cao-server` start to answering (once, before the rounds; not in the figures above)", "",
                       ms(d["cao_server_start_ms"]), None)]


def machines_rows(d: dict) -> list[Row]:
    m, runs = d["median_ms"], d["runs"]
    return [
        Row(f"`pao spawn --on` another machine (loopback sshd) beside `pao spawn` here, median of {runs}", "",
            f"{ms(m['spawn --on'])} (here {ms(m['spawn here'])})", None),
        Row(f"`pao send` to an agent there beside one here, median of {runs}", "",
            f"{ms(m['send remote'])} (here {ms(m['send here'])}; first command on a new connection "
            f"{ms(m['send remote, new connection'])})", None),
        Row("`pao list` with an agent there", "", ms(m["list with a remote agent"]), None),
        Row("transport: `ssh HOST true` over the open connection vs a new one", "<= half a new connection",
            f"{ms(m['ssh true, open connection'])} vs {ms(m['ssh true, new connection'])}",
            m["ssh true, open connection"] <= m["ssh true, new connection"] / 2),
    ]


def host_channel_rows(d: dict) -> list[Row]:
    rows = []
    for host, f in d["launch_to_task_at_model"].items():
        took = "none arrived" if f["p50_s"] is None else f"p50 {f['p50_s']:.2f} s"
        rows.append(Row(f"{host}: `pao spawn` -> first model request carrying the task ({f['runs']} runs)", "none lost",
                        took + (f", {f['lost']} lost" if f["lost"] else ""), f["lost"] == 0))
    for hook, p50 in d["hook_cost_p50_ms"].items():
        rows.append(Row(f"hook cost per event: {hook}", "", f"p50 {p50} ms", None))
    return rows
