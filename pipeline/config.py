"""Reading the configuration: params.yaml (suite, models, rag, protocol, arms) and conf/ (arms, engines).

Every stage reads its settings through here, so a bad value is refused the same way everywhere: one line
naming the file, the field and what to do.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from contract.arm import ArmSpec
from contract.contamination import ContaminationSettings
from contract.files import PathCheckError, input_file
from contract.judge import JudgeSettings
from contract.names import Name
from contract.params import AnalysisParams, ArmList, TrajectoryParams, problem
from contract.protocol import AnswerRule, Protocol, is_protocol_key
from contract.sweep import Checkpoint, SweepError, SweepParams, expand
from pipeline.swept import plain_arm, sweep_of, swept_arms

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
_HEX = frozenset("0123456789abcdef")


class ConfigError(RuntimeError):
    """A setting that cannot be used; the message names the file, the field and the fix."""


class SuiteRef(BaseModel):
    """params.yaml suite: the frozen suite file and its name and revision."""

    model_config = ConfigDict(extra="forbid")
    path: str
    name: Name
    revision: str


class ModelRef(BaseModel):
    """params.yaml models.<key>: a local checkpoint directory, or a hub repository at a full commit sha."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    hf: str | None = None
    revision: str | None = None

    @field_validator("revision")
    @classmethod
    def _lowercase_sha(cls, v: str | None) -> str | None:
        # The hub spells commit shas in lowercase; an uppercase copy of one names the same commit.
        return v.lower() if v is not None and len(v) == 40 and set(v.lower()) <= _HEX else v

    @model_validator(mode="after")
    def _one_source(self) -> ModelRef:
        if (self.path is None) == (self.hf is None):
            raise ValueError("give exactly one of path (a local checkpoint) or hf (a hub repository)")
        if self.path is not None and self.revision is not None:
            raise ValueError("revision applies to hub models only; a local path is pinned by its content")
        if self.hf is not None:
            wrong = _not_a_sha(self.revision)
            if wrong:
                raise ValueError(
                    f"revision {self.revision!r} is not a full 40-hex commit sha ({wrong}); a branch or tag "
                    "moves, so pin the commit (e.g. revision: 0123...cdef)"
                )
        return self

    @property
    def location(self) -> str:
        """What an engine loads: the directory or the hub repository name."""
        return self.path if self.path is not None else str(self.hf)

    @property
    def display_name(self) -> str:
        """The model as logs name it: its directory, or repository@commit."""
        return self.path if self.path is not None else f"{self.hf}@{self.revision}"


def _not_a_sha(revision: str | None) -> str | None:
    """What keeps revision from being a full commit sha, in a few words; None when it is one."""
    if revision is None:
        return "it is missing"
    bad = sorted(set(revision.lower()) - _HEX)
    if bad:
        return f"{bad[0]!r} is not a hex digit"
    if len(revision) != 40:
        return f"it has {len(revision)} hex digits"
    return None


class RagRef(BaseModel):
    """params.yaml rag: the corpus, the index built from it, passages per question and their order."""

    model_config = ConfigDict(extra="forbid")
    corpus: str
    index: str = "index/"
    top_k: int = Field(default=3, ge=1)
    # best_last lists the passages from the lowest-ranked to the best, so the best one stands right before the
    # question: the demo models read only the nearest passage (Liu et al. 2023, "Lost in the Middle", saw the
    # same pull of the nearest position in large models).
    order: Literal["best_last", "best_first"] = "best_last"


