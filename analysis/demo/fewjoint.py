"""Demo FewJoint data: a small hand-written episode set and a simulated 5-seed system over it.

The real FewJoint files may not ship with the project, so ``build_fewjoint_demo`` writes

- ``episodes.json``: MetaDialog episodes in English word tokens -- 3 domains (weather, music, flights),
  3-4 intents each, 2 episodes per domain, each with a 1-shot support set (one utterance per intent)
  and 8 query utterances (16 queries per domain, 48 in all); BIO slot tags.
- ``simulated_seed{1..5}.jsonl``: predictions of a system named "simulated", one file per seed.

Error model of the simulated system (``ErrorModel``; every draw comes from
``numpy.random.default_rng([seed, query number])`` so a file never changes between runs):

- intent confusion: with probability ``intent_confusion`` the intent becomes another intent of the
  same domain;
- per gold chunk, one of: missed (all its tags become ``O``, ``missed_chunk``), type error (another slot
  type of the domain, ``type_error``), boundary error (``boundary_error``: the chunk loses its last
  token, or grows by one ``O`` token on its right when it has a single token);
- per gold chunk, ``ill_formed``: its leading ``B-X`` is written ``I-X`` (ill-formed BIO; conlleval
  still reads the same chunk, so only the ill-formed counter sees it);
- per query, ``spurious_chunk``: one ``O`` token becomes ``B-<type>`` of a random slot type.

``simulate_prediction`` is the same model applied to any query, used by the benchmark and tests to
perturb the real FewJoint gold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.fewjoint.chunks import conlleval_chunks

__all__ = ["DEMO_SEEDS", "ErrorModel", "build_fewjoint_demo", "demo_episodes", "simulate_prediction"]

DEMO_SEEDS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class ErrorModel:
    """Probabilities of each simulated error (see the module docstring)."""

    intent_confusion: float = 0.12
    missed_chunk: float = 0.06
    type_error: float = 0.05
    boundary_error: float = 0.08
    ill_formed: float = 0.03
    spurious_chunk: float = 0.04


def simulate_prediction(
    tags: Sequence[str],
    intent: str,
    *,
    intents: Sequence[str],
    slot_types: Sequence[str],
    rng: np.random.Generator,
    model: ErrorModel = ErrorModel(),
) -> tuple[str, list[str]]:
    """A simulated (intent, tags) prediction for one gold query; the tag count never changes.

    >>> rng = np.random.default_rng(0)
    >>> simulate_prediction(["B-city", "I-city"], "ask", intents=["ask"], slot_types=["city"], rng=rng,
    ...                     model=ErrorModel(0, 0, 0, 0, 0, 0))
    ('ask', ['B-city', 'I-city'])
    """
    pred = list(tags)
    others = [i for i in intents if i != intent]
    if others and rng.random() < model.intent_confusion:
        intent = others[int(rng.integers(len(others)))]
    for kind, start, end in conlleval_chunks(tags):
        draw = rng.random()
        if draw < model.missed_chunk:
            pred[start : end + 1] = ["O"] * (end - start + 1)
            continue
        draw -= model.missed_chunk
        if draw < model.type_error:
            choices = [t for t in slot_types if t != kind]
            if choices:
                kind = choices[int(rng.integers(len(choices)))]
                pred[start : end + 1] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start)
        elif draw - model.type_error < model.boundary_error:
            if end > start:
                pred[end] = "O"
            elif end + 1 < len(pred) and pred[end + 1] == "O":
                pred[end + 1] = f"I-{kind}"
        if pred[start].startswith("B-") and rng.random() < model.ill_formed:
            pred[start] = "I-" + pred[start][2:]
    if slot_types and rng.random() < model.spurious_chunk:
        empty = [i for i, t in enumerate(pred) if t == "O"]
        if empty:
            pos = empty[int(rng.integers(len(empty)))]
            pred[pos] = f"B-{slot_types[int(rng.integers(len(slot_types)))]}"
    return intent, pred


# Templates: {slot} is filled from FILLERS; words are tokens.
_DOMAINS: dict[str, dict[str, list[str]]] = {
    "weather": {
        "ask_weather": [
            "what is the weather in {city} {date}",
            "how is the weather {date}",
            "weather forecast for {city}",
            "tell me the weather in {city} {date} please",
        ],
        "ask_temperature": [
            "how hot will it be in {city} {date}",
            "what is the temperature in {city}",
            "will it be cold {date}",
            "temperature {date} in {city}",
        ],
        "ask_rain": [
            "will it rain in {city} {date}",
            "do i need an umbrella {date}",
            "is it going to rain {date} in {city}",
        ],
        "ask_wind": ["how windy is it in {city}", "is it windy {date}", "wind speed in {city} {date}"],
    },
    "music": {
        "play_song": [
            "play {song} by {artist}",
            "put on {song}",
            "i want to hear {song}",
            "can you play {song} by {artist} please",
        ],
        "play_artist": ["play some {artist}", "i want to hear {artist}", "put on something by {artist}"],
        "play_genre": [
            "play some {genre} music",
            "put on {genre}",
            "i feel like {genre} music",
            "play {genre} from the {decade}",
        ],
    },
    "flights": {
        "search_flight": [
            "find a flight from {from_city} to {to_city} {date}",
            "are there flights to {to_city} {date}",
            "show me flights from {from_city} to {to_city}",
        ],
        "book_flight": [
            "book me a flight to {to_city} {date}",
            "book a seat from {from_city} to {to_city} {date}",
            "i want to fly to {to_city} {date}",
        ],
        "flight_status": [
            "is flight {flight_no} on time",
            "status of flight {flight_no} {date}",
            "has {flight_no} landed",
        ],
        "cancel_flight": [
            "cancel my flight to {to_city}",
            "cancel flight {flight_no}",
            "please cancel my {date} flight",
        ],
    },
}
_FILLERS: dict[str, list[str]] = {
    "city": ["new york", "paris", "tokyo", "san francisco", "rio de janeiro", "berlin"],
    "from_city": ["boston", "london", "hong kong", "madrid"],
    "to_city": ["new york", "sydney", "los angeles", "rome", "cape town"],
    "date": ["tomorrow", "today", "next monday", "this weekend", "on friday"],
    "song": ["hey jude", "yellow submarine", "bohemian rhapsody", "imagine", "so what"],
    "artist": ["the beatles", "queen", "miles davis", "john lennon", "nina simone"],
    "genre": ["jazz", "hip hop", "classical", "rock", "bossa nova"],
    "decade": ["eighties", "nineties", "sixties"],
    "flight_no": ["ba 117", "ua 90", "lh 400", "af 22"],
}
_EPISODES_PER_DOMAIN = 2
_QUERIES_PER_EPISODE = 8


def _fill(template: str, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    tokens: list[str] = []
    tags: list[str] = []
    for word in template.split():
        if word.startswith("{") and word.endswith("}"):
            slot = word[1:-1]
            choices = _FILLERS[slot]
            value = choices[int(rng.integers(len(choices)))].split()
            tokens += value
            tags += [f"B-{slot}"] + [f"I-{slot}"] * (len(value) - 1)
        else:
            tokens.append(word)
            tags.append("O")
    return tokens, tags


def demo_episodes() -> dict[str, list[dict[str, Any]]]:
    """The demo episode set (deterministic), in MetaDialog's shape."""
    rng = np.random.default_rng(2020)
    out: dict[str, list[dict[str, Any]]] = {}
    for domain, intents in _DOMAINS.items():
        names = list(intents)
        episodes = []
        for _ in range(_EPISODES_PER_DOMAIN):
            parts: dict[str, dict[str, list[list[str]]]] = {}
            plan = {
                "support": names,  # 1-shot: one utterance per intent
                "query": [names[i % len(names)] for i in range(_QUERIES_PER_EPISODE)],
            }
            for part, labels in plan.items():
                seq_ins, seq_outs, out_labels = [], [], []
                for label in labels:
                    templates = intents[label]
                    tokens, tags = _fill(templates[int(rng.integers(len(templates)))], rng)
                    seq_ins.append(tokens)
                    seq_outs.append(tags)
                    out_labels.append([label])
                parts[part] = {"seq_ins": seq_ins, "seq_outs": seq_outs, "labels": out_labels}
            episodes.append(parts)
        out[domain] = episodes
    return out


