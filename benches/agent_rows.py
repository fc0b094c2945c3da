"""The agent side's rows of docs/benchmarks.md: lifecycle, MCP, registry, notifications, hosts, machines."""

from __future__ import annotations

import statistics

from bench_rows import Row, ms


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


def state_rows(d: dict) -> list[Row]:
    """benches/state_bench.py: the CLI's event to the recorded state and to the notification, per kind of turn."""
    load, rows = d["load_1min"], []
    for kind in ("ready", "failed"):
        recorded, notified = d[kind]["event_to_recorded"], d[kind]["event_to_notified"]
        rows.append(Row(f"Claude Code {d['claude_code']}, a {kind} turn: the CLI's event to pao's recorded state "
                        f"({d[kind]['turns']} turns; load {load['before']} -> {load['after']})", "",
                        f"p50 {ms(recorded['p50_ms'])}, p95 {ms(recorded['p95_ms'])}", None))
        rows.append(Row("the same, to the notification (no monitor)", "p95 <= 2,000 ms",
                        f"p50 {ms(notified['p50_ms'])}, p95 {ms(notified['p95_ms'])}", notified["p95_ms"] <= 2000))
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