class Params(BaseModel):
    """params.yaml: what the pipeline reads, and the analyses' sections (read again by analysis.reports)."""

    model_config = ConfigDict(extra="forbid")
    suite: SuiteRef
    models: dict[Name, ModelRef]
    rag: RagRef | None = None
    protocol: Protocol
    analysis: AnalysisParams | None = None  # the reports' statistics (contract.params)
    arms: ArmList | None = None
    # The checkpoint trajectory's arms (contract.params; generation ignores it).
    trajectory: TrajectoryParams | None = None
    # Every checkpoint of a training run (contract.sweep): one model and one plain arm per folder of a glob.
    sweep: SweepParams | None = None
    contamination: ContaminationSettings | None = None  # the audit (contract.contamination)
    judge: JudgeSettings | None = None  # the model judge (docs/judge.md); None: the judge stage does nothing
    # The file these were read from, so that messages name the params file actually given.
    _file: Path = PrivateAttr(default=Path("params.yaml"))
    # The checkpoints of `sweep`, in step order (load_params expands the glob once).
    _swept: list[Checkpoint] = PrivateAttr(default_factory=list)

    @property
    def file(self) -> Path:
        """The params file these settings were read from."""
        return self._file


def _first_error(path: Path, e: ValidationError) -> str:
    """The first problem of a params file in one line (contract.params.problem, the analyses' wording too)."""
    return problem(path, e, Params)


def load_params(path: str | Path) -> Params:
    """Read and validate params.yaml; raise ConfigError naming the file and the field."""
    p = Path(path)
    if p.exists() or p.is_symlink():
        try:
            input_file(p, "params")
        except PathCheckError as e:
            raise ConfigError(str(e)) from None
    try:
        raw = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{p}: params file not found; run from the repository root or pass params=PATH"
        ) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    try:
        params = Params.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_first_error(p, e)) from None
    params._file = p
    proto = params.protocol
    if proto.temperature == 0 and proto.k > 1:
        # Greedy decoding gives one answer however often it is drawn: k copies would be tested as k draws.
        raise ConfigError(
            f"{p}: protocol.k: {proto.k} samples at protocol.temperature: 0 are one greedy answer repeated "
            f"{proto.k} times, which pass@k and the A/A check would read as draws; set k: 1 for greedy "
            "decoding, or a temperature above 0"
        )
    params.protocol = with_preset(params.protocol, p)
    if params.sweep is not None:
        try:  # paths relative to the folder the pipeline runs in, where params.yaml is
            params._swept = expand(params.sweep, ".", where=str(p))
        except SweepError as e:
            raise ConfigError(str(e)) from None
        for c in params._swept:
            # A checkpoint params.yaml names itself keeps its entry (its display name); under a swept arm's
            # name, another model would be generated and pinned as that step.
            named = params.models.setdefault(c.arm, ModelRef(path=c.path))
            if named.path is None or Path(named.path).resolve() != Path(c.path).resolve():
                raise ConfigError(
                    f"{p}: models.{c.arm}: names {named.path or named.hf}, but {c.arm} is the swept "
                    f"checkpoint {c.path} (sweep.glob); rename that model, or point it at {c.path}"
                )
    return params


def register_swept_arms(path: str | Path = "params.yaml", conf_dir: Path = CONF_DIR) -> list[str]:
    """Put each swept arm that has no conf/arm file into Hydra's config store, so `arm=<name>` composes."""
    from hydra.core.config_store import ConfigStore

    names = [a for a in swept_arms(path) if not (conf_dir / "arm" / f"{a}.yaml").is_file()]
    store = ConfigStore.instance()
    for name in names:
        store.store(group="arm", name=name, node=plain_arm(name))
    return names


class TemplateHeader(BaseModel):
    """What a prompt template says of itself, in YAML inside its opening Jinja comment `{# ... #}`: what
    it is, where its answer is read, its stop strings, and whether it shows few-shot examples."""

    model_config = ConfigDict(extra="forbid", strict=True)
    description: str | None = None
    answer: AnswerRule | None = None
    stop: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    fewshot: bool = False


_HEADER = re.compile(r"\A\{#-?(.*?)-?#\}", re.DOTALL)


def known_presets(conf_dir: Path = CONF_DIR) -> list[str]:
    """Names of the prompt presets (conf/prompt/<name>.jinja)."""
    return sorted(p.stem for p in (conf_dir / "prompt").glob("*.jinja"))


