"""What a bare Python exception means: version skew, a bug in one area, or nothing certain.

Most long-tail reports end in an exception with no message of its own: an `AttributeError`, a
`TypeError` about arguments, an `ImportError` of one name. An expert reads its shape:

- **Version skew** between the engine and a library it imports (or a plugin and the engine):
  a name that cannot be imported from another package; a module of another package without an
  attribute the engine expects; a transformers config, tokenizer or processor object without an
  attribute (transformers changed it); an argument error raised inside another package's code.
- **A bug in one area**: the same shapes raised in the engine's own code, or `KeyError`,
  `IndexError`, `NoneType` errors and assertions there. The area map (areas.py) says which area.

`read_exception` finds the root-cause exception (the first one that is not a wrapper) and
`version_skew` says whether its shape is skew, naming both packages and any versions the paste
shows, so the recovery can say which versions to align.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from triage_bot.kb.schema import AREA_MODEL
from triage_bot.text.candidates import WRAPPER_LINES
from triage_bot.text.normalize import Normalized


@dataclass(frozen=True, slots=True)
class EnginePackages:
    """The engines' Python packages (from the knowledge files' headers), and the detected one's."""

    packages: tuple[str, ...]
    detected: str = ""  # the package of the engine the paste shows; "" when none shows

    @classmethod
    def of(cls, by_engine: Mapping[str, str], engine: str | None) -> EnginePackages:
        return cls(tuple(by_engine.values()), by_engine.get(engine or "", ""))


# the import name -> the name pip knows it by, where they differ
PIP_NAMES = {
    "tensorrt_llm": "tensorrt_llm",
    "sgl_kernel": "sgl-kernel",
    "flashinfer": "flashinfer-python",
    "flash_attn": "flash-attn",
    "huggingface_hub": "huggingface_hub",
    "vllm_ascend": "vllm-ascend",
    "google": "protobuf",
    "PIL": "pillow",
    "cv2": "opencv-python",
    "yaml": "pyyaml",
}
# engine-internal plumbing that is not a library of its own
NOT_A_LIBRARY = frozenset(
    {
        "__main__",
        "builtins",
        "typing",
        "collections",
        "functools",
        "abc",
        "asyncio",
        "multiprocessing",
        "concurrent",
        "threading",
        "importlib",
        "inspect",
        "os",
        "sys",
        "json",
        "re",
        "dataclasses",
        "enum",
        "contextlib",
    }
)

_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<msg>.*))?$")
# the same inside prose or markdown: "fails with **AttributeError: 'X' object has no attribute 'y'**"
_EXCEPTION_INLINE = re.compile(
    r"(?:^|[\s*`'\"(>])(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Z]\w*(?:Error|Exception)): (?P<msg>.+)"
)
_IMPORT_NAME = re.compile(r"cannot import name '(?P<name>[\w.]+)' from '(?P<module>[\w.]+)'")
_MODULE_ATTR = re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'")
_OBJECT_ATTR = re.compile(r"'(?P<cls>[\w.]+)' object has no attribute '(?P<name>\w+)'")
_ARGUMENTS = re.compile(
    r"(?P<callee>[\w.<>]+)\(\) (?:got an unexpected keyword argument '(?P<name>\w+)'"
    r"|missing \d+ required (?:positional|keyword-only) arguments?|takes \d+ positional arguments?"
    r"|got multiple values for argument)"
)
# transformers' classes are named after the model: Qwen2Config, Qwen2VLProcessor. Tokenizer objects
# are the tokenizer area's own (component.tokenizer), whichever release changed them.
_HF_CLASS = re.compile(
    r"^(?:[A-Z][A-Za-z0-9]*)?(?:Config|Processor|ImageProcessor|ImageProcessorFast"
    r"|FeatureExtractor|VideoProcessor|PreTrainedModel|GenerationConfig)$"
)
_TOKENIZER_CLASS = re.compile(
    r"^(?:[A-Z][A-Za-z0-9]*)?(?:TokenizerFast|Tokenizer|TokenizerBase|TokenizerWrapper)$"
)
# the engines' own config objects are named like transformers' but are the engine's (skew with a plugin, or a bug)
_ENGINE_CLASSES = frozenset(
    {
        "VllmConfig",
        "ModelConfig",
        "CacheConfig",
        "ParallelConfig",
        "SchedulerConfig",
        "DeviceConfig",
        "LoadConfig",
        "LoRAConfig",
        "SpeculativeConfig",
        "CompilationConfig",
        "ObservabilityConfig",
        "KVTransferConfig",
        "KVEventsConfig",
        "DecodingConfig",
        "StructuredOutputsConfig",
        "MultiModalConfig",
        "PoolerConfig",
        "ServerArgs",
        "PortArgs",
        "LlmArgs",
        "TorchLlmArgs",
        "TrtLlmArgs",
        "ExecutorConfig",
        "BuildConfig",
        "KvCacheConfig",
        "PretrainedConfig",
    }
)
# a model implementation's own class (vLLM, SGLang and transformers name them alike)
_MODEL_CLASS = re.compile(
    r"^[A-Z]\w*For(?:CausalLM|ConditionalGeneration|SequenceClassification|TokenClassification"
    r"|QuestionAnswering|MaskedLM|Embedding|TextEncoding|SpeechSeq2Seq|CTC|ImageTextToText)$"
)
# a submodule of a package that is installed: the package is another release than the engine expects
_DOTTED_MISSING = re.compile(r"No module named '(?P<module>[A-Za-z_]\w*\.[\w.]+)'")
_SITE = re.compile(r"(?:site|dist)-packages/(?P<pkg>[A-Za-z_][\w]*)/")
_VERSION = r"\s*(?:==|>=|<=|~=|:|\s)\s*v?(?P<version>\d+\.\d+(?:\.\d+)?(?:[\w.+-]*)?)"


