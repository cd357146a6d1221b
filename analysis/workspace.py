"""A workspace: a TOML manifest listing runs (files relative to it), loaded with failures kept per run.

Manifest shape (all paths relative to the manifest)::

    [workspace]
    name = "Demo"
    convention = "exact"            # optional: the convention of every run that does not name its own
    allow_outside_root = false      # optional: true lets run and FewJoint paths lead outside the
                                    # manifest's folder (the workspace root); the sidebar then says so

    [[runs]]
    name = "rule-dst-zh"            # unique run id
    system = "CrossWOZ rule DST"
    dataset = "CrossWOZ"            # e.g. "MultiWOZ 2.1": versions are compared, 2.1 vs 2.4 differ
    language = "zh"
    split = "test"
    history = "gold"                # predicted (JGA) or gold (GJGA)
    seed = 1
    convention = "exact"            # optional: see "Which convention a run is scored under" below
    pred = "crosswoz/rule_preds.json"
    gold = "crosswoz/test.json.zip" # optional when the prediction file carries gold
    format = "nested"               # optional: forced prediction format
    gold_format = "crosswoz"        # optional: forced gold format
    mapping = { id = "dial_id", gold = "gold", pred = "pred", encoding = "linearised" }
                                    # optional, instead of format: a declared mapping for a shape no
                                    # format reads (analysis.formats.mapping; `python -m analysis sniff`)
    gold_field = "ground_truth_m24" # optional: the field read as gold where a file holds several
    pred_deltas = false             # optional: each predicted turn holds only the slots it changed
    schema = "sgd/test/schema.json" # SGD / MultiWOZ 2.2 (convention sgd): the split's schema (default:
    train_schema = "sgd/train.json" #   one beside the gold files); the training schema: seen / unseen

    [[mappings]]                    # optional ontology alignment override between two runs
    a = "mwz-en"
    b = "mwz-zh"
    slots = { "restaurant-area" = "餐厅-区域" }

    [[fewjoint]]                    # optional FewJoint systems: episode gold and one file per seed
    name = "my-system"
    gold = "fewjoint/5shot/test.json"
    pred = ["seed1.jsonl", "seed2.jsonl", "seed3.jsonl", "seed4.jsonl", "seed5.jsonl"]
    shots = 5                       # optional: read from the gold path (`5shot`) when absent

    [review]                        # optional: the Review page's annotation store
    extra_tags = ["asr error"]      # tags added to the default taxonomy
    database_url = "postgresql://db-host/dst_reviews"  # default: annotations.sqlite beside the manifest

    [dashboard]
    max_upload_mb = 200             # optional: the upload cap (DST_MAX_UPLOAD_MB overrides it)
    edit_manifest = true            # optional: false keeps uploads in their session and turns the Edit run
                                    # form off (the dashboard then never writes this file; see
                                    # analysis.manifest_write for how it writes it otherwise)

Every key and value type is checked when the manifest is read: an unknown key, a value of the wrong type,
or a run/FewJoint path that leads outside the manifest's folder (`..`, an absolute path elsewhere, a
symlink out) without `allow_outside_root = true` is one `InputError` naming the manifest and the key.

Which convention a run is scored under (the dashboard's "as declared per run", the report's default):

1. the run's own `convention` key;
2. else the `[workspace]` `convention` key, when the manifest writes one: an explicit choice made once
   for the whole table, so it also overrides a format's own convention (a manifest that writes
   `convention = "trade"` keeps scoring every run under TRADE's rules, whatever the files' formats).
   It is not merely the dashboard's starting choice: that would override the runs' own keys too, and
   leave the report and the exports scoring the runs differently from the dashboard;
3. else the format's own, as the CLI and the upload form choose it (`analysis.loading`): `trade` for
   TRADE output and for nested per-turn files (`gt`/`pr` and the like) over TRADE's 30 MultiWOZ slots,
   `mwzeval` for mwzeval-style outputs, `dstc9`, `risawoz`, and `exact` for everything else.

Runs left to their formats' conventions may end up under different ones; every view that sets them side
by side says so (`analysis.views.comparability_warnings`), and the sidebar can score them all under one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tomllib
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args, get_type_hints

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats.mapping import Mapping, mapping_from
from analysis.formats.reading import special_kind
from analysis.loading import load_run
from analysis.model import HISTORY_MODES, INFO_FIELDS, Run, RunInfo

# A run's keys: its name (the `RunInfo.run_id`), its files, and one key per other `RunInfo` field.
FILE_KEYS = ("pred", "gold", "format", "gold_format", "description", "mapping", "gold_field")
INFO_KEYS = tuple(name for name in INFO_FIELDS if name != "run_id")
RUN_KEYS = {"name", *FILE_KEYS, *INFO_KEYS}
WORKSPACE_KEYS = {"name", "convention", "allow_outside_root"}
FEWJOINT_KEYS = {"name", "gold", "pred", "shots", "description"}
MAPPING_KEYS = {"a", "b", "slots"}
# Sections besides [workspace], [[runs]], [[mappings]] and [[fewjoint]], with their keys.
SETTINGS_KEYS = {"review": {"extra_tags", "database_url"}, "dashboard": {"max_upload_mb", "edit_manifest"}}
SECTIONS = ("workspace", "runs", "mappings", "fewjoint", *SETTINGS_KEYS)


@dataclass(frozen=True)
class RunEntry:
    """One `[[runs]]` entry: what the run is (`meta`; its `convention` None: the files' own, see
    `analysis.loading`) and its files, paths resolved against the manifest's folder."""

    meta: RunInfo
    pred: Path
    gold: Path | None = None
    format: str | None = None
    gold_format: str | None = None
    description: str = ""
    mapping: Mapping | None = None  # the prediction file read by a declared mapping (`analysis.formats.mapping`)
    gold_field: str | None = None

    @property
    def name(self) -> str:
        """The manifest's `name`: the run's id."""
        return self.meta.run_id