def template_file(protocol: Protocol, conf_dir: Path = CONF_DIR) -> Path | None:
    """The Jinja prompt template a protocol names: its preset's (conf/prompt/<name>.jinja), its own
    prompt_template, or None (the built-in format)."""
    if protocol.prompt is not None:
        return conf_dir / "prompt" / f"{protocol.prompt}.jinja"
    return None if protocol.prompt_template is None else Path(protocol.prompt_template)


def read_template(path: Path, key: str, params_file: Path) -> str:
    """A prompt template's text; ConfigError naming the params file and the key when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{params_file}: protocol.{key}: cannot read {path} ({e.strerror}); give the path of a Jinja "
            "prompt template file"
        ) from None


def template_header(path: Path, key: str, params_file: Path) -> TemplateHeader:
    """The header of a prompt template (empty when its text opens with no Jinja comment)."""
    if key == "prompt" and not path.is_file():
        raise ConfigError(
            f"{params_file}: protocol.prompt: no preset {path.stem!r} (no {path}); known presets: "
            f"{', '.join(known_presets(path.parent.parent))}"
        )
    m = _HEADER.match(read_template(path, key, params_file))
    if m is None:
        return TemplateHeader()
    try:
        raw = yaml.safe_load(m.group(1))
        return TemplateHeader.model_validate(raw if isinstance(raw, Mapping) else {"description": m.group(1)})
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: its opening comment is not YAML ({str(e).splitlines()[0]})") from None
    except ValidationError as e:
        raise ConfigError(
            f"{path}: opening comment: {problem(path, e, TemplateHeader).split(': ', 1)[1]}"
        ) from None


def with_preset(protocol: Protocol, params_file: Path, conf_dir: Path = CONF_DIR) -> Protocol:
    """The protocol with its template's answer rule and stop strings filled in (protocol.answer wins,
    protocol.stop adds to them), so that what generations and logs record says how the answer is read."""
    if protocol.prompt is not None and protocol.prompt_template is not None:
        raise ConfigError(
            f"{params_file}: protocol.prompt and protocol.prompt_template: give one (a preset of "
            "conf/prompt/, or your own Jinja template file)"
        )
    # A preset is a name, never a path: `../../x` would load a template from outside conf/prompt/.
    name = protocol.prompt
    if name is not None and (not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", name) or ".." in name):
        raise ConfigError(
            f"{params_file}: protocol.prompt: {name!r} is not the name of a preset of {conf_dir / 'prompt'} "
            f"(known presets: {', '.join(known_presets(conf_dir))}); give your own template file as "
            "protocol.prompt_template"
        )
    path = template_file(protocol, conf_dir)
    if path is None:
        return protocol
    key = "prompt" if protocol.prompt is not None else "prompt_template"
    header = template_header(path, key, params_file)
    if header.fewshot and protocol.fewshot is None:
        raise ConfigError(
            f"{params_file}: protocol.{key}: {path} is a few-shot format; set protocol.fewshot: "
            "{path: EXAMPLES.jsonl, n: N} (one JSON line per example: id, question, answer)"
        )
    return protocol.model_copy(
        update={
            "answer": protocol.answer or header.answer,
            "stop": [*header.stop, *(protocol.stop or [])] or None,
        }
    )


def known_arms(conf_dir: Path = CONF_DIR, params: str | Path = "params.yaml") -> list[str]:
    """Names of the arms of conf/arm/, and the swept arms of the params file (registered with Hydra)."""
    files = sorted(p.stem for p in (conf_dir / "arm").glob("*.yaml"))
    return files + [a for a in register_swept_arms(params, conf_dir) if a not in files]


def unknown_arm(name: str, conf_dir: Path = CONF_DIR, params: str | Path = "params.yaml") -> str:
    """The one-line refusal of an arm that is neither in conf/arm/ nor swept; a sweep that cannot be
    expanded is named instead (the arm may be one of its checkpoints)."""
    refusal = sweep_of(params)[1]
    if refusal is not None:
        return refusal
    known = known_arms(conf_dir, params)
    hint = did_you_mean(name, known)
    return f"unknown arm {name!r} (no conf/arm/{name}.yaml{hint}); known arms: {', '.join(known)}"


def did_you_mean(name: str, known: list[str]) -> str:
    """'; did you mean X?' naming the known name closest to a mistyped one (arm=rag: +rag), else ''."""
    # Arm names carry '+' (an augmentation of base); a name written without it is the commonest slip.
    close = [n for n in known if n.lstrip("+") == name.lstrip("+")]
    close = close or difflib.get_close_matches(name, known, 1)
    return f"; did you mean {close[0]!r}?" if close else ""


def arms_of(params: Params, conf_dir: Path = CONF_DIR) -> list[str]:
    """The arms the pipeline runs: params.yaml `arms` (every arm of conf/arm/ when it names none), then the
    swept checkpoints' plain arms in step order (from params itself: its file is not read again)."""
    files = sorted(p.stem for p in (conf_dir / "arm").glob("*.yaml"))
    listed = list(params.arms) if params.arms is not None else files
    return listed + [c.arm for c in params._swept if c.arm not in listed]


