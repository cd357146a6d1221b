"""FewJoint: few-shot joint NLU leaderboard over systems and shot settings, breakdowns, intent confusion,
slot-type P/R/F1 and a query browser with a token-level tag diff. Below the leaderboard, one analysis at a
time (`ui.tabs`): a tab's charts are drawn when it is chosen, so the page opens fast."""

import streamlit as st

import ui
from analysis.fewjoint import views
from analysis.fewjoint.compare import comparison_table, same_gold
from analysis.fewjoint.figures import breakdown_bar, intent_confusion_heatmap, leaderboard_bar, slot_type_prf_bar
from analysis.fewjoint.scoring import AVERAGINGS, METRICS, fewjoint_leaderboard
from analysis.figures import apply_style
from ui import fewjoint as data

ui.ensure_frame("fewjoint")
st.title("FewJoint")
if not data.entries():
    st.info(
        "This workspace lists no FewJoint systems. Add a `[[fewjoint]]` entry to the manifest "
        "(episode gold plus one prediction file per seed)."
    )
    st.stop()

# --- settings -------------------------------------------------------------------------------------
top = st.columns([2, 2, 3])
averaging = ui.select(
    "Averaging",
    list(AVERAGINGS),
    state="fewjoint_averaging",
    container=top[0],
    format_func=lambda a: {"episode": "per episode (reference)", "micro": "micro (pooled queries)"}[a],
    help="episode: intent accuracy and slot F1 per episode, then averaged; micro: pooled over all queries",
)
metric = ui.select(
    "Metric", list(METRICS), state="fewjoint_metric", container=top[1], format_func=views.METRIC_LABELS.get
)
with st.spinner("Scoring FewJoint predictions…"):  # shown only when it takes longer than 0.5 s
    results, failed = data.split(
        {name: ui.compute(data.scored, files, averaging=averaging) for name, files in data.systems().items()}
    )
for name, error in failed.items():
    st.error(ui.md(f"FewJoint system {name} failed to load: {error}"), icon=":material/error:")
if not results:
    st.stop()
system = ui.select("System", list(results), state="fewjoint_system", container=top[2])
result = results[system]

# --- leaderboard ----------------------------------------------------------------------------------
st.subheader("Leaderboard")
st.caption(ui.md(views.averaging_caption(averaging)))
board = views.leaderboard_table(list(results.values()))
ui.show_table(
    board,
    key="fewjoint_board",
    name="FewJoint leaderboard",
    columns=["system", "shots", "n_seeds", "averaging", *[f"{views.METRIC_LABELS[m]} (mean ± std)" for m in METRICS]],
)
ui.show_figure(
    apply_style(leaderboard_bar(fewjoint_leaderboard(results.values()), metric=metric)),
    key="fewjoint_board_bar",
    name="FewJoint leaderboard",
)

# --- one system, one analysis at a time (`ui.tabs`: only the chosen tab is computed and drawn) ----------
domains = views.browser_options(result)["domain"]
seeds_tab, breakdown_tab, confusion_tab, slot_tab, browser_tab = ui.tabs(
    ["Seeds and checks", "Per domain and per intent", "Intent confusion", "Slot types", "Query browser"],
    page="fewjoint",
)

if seeds_tab.open:
    with seeds_tab:
        entry = data.entries()[system]
        st.caption(
            ui.md(
                f"{entry.description or system} · {len(result.seeds)} seeds · {result.n_queries} query utterances · "
                f"{'K unknown' if result.shots is None else f'{result.shots}-shot'} · "
                f"{views.averaging_caption(averaging)}"
            )
        )
        for line in views.check_warnings(result):
            st.warning(ui.md(line), icon=":material/warning:")
        ui.show_table(views.seed_table(result), key="fewjoint_seeds", name=f"{system} per seed")
        st.caption(
            "Ill-formed BIO: an I-X tag not after B-X or I-X of the same type; scored leniently, as conlleval does. "
            "Missing predictions and wrong token counts are scored as wrong."
        )
        if len(result.alignment):
            st.caption("Alignment problems (every one is listed; what scoring did about it is in the last column)")
            ui.show_table(result.alignment, key="fewjoint_alignment", name=f"{system} alignment", height=240)
        st.subheader("Systems compared over seeds and sentences")
        peers = next(names for names in same_gold(results) if system in names)
        if len(peers) < 2:
            st.caption(ui.md(f"{system} is the only FewJoint system on its gold: no system to compare it with."))
        else:
            with st.spinner("Comparing the systems over seeds and sentences…"):
                comparison = ui.compute(data.compared, [data.systems()[n] for n in peers], names=tuple(peers))
            if isinstance(comparison, str):
                st.error(ui.md(comparison), icon=":material/error:")
            else:
                table = comparison_table(comparison)
                st.caption(
                    ui.md(
                        f"The {len(peers)} systems on the gold of {system}, each pair b − a over its seeds and "
                        f"{comparison.n_sentences:,} query sentences: {comparison.level:.0%} intervals, "
                        f"{comparison.n_resamples:,} resamples. {table.attrs['note']}"
                    )
                )
                ui.show_table(table, key="fewjoint_compare", name="FewJoint systems compared")
            others = [n for n in results if n not in peers]
            if others:
                st.caption(ui.md(f"Not compared, on another gold: {', '.join(others)}."))