@dataclass(frozen=True)
class FewJointEntry:
    """One `[[fewjoint]]` entry: a few-shot joint NLU system, one prediction file per seed."""

    name: str
    gold: Path
    pred: tuple[Path, ...]
    shots: int | None = None
    description: str = ""


@dataclass
class Workspace:
    """The manifest's runs, those that loaded and those that failed (name -> one-line error)."""

    path: Path
    name: str
    convention: str | None  # the `[workspace]` key as written; None: each run's format decides
    entries: list[RunEntry]
    runs: dict[str, Run] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    fewjoint_entries: list[FewJointEntry] = field(default_factory=list)
    fewjoint: dict[str, Any] = field(default_factory=dict)  # name -> FewJointSystem
    digest: str = ""  # SHA-256 of the manifest's text as read: a writer checks the file did not change since

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def allow_outside_root(self) -> bool:
        """The manifest's `[workspace] allow_outside_root`: its paths may lead outside its folder."""
        return bool(self.settings.get("workspace", {}).get("allow_outside_root", False))

    @property
    def edit_manifest(self) -> bool:
        """The manifest's `[dashboard] edit_manifest` (default true): the dashboard may save uploads into it
        and edit its runs' metadata."""
        return bool(self.settings.get("dashboard", {}).get("edit_manifest", True))


MAX_MANIFEST_BYTES = 16 * 1024 * 1024  # a manifest is a few kB; anything this large is not one


def _manifest_text(path: Path) -> str:
    """A manifest's text. Opened without waiting (a FIFO typed as the manifest path would block the session
    for good) and checked to be a regular file of at most MAX_MANIFEST_BYTES before anything is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise InputError(str(path), "workspace", f"cannot read manifest: is {special_kind(status.st_mode)}")
        if status.st_size > MAX_MANIFEST_BYTES:
            raise InputError(
                str(path), "workspace", f"manifest of {status.st_size:,} bytes (limit {MAX_MANIFEST_BYTES:,})"
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_MANIFEST_BYTES:
        raise InputError(str(path), "workspace", f"manifest larger than the limit of {MAX_MANIFEST_BYTES:,} bytes")
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text's universal newlines


def read_manifest(path: str | Path) -> Workspace:
    """Parse and check a manifest without loading any run file."""
    path = Path(path)
    if path.is_dir():
        path = path / "workspace.toml"
    try:
        text = _manifest_text(path)
    except FileNotFoundError:
        raise InputError(str(path), "workspace", "manifest not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "workspace", f"cannot read manifest: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), "workspace", f"malformed TOML: {exc}") from None
    manifest = str(path)
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise InputError(manifest, "workspace", f"unknown sections {unknown}; known: {list(SECTIONS)}")
    head = _table(manifest, "[workspace]", data.get("workspace", {}), WORKSPACE_KEYS)
    name = _typed(manifest, "[workspace] name", head.get("name", path.parent.name), str)
    convention = head.get("convention")  # absent: no workspace-wide choice, not `exact`
    if convention is not None and convention not in CONVENTIONS:
        raise InputError(manifest, "workspace", f"[workspace] convention has to be one of {', '.join(CONVENTIONS)}")
    outside = _typed(manifest, "[workspace] allow_outside_root", head.get("allow_outside_root", False), bool)
    root = None if outside else path.parent.resolve()
    raw_runs = data.get("runs", [])
    if not isinstance(raw_runs, list) or not raw_runs:
        raise InputError(manifest, "workspace", "manifest lists no [[runs]]")
    entries: list[RunEntry] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_runs):
        entries.append(_entry(path, i, raw, seen, convention, root))
    mappings = data.get("mappings", [])
    if not isinstance(mappings, list):
        raise InputError(manifest, "workspace", "[[mappings]] must be an array of tables")
    for i, raw in enumerate(mappings):
        _mapping(manifest, i, raw)
    settings = {
        section: _table(manifest, f"[{section}]", data[section], keys)
        for section, keys in SETTINGS_KEYS.items()
        if section in data
    }
    _check_settings(manifest, settings)
    raw_fewjoint = data.get("fewjoint", [])
    if not isinstance(raw_fewjoint, list):
        raise InputError(manifest, "workspace", "[[fewjoint]] must be an array of tables")
    return Workspace(
        path,
        name,
        convention,
        entries,
        mappings=mappings,
        settings=settings | {"workspace": head},
        fewjoint_entries=[_fewjoint_entry(path, i, raw, root) for i, raw in enumerate(raw_fewjoint)],
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _table(manifest: str, where: str, raw: Any, keys: set[str]) -> dict[str, Any]:
    """`raw` checked to be a table holding only `keys`."""
    if not isinstance(raw, dict):
        raise InputError(manifest, "workspace", f"{where} must be a table")
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise InputError(manifest, "workspace", f"{where} has unknown keys {unknown}; known: {sorted(keys)}")
    return raw


def _typed(manifest: str, key: str, value: Any, kind: type) -> Any:
    """`value` checked to be a `kind` (a bool is not an integer here; an integer is a number)."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}
        raise InputError(manifest, "workspace", f"{key} must be {names.get(kind, kind.__name__)}, got {value!r}")
    return value