def _protocol_keys_in(node: Any, where: str = "") -> list[str]:
    """Dotted paths of protocol keys anywhere in a mapping (a 'protocol' section counts as one)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            path = f"{where}.{key}" if where else str(key)
            if is_protocol_key(key):
                found.append(path)
            else:
                found.extend(_protocol_keys_in(value, path))
    return found


def load_arm(
    name: str,
    conf_dir: Path = CONF_DIR,
    composed: Mapping[str, Any] | None = None,
    params: str | Path = "params.yaml",
) -> ArmSpec:
    """Read conf/arm/<name>.yaml (or the composed Hydra node for it) and refuse protocol keys."""
    path = conf_dir / "arm" / f"{name}.yaml"
    if not path.is_file() and name in swept_arms(params):
        # A swept checkpoint's plain arm: made from the params file's `sweep`, no file to read.
        return ArmSpec(name=name, **plain_arm(name))
    if not path.is_file():
        raise ConfigError(unknown_arm(name, conf_dir, params))
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping of model, retrieval, tools, attribution")
    for where, node in ((str(path), raw), ("a command-line override of arm", composed or {})):
        bad = _protocol_keys_in(node)
        if bad:
            leaf = bad[0].rsplit(".", 1)[-1]
            raise ConfigError(
                f"{where}: sets protocol key {bad[0]!r}; the protocol is matched across arms and lives only "
                f"in params.yaml (protocol.{leaf}); remove it from the arm"
            )
    if composed is not None:
        # An override that changes what the arm is (arm.model=trained on arm=base) would write a log under
        # the arm's name that is another arm: refuse it, the arm file is the arm.
        for key in ("model", "retrieval", "tools", "attribution"):
            if key in composed and key in raw and composed[key] != raw[key]:
                raise ConfigError(
                    f"a command-line override sets arm.{key}={composed[key]!r}, but {path} says "
                    f"{raw[key]!r}; an arm is defined by its file: edit {path} or add a new arm file"
                )
    data = dict(composed) if composed is not None else dict(raw)
    try:
        return ArmSpec(name=name, **data)
    except ValidationError as e:
        err = e.errors()[0]
        field_name = ".".join(str(x) for x in err["loc"]) or "arm"
        raise ConfigError(f"{path}: {field_name}: {err['msg']}") from None


def engine_config(name: str = "vllm", conf_dir: Path = CONF_DIR, **overrides: Any) -> dict[str, Any]:
    """conf/engine/<name>.yaml as a dict, with overrides (for tests, benchmarks and scripts)."""
    path = conf_dir / "engine" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (conf_dir / "engine").glob("*.yaml"))
        raise ConfigError(
            f"unknown engine {name!r} ({path} does not exist); known engines: {', '.join(known)}"
        )
    cfg = yaml.safe_load(path.read_text())
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ConfigError(f"{path}: no key {sorted(unknown)[0]!r}; keys: {', '.join(cfg)}")
    cfg.update(overrides)
    return cfg
