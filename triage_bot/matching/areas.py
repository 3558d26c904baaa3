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

from triage_bot.kb.regex import compile_pattern
from triage_bot.kb.schema import AREA_CORE, AREA_MODEL, EngineInfo
from triage_bot.text.normalize import Normalized

Kind = Literal["frame", "module"]

# a source file's extension; its path is read backwards from there (linear in the paste: a 1 MB
# line of one character must not cost seconds, as a backtracking path regex would)
_EXTENSION = re.compile(r"\.(?:py|pyx|cu|cuh|cpp|cc|c|h|hpp)\b")
_PATH_ENDS = " \t\n\"'`(<[{=,:;|>"  # what stands before a path in frames, logs and messages
MAX_PATH = 300
_FRAME_FUNC = re.compile(r'^File "(?P<path>[^"]{1,500})", line \d+(?:, in (?P<function>[\w<>.]+))?')
_MODULE = compile_pattern(r"\b([a-z_][a-z0-9_]{0,60}(?:\.[A-Za-z_][A-Za-z0-9_]{0,80}){1,12})\b")
MAX_LINE = 4000  # longer lines are read up to here: frames and module names are short
_TRACEBACK = "Traceback (most recent call last)"
# a module named in an error message counts; one in a launch command or an INFO line does not
_ERROR_LINE = re.compile(r"Error|Exception|error|failed|cannot|No module|not supported")
_MISSING = re.compile(r"No module named ['\"`]?([\w.]+)")


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
        anchors = {
            p for p in areas if p.endswith("/") and p.count("/") <= 2 and areas[p] == AREA_CORE
        } | roots
        self.anchors = tuple(sorted(anchors, key=len, reverse=True))
        self.roots = tuple(sorted({a.rstrip("/").rsplit("/", 1)[-1] for a in self.anchors}))

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
        return path[best[0] :] if best else None

    def lookup(self, relative: str) -> str | None:
        """The area of a path inside the tree: the longest prefix that covers it (the path
        itself, then each parent directory, one dictionary look-up each)."""
        found = self.areas.get(relative)
        if found is not None:
            return found
        end = len(relative.rstrip("/"))
        while (end := relative.rfind("/", 0, end)) > 0:
            found = self.areas.get(relative[: end + 1])
            if found is not None:
                return found
        return None


class Areas:
    """Every engine's area map, applied to one paste."""

    def __init__(self, engines: Iterable[EngineInfo]):
        self.maps = [AreaMap(info.id, info.areas) for info in engines if info.areas]
        # a line can name an engine path only if it holds one of the trees' root names
        roots = sorted({root for m in self.maps for root in m.roots}, key=len, reverse=True)
        self._root_re = re.compile("|".join(map(re.escape, roots))) if roots else None

    def locate(self, norm: Normalized) -> list[AreaHit]:
        """Every engine path in the paste outside the plumbing (frames, paths in messages, module
        names in errors), in paste order."""
        if self._root_re is None:
            return []
        # the lines that name a tree's root at all: one pass over the whole paste
        named = {norm.line_at(m.start()).number for m in self._root_re.finditer(norm.text)}
        if not named:
            return []
        found: list[tuple[int, int, str, bool, str]] = []  # (line, traceback, path, dotted module?, function)
        block = -1  # which traceback a line belongs to (-1 before the first)
        for line in norm.lines:
            text = line.text
            if _TRACEBACK in text:
                block += 1
            if line.number not in named:
                continue
            if line.is_frame:
                frame = _FRAME_FUNC.match(text)
                if frame is not None:
                    found.append(
                        (line.number, block, frame.group("path"), False, frame.group("function") or "")
                    )
                continue
            head = text[:MAX_LINE]
            found += [
                (line.number, block, path, False, "") for path in _paths_in(head)
            ]  # C++ frames, messages
            if _ERROR_LINE.search(head):
                # the module an import cannot find is what is missing, not where something broke:
                # an install or a version that lacks it (exceptions.py), never that module's area
                missing = {m.group(1) for m in _MISSING.finditer(head)}
                found += [
                    (line.number, block, m.group(1).replace(".", "/"), True, "")
                    for m in _MODULE.finditer(head)
                    if m.group(1) not in missing
                ]
        hits: list[AreaHit] = []
        seen: dict[tuple[str, bool], list[tuple[str, str, str]]] = {}  # a traceback repeats its paths
        for index, in_block, path, module, function in found:
            key = (path, module)
            if key not in seen:
                seen[key] = [r for r in self._resolve(path, module) if r[2] != AREA_CORE]
            kind: Kind = "module" if module else "frame"
            hits.extend(
                AreaHit(engine, relative, family, kind, index, in_block, function)
                for engine, relative, family in seen[key]
            )
        return hits

    def frame_engines(self, norm: Normalized) -> set[str]:
        """The engines whose source tree holds a traceback frame: the code that was running when
        it raised, whatever else the paste names (another engine's logs, a pip list)."""
        engines: set[str] = set()
        for line in norm.lines:
            frame = _FRAME_FUNC.match(line.text) if line.is_frame else None
            if frame is None:
                continue
            path = frame.group("path")
            engines.update(
                m.engine
                for m in self.maps
                if m.engine not in engines
                and any(root in path for root in m.roots)
                and m.relative(path) is not None
            )
        return engines

    def _resolve(self, path: str, module: bool) -> list[tuple[str, str, str]]:
        """(engine, path inside its tree, area) for each engine whose tree holds `path`."""
        out = []
        for area_map in self.maps:
            if not any(root in path for root in area_map.roots):
                continue  # another engine's tree
            relative = self._module_path(area_map, path) if module else area_map.relative(path)
            family = area_map.lookup(relative) if relative is not None else None
            if relative is not None and family is not None:
                out.append((area_map.engine, relative, family))
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


def _paths_in(text: str) -> list[str]:
    """Source paths in a line, each read backwards from its extension (linear in the line)."""
    out = []
    for match in _EXTENSION.finditer(text):
        end = match.end()
        start = end - len(match.group(0))
        floor = max(0, start - MAX_PATH)
        start = max(text.rfind(c, floor, start) for c in _PATH_ENDS) + 1 or floor
        out.append(text[start:end])
    return out


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