def _inside(manifest: str, root: Path | None, base: Path, key: str, value: str) -> Path:
    """The path `value` names, relative to the manifest's folder; refused when it leads outside the
    workspace root `root` (None: `allow_outside_root = true`)."""
    resolved = base / value
    if root is not None:
        real = resolved.resolve()
        if real != root and root not in real.parents:
            raise InputError(
                manifest,
                "workspace",
                f"{key} = {value!r} leads outside the workspace root {root}; move the file inside it, "
                "or set allow_outside_root = true under [workspace]",
            )
    return resolved


def _mapping(manifest: str, index: int, raw: Any) -> None:
    where = f"[[mappings]] #{index + 1}"
    _table(manifest, where, raw, MAPPING_KEYS)
    for key in ("a", "b"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise InputError(manifest, "workspace", f"{where} needs {key} = a run name, got {raw.get(key)!r}")
    slots = raw.get("slots", {})
    if not isinstance(slots, dict) or not all(isinstance(v, str) for v in slots.values()):
        raise InputError(
            manifest, "workspace", f'{where}: slots must be a table {{ "slot of a" = "slot of b" }} of strings'
        )


def _check_settings(manifest: str, settings: dict[str, dict[str, Any]]) -> None:
    review = settings.get("review", {})
    if "database_url" in review:
        _typed(manifest, "[review] database_url", review["database_url"], str)
    if "extra_tags" in review:
        from analysis.review.items import taxonomy  # only manifests with extra tags need it (no SQLAlchemy)

        try:
            taxonomy(settings)
        except ValueError as exc:
            raise InputError(manifest, "workspace", str(exc)) from None
    limit = settings.get("dashboard", {}).get("max_upload_mb")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0):
        raise InputError(manifest, "workspace", f"[dashboard] max_upload_mb must be a positive number, got {limit!r}")
    if "edit_manifest" in settings.get("dashboard", {}):
        _typed(manifest, "[dashboard] edit_manifest", settings["dashboard"]["edit_manifest"], bool)


def _fewjoint_entry(path: Path, index: int, raw: Any, root: Path | None = None) -> FewJointEntry:
    where = f"[[fewjoint]] #{index + 1}"
    manifest = str(path)
    _table(manifest, where, raw, FEWJOINT_KEYS)
    if not isinstance(raw.get("name"), str) or not isinstance(raw.get("gold"), str):
        raise InputError(manifest, "workspace", f"{where} needs a name and a gold file")
    preds = raw.get("pred")
    if isinstance(preds, str):
        preds = [preds]
    if not isinstance(preds, list) or not preds or not all(isinstance(p, str) for p in preds):
        raise InputError(manifest, "workspace", f"{where} needs pred: a list of prediction files, one per seed")
    shots = raw.get("shots")
    if shots is not None:
        _typed(manifest, f"{where}: shots", shots, int)
    base = path.parent
    return FewJointEntry(
        name=raw["name"],
        gold=_inside(manifest, root, base, f"{where}: gold", raw["gold"]),
        pred=tuple(_inside(manifest, root, base, f"{where}: pred", p) for p in preds),
        shots=shots,
        description=_typed(manifest, f"{where}: description", raw.get("description", ""), str),
    )