@dataclass(frozen=True, slots=True)
class RaisedException:
    cls: str
    message: str
    line: int  # index of the exception line


@dataclass(frozen=True, slots=True)
class Skew:
    """Version skew: `package` does not match what `other` expects (the engine, or a plugin)."""

    package: str  # import name of the mismatched library, e.g. transformers
    other: str  # the engine (or plugin) that expects another version of it
    name: str  # the missing name or the argument
    package_version: str = ""
    other_version: str = ""

    def values(self) -> dict[str, object]:
        out: dict[str, object] = {
            "skew_package": PIP_NAMES.get(self.package, self.package),
            "skew_other": PIP_NAMES.get(self.other, self.other),
            "skew_name": self.name,
        }
        if self.package_version:
            out["skew_package_version"] = self.package_version
        if self.other_version:
            out["skew_other_version"] = self.other_version
        return out


def read_exception(norm: Normalized) -> RaisedException | None:
    """The root-cause exception: the first exception line that is not a wrapper's (an exception
    quoted in prose or markdown counts when no line states one on its own)."""
    inline: RaisedException | None = None
    for line in norm.lines:
        if (
            line.is_frame
            or len(line.text) > 2000
            or ("Error" not in line.text and "Exception" not in line.text)
        ):
            continue
        if WRAPPER_LINES.search(line.text):
            continue
        text = line.text.strip("*`_ ")
        found = _EXCEPTION.match(text)
        if found is not None:
            return RaisedException(found.group("cls"), (found.group("msg") or "").rstrip("*`_ "), line.number)
        if inline is None and (quoted := _EXCEPTION_INLINE.search(text)) is not None:
            inline = RaisedException(quoted.group("cls"), quoted.group("msg").rstrip("*`_ ."), line.number)
    return inline


def area_of_object(raised: RaisedException) -> tuple[str, str] | None:
    """The area an object's missing attribute points to by the object's class alone: a tokenizer
    object is the tokenizer's area, a model class is that model's implementation. Returns the
    area (a family id or AREA_MODEL) and the class."""
    obj = _OBJECT_ATTR.search(raised.message) if raised.cls == "AttributeError" else None
    if obj is None:
        return None
    cls = obj.group("cls").rsplit(".", 1)[-1]
    if _TOKENIZER_CLASS.match(cls):
        return "component.tokenizer", cls
    if _MODEL_CLASS.match(cls):
        return AREA_MODEL, cls
    return None


