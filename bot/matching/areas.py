"""Where in an engine's source tree a crash happened, and which family that area belongs to.

A bare `KeyError` or `AttributeError` says little by itself; the file it was raised in says a lot.
Each engine's knowledge file maps its source tree by directory (`areas:` in the engine header).
This module finds the engine paths a paste shows (traceback frames, C++ frames and paths in
messages, module names in error messages), looks each one up (longest prefix wins), and picks
the one that decides: the deepest frame outside the engine's plumbing, in the first traceback
that has one (a chained traceback prints its root cause first).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.kb.regex import compile_pattern
from bot.kb.schema import AREA_CORE, AREA_MODEL, EngineInfo
from bot.text.normalize import Normalized

Kind = Literal["frame", "module"]

# RE2 (linear time): a 1 MB line of one character must not cost seconds
_PATH = compile_pattern(r"[\w.~+/\\-]{1,300}\.(?:py|pyx|cu|cuh|cpp|cc|c|h|hpp)\b")
_FRAME_FUNC = re.compile(r'^File "[^"]+", line \d+, in ([\w<>.]+)')
_MODULE = compile_pattern(r"\b([a-z_][a-z0-9_]{0,60}(?:\.[A-Za-z_][A-Za-z0-9_]{0,80}){1,12})\b")
MAX_LINE = 4000  # longer lines are read up to here: frames and module names are short
_TRACEBACK = "Traceback (most recent call last)"
# a module named in an error message counts; one in a launch command or an INFO line does not
_ERROR_LINE = re.compile(r"Error|Exception|error|failed|cannot|No module|not supported")


@dataclass(frozen=True, slots=True)
class AreaHit:
    """One engine path in the paste and the area it maps to."""

    engine: str
    path: str  # relative to the engine's tree, e.g. vllm/lora/models.py
    family: str  # a family id, AREA_CORE or AREA_MODEL
    kind: Kind
    line: int  # index of the line in the normalised paste
    block: int  # which traceback (0 = the first); -1 outside any traceback
    function: str = ""  # the frame's function, when a traceback frame names one

    @property
    def model(self) -> str:
        """The model file's name without extension, for an AREA_MODEL hit (e.g. qwen2_vl)."""
        return self.path.rsplit("/", 1)[-1].split(".", 1)[0] if self.family == AREA_MODEL else ""


class AreaMap:
    """One engine's tree: path prefixes -> area, plus the anchors that start a path inside it."""

    def __init__(self, engine: str, areas: Mapping[str, str]):
        self.engine = engine
        self.areas = dict(areas)
        roots = {p.split("/", 1)[0] + "/" for p in areas}
        # longer anchors first: "cpp/tensorrt_llm/" must win over "tensorrt_llm/"
        anchors = {p for p in areas if p.endswith("/") and p.count("/") <= 2 and areas[p] == AREA_CORE} | roots
        self.anchors = tuple(sorted(anchors, key=len, reverse=True))
        self._by_length = sorted(areas, key=len, reverse=True)

    def relative(self, path: str) -> str | None:
        """The part of `path` inside this engine's tree, from its last anchor; None if outside."""
        path = path.replace("\\", "/")
        best: tuple[int, str] | None = None
        for anchor in self.anchors:
            at = path.rfind(anchor)
            while at > 0 and path[at - 1] not in "/\"' ":
                at = path.rfind(anchor, 0, at)
            if at >= 0 and (best is None or at < best[0] or (at == best[0] and len(anchor) > len(best[1]))):
                best = (at, anchor)
        return path[best[0]:] if best else None

    def lookup(self, relative: str) -> str | None:
        """The area of a path inside the tree: the longest prefix that covers it."""
        for prefix in self._by_length:
            if relative == prefix or (prefix.endswith("/") and relative.startswith(prefix)):
                return self.areas[prefix]
        return None


class Areas:
    """Every engine's area map, applied to one paste."""

    def __init__(self, engines: Iterable[EngineInfo]):
        self.maps = [AreaMap(info.id, info.areas) for info in engines if info.areas]
        # a line can name an engine path only if it holds one of the trees' root names
        self._roots = tuple(sorted({a.rstrip("/").rsplit("/", 1)[-1] for m in self.maps for a in m.anchors}))

    def locate(self, norm: Normalized) -> list[AreaHit]:
        """Every engine path in the paste (frames, paths in messages, module names, log sources)."""
        if not self.maps:
            return []
        hits: list[AreaHit] = []
        block = -1
        for line in norm.lines:
            text = line.text[:MAX_LINE]
            if _TRACEBACK in text:
                block += 1
            if not any(root in text for root in self._roots):
                continue
            function = ""
            if line.is_frame:
                found = _FRAME_FUNC.match(text)
                function = found.group(1) if found else ""
            for path in _PATH.finditer(text):
                hits.extend(self._hit(path.group(0), "frame", line.index, block, function))
            if not line.is_frame and _ERROR_LINE.search(text):
                for module in _MODULE.finditer(text):
                    hits.extend(self._hit(module.group(1).replace(".", "/"), "module", line.index, block, "",
                                          module=True))
        return hits

    def _hit(self, path: str, kind: Kind, line: int, block: int, function: str,
             module: bool = False) -> list[AreaHit]:
        out = []
        for area_map in self.maps:
            relative = self._module_path(area_map, path) if module else area_map.relative(path)
            if relative is None:
                continue
            family = area_map.lookup(relative)
            if family is not None:
                out.append(AreaHit(area_map.engine, relative, family, kind, line, block, function))
        return out

    @staticmethod
    def _module_path(area_map: AreaMap, dotted: str) -> str | None:
        """`vllm/lora/utils/parse_name` (a dotted name, dots made slashes) -> the module's file or
        package: a dotted name ends in a class or function, so drop parts until one is known."""
        parts = dotted.split("/")
        if parts[0] + "/" not in area_map.anchors:
            return None
        for end in range(len(parts), 0, -1):
            stem = "/".join(parts[:end])
            for candidate in (stem + ".py", stem + "/"):
                if candidate in area_map.areas:
                    return candidate
        return dotted


def deciding(hits: list[AreaHit]) -> AreaHit | None:
    """The hit that names the area: the deepest frame outside the plumbing, in the first
    traceback that has one; else a module named in an error message. (The bare file names of log
    prefixes are too ambiguous for the map: `config.py` is in every tree.)"""
    # frames "in <module>" are an import chain: the import failed, nothing ran in that area yet
    frames = [h for h in hits if h.kind == "frame" and h.family != AREA_CORE and h.function != "<module>"]
    if frames:
        first_block = min(h.block for h in frames)
        return max((h for h in frames if h.block == first_block), key=lambda h: h.line)
    named = [h for h in hits if h.kind == "module" and h.family != AREA_CORE]
    return named[-1] if named else None