def _entry(
    path: Path, index: int, raw: Any, seen: set[str], default_convention: str | None, root: Path | None = None
) -> RunEntry:
    where = f"[[runs]] #{index + 1}"
    manifest = str(path)
    _table(manifest, where, raw, RUN_KEYS)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(manifest, "workspace", f"{where} needs a name")
    if name in seen:
        raise InputError(manifest, "workspace", f"{where}: run name {name!r} is used twice")
    seen.add(name)
    if not isinstance(raw.get("pred"), str):
        raise InputError(manifest, "workspace", f"run {name!r} needs a pred file")
    for key in ("gold", "format", "gold_format", "description", "gold_field"):  # `pred` is checked above
        if key in raw:
            _typed(manifest, f"run {name!r}: {key}", raw[key], str)
    mapping = None
    if "mapping" in raw:
        if "format" in raw:
            raise InputError(manifest, "workspace", f"run {name!r}: give format or mapping, not both")
        try:
            mapping = mapping_from(raw["mapping"], f"run {name!r}: mapping")
        except InputError as exc:
            raise InputError(manifest, "workspace", f"run {name!r}: mapping: {exc.problem}") from None
    if raw.get("history", "predicted") not in HISTORY_MODES:
        raise InputError(manifest, "workspace", f"run {name!r}: history has to be one of {HISTORY_MODES}")
    declared = {key: raw[key] for key in INFO_KEYS if key in raw}
    for key, value in declared.items():
        declared[key] = _typed(manifest, f"run {name!r}: {key}", value, _info_types()[key])
    if not 0 <= declared.get("published_jga", 0) <= 100:
        raise InputError(manifest, "workspace", f"run {name!r}: published_jga must be a fraction or a percentage")
    # The system defaults to the run's name, the convention to the workspace's (None: the files' own).
    meta = RunInfo(**{"run_id": name, "system": name, "convention": default_convention} | declared)
    if meta.convention is not None and meta.convention not in CONVENTIONS:
        raise InputError(manifest, "workspace", f"run {name!r}: convention has to be one of {', '.join(CONVENTIONS)}")
    base = path.parent
    schemas = {  # paths like the run's files: resolved against the manifest, kept inside the workspace
        key: str(_inside(manifest, root, base, f"run {name!r}: {key}", raw[key]))
        for key in ("schema", "train_schema")
        if raw.get(key)
    }
    if schemas:
        meta = replace(
            meta, schema=schemas.get("schema", meta.schema), train_schema=schemas.get("train_schema", meta.train_schema)
        )
    return RunEntry(
        meta=meta,
        pred=_inside(manifest, root, base, f"run {name!r}: pred", raw["pred"]),
        gold=_inside(manifest, root, base, f"run {name!r}: gold", raw["gold"]) if "gold" in raw else None,
        format=raw.get("format"),
        gold_format=raw.get("gold_format"),
        description=raw.get("description", ""),
        mapping=mapping,
        gold_field=raw.get("gold_field"),
    )


@functools.cache
def _info_types() -> dict[str, type]:
    """The type a manifest value of each `RunInfo` field must have (`int | None` -> int)."""
    kinds = {}
    for name, hint in get_type_hints(RunInfo).items():
        if isinstance(hint, types.UnionType):
            hint = next(arg for arg in get_args(hint) if arg is not type(None))
        kinds[name] = hint
    return kinds


def load_entry(
    entry: RunEntry, *, pred_data: bytes | None = None, gold_data: bytes | None = None, cache_pred: bool = True
) -> Run:
    """Load the run a manifest entry describes; `*_data`: uploaded bytes read instead of the paths;
    `cache_pred` as `load_run`'s."""
    return load_run(
        entry.pred,
        entry.gold,
        pred_format=entry.format,
        gold_format=entry.gold_format,
        meta=entry.meta,
        pred_data=pred_data,
        gold_data=gold_data,
        cache_pred=cache_pred,
        pred_mapping=entry.mapping,
        gold_field=entry.gold_field,
    )


def load_workspace(path: str | Path, *, runs: bool = True) -> Workspace:
    """Read the manifest and load every run; a run whose file is missing or malformed is recorded in
    `failed` with its one-line error, and the other runs still load. `runs=False`: the DST runs are left
    to the score store (`analysis.store.runs.score_workspace`), which reads back those it holds."""
    workspace = read_manifest(path)
    for entry in workspace.entries if runs else ():
        try:
            workspace.runs[entry.name] = load_entry(entry)
        except InputError as exc:
            workspace.failed[entry.name] = str(exc)
    for few in workspace.fewjoint_entries:
        from analysis.fewjoint.align import load_fewjoint_system  # only workspaces with FewJoint systems need it

        try:
            workspace.fewjoint[few.name] = load_fewjoint_system(few.gold, few.pred, name=few.name, shots=few.shots)
        except InputError as exc:
            workspace.failed[f"fewjoint:{few.name}"] = str(exc)
    return workspace