if breakdown_tab.open:
    with breakdown_tab:
        left, right = st.columns(2)
        with left:
            ui.show_figure(
                apply_style(breakdown_bar(result, by="domain", metric=metric)), key="fewjoint_domain", name="per domain"
            )
        with right:
            intent_domain = ui.select(
                "Intents of domain",
                ["", *domains],
                state="fewjoint_intent_domain",
                format_func=lambda d: d or "(all domains)",
                index_hint=domains[0] if len(domains) > 3 else "",
            )
            ui.show_figure(
                apply_style(breakdown_bar(result, by="intent", metric=metric, domain=intent_domain or None)),
                key="fewjoint_intent",
                name="per intent",
            )

if confusion_tab.open:
    with confusion_tab:
        cols = st.columns([2, 2, 1])
        confusion_domain = ui.select(
            "Domain",
            ["", *domains],
            state="fewjoint_confusion_domain",
            container=cols[0],
            format_func=lambda d: d or "(all domains)",
            index_hint=domains[0] if len(domains) > 3 else "",
        )
        confusion_seed = ui.select(
            "Seed",
            ["", *views.browser_options(result)["seed"]],
            state="fewjoint_confusion_seed",
            container=cols[1],
            format_func=lambda s: f"seed {s}" if s else "(all seeds, summed)",
        )
        normalise = ui.toggle("Row-normalised", state="fewjoint_normalise", default=True, container=cols[2])
        ui.show_figure(
            apply_style(
                intent_confusion_heatmap(
                    result, domain=confusion_domain or None, seed=confusion_seed or None, normalize=normalise
                ),
                height=520,
            ),
            key="fewjoint_confusion",
            name="intent confusion",
        )

if slot_tab.open:
    with slot_tab:
        ui.show_figure(apply_style(slot_type_prf_bar(result)), key="fewjoint_slot_types", name="slot type P/R/F1")
        ui.show_table(
            views.slot_type_table(result),
            key="fewjoint_slot_table",
            name=f"{system} slot types",
            columns=["slot_type", "precision", "recall", "f1", "f1_std", "support", "n_pred_mean"],
        )
        st.caption("Micro over queries per seed, then the mean over seeds; support = gold chunks; f1 std over seeds.")

if browser_tab.open:
    with browser_tab:
        filters = st.columns([1, 2, 2, 3, 1.3])
        seed = ui.select("Seed", views.browser_options(result)["seed"], state="fewjoint_seed", container=filters[0])
        domain = ui.select(
            "Domain", ["", *domains], state="fewjoint_domain", container=filters[1], format_func=lambda d: d or "(all)"
        )
        intents = views.browser_options(result, domain=domain or None)["intent"]
        intent = ui.select(
            "Gold intent",
            ["", *intents],
            state="fewjoint_intent",
            container=filters[2],
            format_func=lambda i: i or "(all)",
        )
        kinds = ui.multiselect(
            "Error kind",
            views.browser_options(result)["error_kind"],
            state="fewjoint_kinds",
            container=filters[3],
            format_func=views.ERROR_KIND_LABELS.get,
            placeholder="(all kinds)",
        )
        errors_only = ui.toggle("Errors only", state="fewjoint_errors_only", default=True, container=filters[4])
        queries = views.query_table(
            result,
            seed=seed,
            domain=domain or None,
            intent=intent or None,
            error_kind=kinds or None,
            errors_only=errors_only,
        )
        st.caption(ui.md(f"{len(queries)} queries of seed {seed} match · pick a row to see its tag diff"))
        picked = ui.show_table(
            queries,
            key="fewjoint_queries",
            name=f"{system} queries seed {seed}",
            select=True,
            height=300,
            columns=[
                "domain",
                "episode",
                "query_index",
                "verdict",
                "text",
                "gold_intent",
                "pred_intent",
                "n_ill_formed",
            ],
        )
        if picked is not None:
            ui.put(fewjoint_query=picked["query_id"])
        if not len(queries):
            st.info("No query matches these filters.")
            st.stop()
        labels = dict(zip(queries["query_id"], queries["verdict"] + " · " + queries["text"], strict=True))
        query_id = ui.select("Query", list(labels), state="fewjoint_query", format_func=lambda q: f"{q} — {labels[q]}")
        where, episode, index = views.query_location(query_id)
        verdict = views.query_verdict(result, domain=where, episode=episode, query_index=index, seed=seed)
        (st.success if verdict["sentence_correct"] else st.error)(
            "Sentence correct" if verdict["sentence_correct"] else "Sentence wrong", icon=":material/rule:"
        )
        st.text(verdict["verdict"])
        st.text(f"gold: {verdict['gold_bracketed']}  ·  intent {verdict['gold_intent']}")
        st.text(f"pred: {verdict['pred_bracketed']}  ·  intent {verdict['pred_intent']}")
        ui.show_table(
            views.tag_diff(result, domain=where, episode=episode, query_index=index, seed=seed),
            key="fewjoint_tag_diff",
            name=f"tag diff {query_id} seed {seed}",
            columns=["position", "mark", "token", "gold_tag", "pred_tag", "gold_chunk", "pred_chunk", "status"],
        )
        st.caption(
            "Chunks (conlleval): `[type` opens, `type]` closes, `[type]` is one token, `·` inside. ✓ ≠ − + mark tokens."
        )