def version_skew(norm: Normalized, raised: RaisedException, engines: EnginePackages) -> Skew | None:
    """Skew when the exception's shape says two installed packages disagree; None otherwise."""
    engine_pkg = engines.detected
    message = raised.message
    frames = [line.text for line in norm.lines[: raised.line] if line.is_frame]
    caller = _package_of(frames[-1], engines.packages) if frames else ""
    skew: tuple[str, str, str] | None = None  # (package, other, name)
    if raised.cls in ("ImportError", "AttributeError"):
        found = _IMPORT_NAME.search(message) or _MODULE_ATTR.search(message)
        if found is not None:
            package = found.group("module").split(".", 1)[0]
            if package in NOT_A_LIBRARY:
                return None
            importer = caller if caller and caller != package else engine_pkg
            if package == importer or not importer:
                return None  # one package disagreeing with itself: a broken install, not skew
            skew = (package, importer, found.group("name"))
        elif (obj := _OBJECT_ATTR.search(message)) is not None:
            cls = obj.group("cls").rsplit(".", 1)[-1]
            if _HF_CLASS.match(cls) and cls not in _ENGINE_CLASSES:
                skew = (
                    "transformers",
                    caller if caller and caller != "transformers" else engine_pkg,
                    obj.group("name"),
                )
    elif raised.cls == "TypeError" and (args := _ARGUMENTS.search(message)) is not None:
        callee = args.group("callee").split(".", 1)[0]
        name = args.group("name") or args.group("callee")
        if frames and caller and caller not in engines.packages and caller not in NOT_A_LIBRARY:
            skew = (
                caller,
                engine_pkg or _first_engine(frames, engines.packages),
                name,
            )  # raised inside another package's code
        elif _HF_CLASS.match(callee) and callee not in _ENGINE_CLASSES:
            skew = ("transformers", engine_pkg or _first_engine(frames, engines.packages), name)
    if skew is None and raised.cls in ("ModuleNotFoundError", "ImportError"):
        skew = _missing_submodule(raised.message, engine_pkg or _first_engine(frames, engines.packages))
    if skew is None or not skew[1] or skew[0] == skew[1]:
        return None
    package, other, name = skew
    return Skew(package, other, name, _version_of(norm.text, package), _version_of(norm.text, other))


def missing_submodule(norm: Normalized, engines: EnginePackages) -> Skew | None:
    """`No module named 'transformers.models.glm4v_moe'` anywhere in the paste (engines log the
    import errors of optional model modules and go on): a package too old or too new for the engine."""
    found = _DOTTED_MISSING.search(norm.text)
    skew = _missing_submodule(found.group(0), engines.detected) if found else None
    if skew is None:
        return None
    package, other, name = skew
    return Skew(package, other, name, _version_of(norm.text, package), _version_of(norm.text, other))


def _missing_submodule(message: str, engine_pkg: str) -> tuple[str, str, str] | None:
    found = _DOTTED_MISSING.search(message)
    if found is None or not engine_pkg:
        return None
    package = found.group("module").split(".", 1)[0]
    if package in NOT_A_LIBRARY or package == engine_pkg:
        return None
    return package, engine_pkg, found.group("module")


def _package_of(frame: str, engine_packages: tuple[str, ...]) -> str:
    """The top-level package a frame's file belongs to (site-packages/<pkg>/ or an engine tree)."""
    found = _SITE.search(frame)
    if found is not None:
        return found.group("pkg")
    for package in engine_packages:
        if f"/{package}/" in frame:
            return package
    return ""


def _first_engine(frames: list[str], engine_packages: tuple[str, ...]) -> str:
    for frame in frames:
        package = _package_of(frame, engine_packages)
        if package in engine_packages:
            return package
    return ""


def _version_of(text: str, package: str) -> str:
    """The version the paste shows for `package` (pip list, pip show, collect_env, a requirement)."""
    names = {package, PIP_NAMES.get(package, package), package.replace("_", "-")}
    for name in sorted(names, key=len, reverse=True):
        found = re.search(rf"(?im)(?<![\w.-]){re.escape(name)}(?![\w-])(?:\s*\(|\s+version)?{_VERSION}", text)
        if found is not None:
            return found.group("version")
    return ""