def _simulated_rows(episodes: dict[str, list[dict[str, Any]]], seed: int, model: ErrorModel) -> list[dict[str, Any]]:
    rows = []
    number = 0
    for domain, domain_episodes in episodes.items():
        intents = sorted({label[0] for ep in domain_episodes for label in ep["query"]["labels"]})
        slot_types = sorted(
            {tag[2:] for ep in domain_episodes for tags in ep["query"]["seq_outs"] for tag in tags if tag != "O"}
        )
        for episode, content in enumerate(domain_episodes):
            query = content["query"]
            for index, (tokens, tags, label) in enumerate(
                zip(query["seq_ins"], query["seq_outs"], query["labels"], strict=True)
            ):
                rng = np.random.default_rng([seed, number])
                number += 1
                pred_intent, pred_tags = simulate_prediction(
                    tags, label[0], intents=intents, slot_types=slot_types, rng=rng, model=model
                )
                rows.append(
                    {
                        "domain": domain,
                        "episode": episode,
                        "query_index": index,
                        "pred_intent": pred_intent,
                        "pred_tags": pred_tags,
                        "tokens": tokens,
                    }
                )
    return rows


def build_fewjoint_demo(out_dir: Path, *, model: ErrorModel = ErrorModel()) -> list[Path]:
    """Write ``episodes.json`` and ``simulated_seed{1..5}.jsonl`` under ``out_dir``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    episodes = demo_episodes()
    gold = out_dir / "episodes.json"
    gold.write_text(json.dumps(episodes, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    written = [gold]
    for seed in DEMO_SEEDS:
        path = out_dir / f"simulated_seed{seed}.jsonl"
        lines = [json.dumps(row, ensure_ascii=False) for row in _simulated_rows(episodes, seed, model)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    import sys

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/demo/fewjoint")
    for written_path in build_fewjoint_demo(target):
        print(written_path)
